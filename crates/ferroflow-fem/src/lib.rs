//! Edge-based P1 finite elements on tetrahedra (seed 001): every operator the fractional-step
//! solver needs is integrated once per element and stored per directed edge ([`edges`]), so
//! that the solver's loops run over each node's row and only gather (no atomics, no colouring);
//! the pressure equation is solved by conjugate gradients in the three-term form with one
//! fused reduction per iteration ([`cg`]). Sums run in a fixed order: results do not depend
//! on the thread count. Everything runs in the working precision, f64 or f32
//! (`ferroflow_core::Real`); the operators are assembled in f64 and rounded once.
//!
//! - [`edges`]: [`EdgeOperators`], the consistent mass, the 3 × 3 Laplacian block, ∇_IJ and
//!   G_IJ per off-diagonal entry of the node graph's rows, the lumped mass and the smallest
//!   height per node; the edge loops built on them.
//! - [`cg`]: a symmetric matrix of the node graph's pattern with its diagonal ([`cg::Matrix`])
//!   and [`cg::solve`].
//! - [`fractional`]: the fractional-step solver (Runge–Kutta momentum, CG pressure increment,
//!   velocity correction) with split orthogonal-subscale stabilisation.
//! - [`ethier_steinman`]: the exact 3D unsteady solution and the grid-convergence study.
//! - [`lid_cube`]: the lid-driven cube marched to steady state, its centreline profiles.
//! - [`dfg`]: the DFG 3D-1Z channel around a cylinder, its drag and lift coefficients.
//! - [`sum`]: sums in a fixed order.
//! - [`cuda`] (feature `cuda`): the solver with its whole state on a GPU, bit for bit the CPU's.
pub mod cg;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod dfg;
pub mod edges;
pub mod ethier_steinman;
pub mod fractional;
pub mod lid_cube;
pub mod sum;

pub use edges::EdgeOperators;
