//! The explicit steady iteration on NVIDIA GPUs (feature `cuda`, on by default), on the runtime
//! of `ferroflow-cuda`. [`CudaSolver`] holds the mesh, the state and every buffer of the
//! iteration on the device and takes [`crate::time::steady`]'s steps: primitive states and
//! ghosts, the waves' local time steps, then per stage the least-squares gradients, the face
//! loop (limited MUSCL states, Roe's flux; the viscous flux in a second face kernel over the
//! stored fluxes, as on the CPU), the per-cell gather and the stage update. Its kernels
//! (`kernels/fv_step.cu`, formulas in `kernels/fv.cuh`) are `__device__` twins of
//! [`crate::gas`], [`crate::flux`], [`crate::face`], [`crate::boundary`],
//! [`crate::gradients`], [`crate::viscous`] and [`crate::residual`], with the same operations
//! in the same order, compiled in f64 without fused multiply-adds and with IEEE division and
//! square root:
//!
//! - the face loop stores each face's flux and each cell gathers its faces in ascending
//!   order, as the CPU does ([`FaceLoop::Stored`]): the state after any number of iterations
//!   is the CPU's bit for bit. [`FaceLoop::Atomic`] adds each flux to its two cells with
//!   atomics instead, for the speed comparison (inviscid only); its sums' order is the
//!   hardware's.
//! - Two exceptions: for a gas other than air (γ ≠ 1.4), the far-field and inflow ghosts'
//!   isentropic powers are the device's `pow`, within 2 ulp of the CPU's libm, so such cases
//!   agree to rounding, not bitwise (air's are multiplications, a square root and
//!   [`crate::gas::seventh_root`], the same operations on both); and the residual's norms
//!   are summed per thread block in a fixed tree order, then the blocks' sums in a fixed
//!   order (`ferroflow_cuda::ReduceKernel`), while the CPU adds the cells in turn: the norms
//!   agree to rounding (the stopping test may therefore, at the threshold itself, fall one
//!   iteration apart).
//!
//! [`crate::Boundary::Exact`] (a host function) stays on the CPU: [`CudaSolver::new`] refuses
//! it.
mod args;
pub mod bench;
mod solver;

pub use solver::{CudaOptions, CudaSolver, FaceLoop};

use ferroflow_cuda::compile::PRELUDE;
use ferroflow_cuda::{reduce_build, Build, KernelSource, Scalar};

/// Threads per block of `fv_norm` (its block sums).
const NORM_THREADS: u32 = 256;

/// `kernels/fv_step.cu`: the iteration's loops.
const STEP: KernelSource = KernelSource {
    name: "fv_step.cu",
    text: include_str!("../../kernels/fv_step.cu"),
    headers: &[PRELUDE, ("fv.cuh", include_str!("../../kernels/fv.cuh"))],
};

/// The build of `fv_step.cu`.
fn step_build() -> Build {
    Build::new(STEP, Scalar::F64).define("FV_THREADS", NORM_THREADS)
}

/// Every build the solver compiles (CI compiles them all).
pub fn every_build() -> Vec<Build> {
    vec![step_build(), reduce_build()]
}
