//! ferroflow-ac: Chorin's artificial-compressibility scheme on structured grids. It defines
//! the scheme's [`Problem`] (grid, fluid, numerics, walls, optional energy equation), the
//! per-run constants every backend starts from ([`Coefficients`]), and how one block of a
//! decomposed grid is set up and driven ([`blocks`]). The backends that iterate it (CPU,
//! CUDA) and the decomposed drivers build on these types.
#![deny(missing_docs)]

pub mod blocks;
mod coefficients;
mod problem;

pub use blocks::BlockBackend;
pub use coefficients::Coefficients;
pub use problem::{Energy, Numerics, Physics, Problem, SideBc};
