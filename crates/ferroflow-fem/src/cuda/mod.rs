//! The fractional-step solver on NVIDIA GPUs (feature `cuda`, on by default), on the runtime of
//! `ferroflow-cuda`. [`CudaFractional`] holds the whole state on the device (the edge
//! operators, velocity, pressure, the Runge–Kutta stages, the pressure matrix and the
//! conjugate-gradient vectors) and takes the CPU's steps: its kernels (`kernels/*.cu` of this
//! crate) are `__device__` twins of [`crate::fractional`], [`crate::cg`] and [`crate::sum`],
//! with the same operations in the same order, compiled in the run's precision (`real_t`, f64
//! or f32, [`DeviceReal`]) without fused multiply-adds, with IEEE division and square root
//! and with subnormals kept. A GPU step therefore gives the CPU's state bit for bit:
//!
//! - edge loops gather over each node's row (one thread per node, no atomics), as the CPU's;
//! - every sum (the CG's dot products, the level's mean of f, the divergence and continuity
//!   residual) is the fixed
//!   order of [`crate::sum`]: blocks of [`crate::sum::BLOCK`] nodes over
//!   [`crate::sum::LANES`] lanes and a tree, which is a thread block's natural order, the
//!   blocks' sums then the same way by the last block to finish;
//! - every matrix–vector variant ([`SpmvShape`]) adds a row's terms in the CPU's order.
//!
//! Only what a step must return crosses to the host: the boundary velocities of its fixed
//! nodes go up (computed on the host by the caller's function, as the CPU's), the solve's
//! scalars, the divergence and the continuity residual come back.
//!
//! The pressure solve runs without a host round trip per iteration: the scalar decisions of
//! the three-term recurrence (γ, ρ, convergence, the iteration limit) are taken on the device
//! by the last block of the fused reduction, and once a solve has ended every CG kernel returns
//! at once. The host replays a CUDA graph of [`CudaOptions::graph_iterations`] iterations and
//! reads the solve's state after each replay, a fixed check cadence that costs at most that
//! many empty iterations (three empty launches each) per solve and changes no result.
//!
//! The matrix–vector product's variant is chosen at the first solve by timing every candidate
//! on the actual pressure matrix ([`spmv_candidates`]), and the choice is cached on disk as the
//! structured solver's launch shapes are (`FERROFLOW_CUDA_CACHE_DIR`);
//! [`CudaFractional::tuning`] gives the table.
mod cg;
mod cusparse;
mod spmv;
mod step;

pub use cg::{CgState, DEFAULT_GRAPH_ITERATIONS};
pub use spmv::{spmv_candidates, SpmvShape, DEFAULT_SPMV};
pub use step::{CudaFractional, CudaOptions};

/// How the matrix–vector product's variant is chosen.
pub type TuneMode = ferroflow_cuda::TuneMode<SpmvShape>;
/// How it was chosen, with the timing table.
pub type TuneReport = ferroflow_cuda::TuneReport<SpmvShape>;

use crate::fractional::PENALTY;
use ferroflow_core::Real;
use ferroflow_cuda::compile::{Header, PRELUDE};
use ferroflow_cuda::cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use ferroflow_cuda::{Build, KernelSource, Scalar};

/// A working precision the kernels are built for: f64 or f32.
pub trait DeviceReal: Real + DeviceRepr + ValidAsZeroBits {
    /// The kernels' `real_t`.
    const SCALAR: Scalar;
}

impl DeviceReal for f64 {
    const SCALAR: Scalar = Scalar::F64;
}

impl DeviceReal for f32 {
    const SCALAR: Scalar = Scalar::F32;
}

/// `source` in `precision`, rounding as the CPU does: no fused multiply-adds, IEEE division
/// and square root, subnormals kept (the finite elements' CPU threads do not flush them) in
/// f32 too.
fn exact(source: KernelSource, precision: Scalar) -> Build {
    Build {
        exact_f32: true,
        subnormals: true,
        ..Build::new(source, precision)
    }
}

/// The headers of the `.cu` files.
const HEADERS: &[Header] = &[PRELUDE, ("fem.cuh", include_str!("../../kernels/fem.cuh"))];

/// `kernels/fem_step.cu`: the step's node loops.
const STEP: KernelSource = KernelSource {
    name: "fem_step.cu",
    text: include_str!("../../kernels/fem_step.cu"),
    headers: HEADERS,
};

/// `kernels/fem_cg.cu`: the pressure solve's loop.
const CG: KernelSource = KernelSource {
    name: "fem_cg.cu",
    text: include_str!("../../kernels/fem_cg.cu"),
    headers: HEADERS,
};

/// `kernels/fem_spmv.cu`: the matrix–vector product's variants.
const SPMV: KernelSource = KernelSource {
    name: "fem_spmv.cu",
    text: include_str!("../../kernels/fem_spmv.cu"),
    headers: HEADERS,
};

/// The build of `fem_step.cu` in `precision`.
fn step_build(precision: Scalar) -> Build {
    exact(STEP, precision).define("FIXED_PRESSURE", format!("{PENALTY:e}"))
}

/// The build of `fem_cg.cu` in `precision`.
fn cg_build(precision: Scalar) -> Build {
    exact(CG, precision)
}

/// Every build the solver may compile, in both precisions: the step's, the solve's and each
/// matrix–vector candidate's (CI compiles them all).
pub fn every_build() -> Vec<Build> {
    let mut builds = Vec::new();
    for precision in Scalar::ALL {
        builds.extend([step_build(precision), cg_build(precision)]);
        builds.extend(spmv_candidates().into_iter().map(|s| s.build(precision)));
    }
    builds
}
