//! ferroflow-ac: Chorin's artificial-compressibility scheme on structured grids. It defines
//! the scheme's [`Problem`] (grid, fluid, numerics, walls, optional energy equation), the
//! per-run constants every backend starts from ([`Coefficients`]), what the scheme can
//! resolve and which states are physical ([`Unresolvable`], [`OutOfBounds`]), the iteration
//! written once over the devices' kernels ([`iteration`]), the CPU backend ([`cpu`]), and how
//! the blocks of a decomposed grid are set up ([`blocks`]) and driven ([`Decomposed`]), and,
//! with the feature `cuda`, the CUDA backend (`cuda`: kernels and host side, on the runtime of
//! `ferroflow-cuda`), which implements [`AcKernels`] too.
#![deny(missing_docs)]

pub mod blocks;
mod coefficients;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
mod decomposed;
pub mod implicit;
pub mod iteration;
mod limits;
pub mod multigrid;
pub mod pieces;
mod problem;

pub use blocks::BlockBackend;
pub use coefficients::Coefficients;
pub use decomposed::Decomposed;
pub use iteration::AcKernels;
pub use limits::{OutOfBounds, Unresolvable, BOUND_MARGIN};
pub use problem::{
    Convection, CycleShape, Differences, Energy, Implicit, InitialRule, Method, Multigrid,
    Numerics, Physics, Problem, Relax, Relaxation, SideBc,
};
