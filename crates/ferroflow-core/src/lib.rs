//! ferroflow-core: the vocabulary shared by every ferroflow crate.
//!
//! - [`Real`]: the floating-point type of a run (`f32` or `f64`), chosen per run.
//! - [`Layout`]: how a block's nodes and ghost layers map to memory (structure of arrays,
//!   index `i` fastest, padded leading dimension).
//! - [`WallFace`]: which nodes of each side the boundary fill writes, for every backend.
//! - [`Fields`]: host copies of a block's variables.
//! - [`Side`] and [`decomposition`]: the sides of a structured block, and a grid cut into
//!   blocks with the faces they exchange.
//! - [`Solver`], [`Snapshot`] and [`Residuals`]: what a solver offers to the driver, the
//!   checkpoints and the writers (values at points, no storage details); a structured-block
//!   [`Backend`] (host copies as [`Fields`]) is a [`Solver`].
//! - [`random`]: seeded random numbers for generated meshes and fuzzing.
//!
//! No scheme lives here: the artificial-compressibility problem is `ferroflow-ac`'s.
#![deny(missing_docs)]

mod backend;
pub mod decomposition;
mod error;
mod fields;
mod layout;
pub mod nodes;
pub mod random;
mod real;
mod side;
mod snapshot;
mod wall;

pub use backend::{Backend, Residuals};
pub use error::{BackendError, ProblemError};
pub use fields::Fields;
pub use layout::{Layout, GHOST, MIN_NODES};
pub use nodes::NodeValues;
pub use real::Real;
pub use side::Side;
pub use snapshot::{Points, Snapshot, Solver};
pub use wall::WallFace;
