//! ferroflow-core: the vocabulary shared by every ferroflow crate.
//!
//! - [`Real`]: the floating-point type of a run (`f32` or `f64`), chosen per run.
//! - [`Layout`]: how a block's nodes and ghost layers map to memory (structure of arrays,
//!   index `i` fastest, padded leading dimension).
//! - [`WallFace`]: which nodes of each side the boundary fill writes, for every backend.
//! - [`Fields`]: host copies of a block's variables.
//! - [`Side`] and [`decomposition`]: the sides of a structured block, and a grid cut into
//!   blocks with the faces they exchange.
//! - [`Backend`] and [`Residuals`]: what a solver on a device offers to the driver.
//!
//! No scheme lives here: the artificial-compressibility problem is `ferroflow-ac`'s.
#![deny(missing_docs)]

mod backend;
pub mod decomposition;
mod error;
mod fields;
mod layout;
mod real;
mod side;
mod wall;

pub use backend::{Backend, Residuals};
pub use error::{BackendError, ProblemError};
pub use fields::Fields;
pub use layout::{Layout, GHOST, MIN_NODES};
pub use real::Real;
pub use side::Side;
pub use wall::WallFace;
