//! Fixed-order sums on the device: kernels whose thread blocks each write one partial sum per
//! row (an equation's residual, say) leave the final sums to [`ReduceKernel`], which adds each
//! row's partial sums in an order that does not depend on timing.
use crate::compile::{Build, KernelSource, Scalar, PRELUDE};
use crate::device::{Check, Device};
use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg};
use ferroflow_core::BackendError;

/// Threads per block of `reduce_sums`.
const REDUCE_THREADS: u32 = 256;

/// `kernels/reduce.cu`.
const REDUCE: KernelSource = KernelSource {
    name: "reduce.cu",
    text: include_str!("../kernels/reduce.cu"),
    headers: &[PRELUDE],
};

/// The build of `reduce_sums` (f64 sums whatever the caller's precision).
pub fn reduce_build() -> Build {
    Build::new(REDUCE, Scalar::F64).define("REDUCE_THREADS", REDUCE_THREADS)
}

/// The arguments of `reduce_sums` (`ReduceParams` in kernels/reduce.cu, field for field).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct ReduceParams {
    partials: CUdeviceptr,
    count: i64,
    sums: CUdeviceptr,
}

// SAFETY: a C struct of device pointers and an integer.
unsafe impl DeviceRepr for ReduceParams {}

/// `reduce_sums`: one thread block per row.
pub struct ReduceKernel {
    function: CudaFunction,
}

impl ReduceKernel {
    /// Compiles (through the cubin cache) and loads the kernel on `device`.
    pub fn new(device: &Device) -> Result<ReduceKernel, BackendError> {
        Ok(ReduceKernel {
            function: device.load(device.compile(&reduce_build())?, "reduce_sums")?,
        })
    }

    /// Sums `count` f64 partial sums per row from `partials` (row after row) into
    /// `sums[row]`, for `rows` rows.
    pub fn launch(
        &self,
        stream: &CudaStream,
        partials: CUdeviceptr,
        count: i64,
        sums: CUdeviceptr,
        rows: u32,
    ) -> Result<(), BackendError> {
        let config = LaunchConfig {
            grid_dim: (rows, 1, 1),
            block_dim: (REDUCE_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = stream.launch_builder(&self.function);
        let params = ReduceParams {
            partials,
            count,
            sums,
        };
        launch.arg(&params);
        // SAFETY: the parameters are the kernel's; `partials` holds rows × count values and
        // `sums` rows values.
        unsafe { launch.launch(config) }.check("launching reduce_sums")?;
        Ok(())
    }
}
