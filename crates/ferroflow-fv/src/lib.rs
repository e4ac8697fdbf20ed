//! Cell-centred finite volumes for compressible inviscid and laminar viscous flow on mixed
//! unstructured meshes (tetrahedra, pyramids, prisms, hexahedra; seed 004): Roe's flux with
//! an entropy fix, MUSCL extrapolation from weighted least-squares gradients with van
//! Albada's limiter, viscous fluxes from the cells' gradients corrected along the
//! cell-to-cell direction, boundary conditions by ghost states, explicit Runge–Kutta or, for
//! steady flow, an implicit Newton–Jacobi iteration. The face loop stores each face's flux
//! and each cell gathers its faces in a fixed order: results are bitwise the same on any
//! number of threads. The integrators evaluate the residual through seed 004's optimised
//! loops ([`Solver::loops`], [`fast::Options`]), by default a variant bitwise the reference
//! loops of [`Solver::residual`]; [`Solver::renumbered`] orders the cells for locality.
//!
//! - [`gas`]: the ideal gas, conservative and primitive variables, the inviscid flux.
//! - [`geometry`]: [`Geometry`], faces and cells in flat arrays, ghosts numbered after cells.
//! - [`gradients`]: weighted least-squares gradients, coefficients computed once.
//! - [`flux`]: Roe's flux with Harten's entropy fix; the limited MUSCL extrapolation.
//! - [`lanes`]: one number or four AVX2 lanes, so that each kernel is written once.
//! - [`face`]: the face kernel (both sides' extrapolation and the flux) over lanes.
//! - [`layout`]: cell data as structure of arrays or as padded 64-byte records.
//! - [`fast`]: the residual's loops with seed 004's optimisations each switchable, which the
//!   integrators run.
//! - [`boundary`]: [`Boundary`] and the ghost state of each kind.
//! - [`residual`]: [`Solver`], the reference face loop and cell gather, the choice of loops.
//! - [`cuda`]: the explicit steady iteration on NVIDIA GPUs, bitwise the CPU's (feature
//!   `cuda`).
//! - [`viscous`]: [`Viscous`], the stress and heat flux through a face (one face or four).
//! - [`time`]: SSP-RK3 with a global step, multistage RK with local steps, steady iterations
//!   measured between their halves.
//! - [`implicit`]: the Newton–Jacobi iteration for steady flow.
//! - [`riemann`]: the exact Riemann solver, the shock tube's reference.
//! - [`bench`]: throughput of the face and cell loops, their bytes and operations.
//! - [`ablation`]: seed 004's optimisations timed one step at a time, loops and integrator.
//! - [`sod`]: Sod's shock tube on slabs of hexahedra, prisms and tetrahedra.
//! - [`vortex`]: the isentropic vortex, errors and observed orders.
//! - [`bump`]: subsonic flow over a bump in a channel, entropy errors and iterations.
//! - [`flat_plate`]: the laminar boundary layer on a flat plate against Blasius.
pub mod ablation;
pub mod bench;
pub mod boundary;
pub mod bump;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod face;
pub mod fast;
pub mod flat_plate;
pub mod flux;
pub mod gas;
pub mod geometry;
pub mod gradients;
pub mod implicit;
pub mod lanes;
pub mod layout;
pub mod residual;
pub mod riemann;
pub mod sod;
pub mod time;
pub mod viscous;
pub mod vortex;

pub use boundary::Boundary;
pub use flux::Limiter;
pub use gas::Gas;
pub use geometry::Geometry;
pub use residual::Solver;
pub use viscous::{Viscosity, Viscous};
