//! ferroflow-core: the vocabulary shared by every ferroflow crate.
//!
//! - [`Real`]: the floating-point type of a run (`f32` or `f64`), chosen per run.
//! - [`Layout`]: how a block's nodes and ghost layers map to memory (structure of arrays,
//!   index `i` fastest, padded leading dimension).
//! - [`WallFace`]: which nodes of each side the boundary fill writes, for every backend.
//! - [`Fields`]: host copies of a block's variables.
//! - [`Problem`]: everything a backend needs to iterate (grid, physics, numerics, boundaries).
//! - [`Backend`]: what a compute backend (CPU, CUDA) offers to the driver.
#![deny(missing_docs)]

mod backend;
mod coefficients;
pub mod decomposition;
mod error;
mod fields;
mod layout;
mod problem;
mod real;
mod wall;

pub use backend::{Backend, BlockBackend, Residuals};
pub use coefficients::Coefficients;
pub use error::{BackendError, ProblemError};
pub use fields::Fields;
pub use layout::{Layout, GHOST};
pub use problem::{Energy, Numerics, Physics, Problem, Side, SideBc, MIN_NODES};
pub use real::Real;
pub use wall::WallFace;
