//! The memory-bandwidth reference of the roofline: a device-to-device copy with the
//! grid-stride kernel of kernels/copy.cu.
use crate::compile::{Build, KernelSource, Scalar, PRELUDE};
use crate::device::{median, Check, Device, Timer};
use cudarc::driver::{LaunchConfig, PushKernelArg};
use ferroflow_core::BackendError;

/// `kernels/copy.cu`.
const COPY: KernelSource = KernelSource {
    name: "copy.cu",
    text: include_str!("../kernels/copy.cu"),
    headers: &[PRELUDE],
};

/// The build of `copy_real` in `precision`.
pub fn copy_build(precision: Scalar) -> Build {
    Build::new(COPY, precision)
}

/// Blocks per multiprocessor of the copy: enough to hide latency; the loop strides over the
/// rest.
const BLOCKS_PER_SM: u32 = 8;
/// Threads per block of the copy.
const THREADS: u32 = 256;

/// Copy bandwidth of device `ordinal` in bytes per second, counting bytes read plus bytes
/// written: median of `repeats` timed copies (after a warm-up) between two f64 arrays of
/// `bytes` bytes each. `ferroflow bench` divides the solver's bytes per node into it for the
/// roofline; 1 GiB arrays and 20 repeats take well under a second on an H100.
pub fn copy_bandwidth(ordinal: usize, bytes: usize, repeats: usize) -> Result<f64, BackendError> {
    let device = Device::open(ordinal)?;
    let n = bytes / std::mem::size_of::<f64>();
    let total = 2 * n * std::mem::size_of::<f64>();
    device.ensure_free(total, "two copy buffers")?;
    let function = device.load(device.compile(&copy_build(Scalar::F64))?, "copy_real")?;
    let stream = &device.stream;
    let src = stream
        .alloc_zeros::<f64>(n)
        .check("allocating copy buffers")?;
    let mut dst = stream
        .alloc_zeros::<f64>(n)
        .check("allocating copy buffers")?;
    let count = n as i64;
    let config = LaunchConfig {
        grid_dim: (device.multiprocessors * BLOCKS_PER_SM, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    let timer = Timer::new(&device)?;
    let mut copy = || -> Result<(), BackendError> {
        let mut launch = stream.launch_builder(&function);
        launch.arg(&src).arg(&mut dst).arg(&count);
        // SAFETY: the arguments match copy_real's parameters; both arrays hold `count` values.
        unsafe { launch.launch(config) }.check("launching copy_real")?;
        Ok(())
    };
    timer.seconds(stream, &mut copy)?;
    let times = (0..repeats.max(1))
        .map(|_| timer.seconds(stream, &mut copy))
        .collect::<Result<Vec<f64>, _>>()?;
    Ok(total as f64 / median(times))
}
