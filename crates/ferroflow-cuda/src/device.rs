//! Opening a device: library checks first (cudarc panics on a missing library), then the
//! context, the one stream all work runs on, device facts, free-memory checks, and the
//! conversion of CUDA errors into [`BackendError`].
use crate::cache;
use crate::compile::{self, Build, NO_NVRTC};
use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaSlice, CudaStream, DevicePtr, DriverError,
    LaunchConfig,
};
use cudarc::nvrtc::Ptx;
use ferroflow_core::BackendError;
use std::sync::Arc;

const NO_DRIVER: &str = "no CUDA driver: libcuda.so is not on the loader path";

/// Bytes per GiB, for messages.
pub const GIB: f64 = (1u64 << 30) as f64;

/// Checks a CUDA result, naming the operation that failed.
pub trait Check<T> {
    /// The value, or [`BackendError::Driver`] saying what was being done.
    fn check(self, what: &str) -> Result<T, BackendError>;
}

impl<T> Check<T> for Result<T, DriverError> {
    fn check(self, what: &str) -> Result<T, BackendError> {
        self.map_err(|e| BackendError::Driver {
            backend: "cuda",
            op: what.into(),
            message: e.to_string(),
        })
    }
}

/// The raw device address of `slice`, for the pointer structs the kernels take and the raw
/// driver copies.
pub fn address<T>(slice: &CudaSlice<T>, stream: &CudaStream) -> sys::CUdeviceptr {
    // Event tracking is off (Device::open), so the returned guard records nothing.
    slice.device_ptr(stream).0
}

fn unavailable(reason: impl Into<String>) -> BackendError {
    BackendError::Unavailable {
        backend: "cuda",
        reason: reason.into(),
    }
}

/// A device with its context and the single stream every kernel and copy of a backend runs
/// on, in order. A clone shares both: backends that hand arrays to each other (the levels of a
/// multigrid cycle) run on one stream, in order, without waiting for each other.
#[derive(Clone)]
pub struct Device {
    /// The context.
    pub ctx: Arc<CudaContext>,
    /// The stream.
    pub stream: Arc<CudaStream>,
    /// The device's name, as the driver gives it.
    pub name: String,
    /// Compute capability as `(major, minor)`.
    pub capability: (i32, i32),
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
}

/// The devices the driver sees (at least one), or exactly why there are none to use: no
/// driver, no NVRTC, no device.
pub fn device_count() -> Result<usize, BackendError> {
    // SAFETY: only tries to open the library by its names; nothing is called in it.
    if !unsafe { sys::is_culib_present() } {
        return Err(unavailable(NO_DRIVER));
    }
    if !compile::nvrtc_available() {
        return Err(unavailable(NO_NVRTC));
    }
    let count = CudaContext::device_count()
        .map_err(|e| unavailable(format!("no CUDA device: the driver reports {e}")))?;
    if count <= 0 {
        return Err(unavailable("no CUDA device: the driver sees none"));
    }
    Ok(count as usize)
}

impl Device {
    /// Opens device `ordinal`, or says exactly why it cannot: no driver, no NVRTC, no device.
    pub fn open(ordinal: usize) -> Result<Device, BackendError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(unavailable(format!(
                "no CUDA device {ordinal}: the driver sees {count}"
            )));
        }
        let ctx = CudaContext::new(ordinal).check("creating a CUDA context")?;
        // SAFETY: every slice of this context is used on the one stream created below, in
        // order, so cudarc's cross-stream events are not needed (they would also be recorded
        // into captured graphs).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().check("creating a stream")?;
        let name = ctx.name().check("reading the device name")?;
        let capability = ctx
            .compute_capability()
            .check("reading the compute capability")?;
        let multiprocessors = ctx
            .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .check("reading the multiprocessor count")? as u32;
        Ok(Device {
            ctx,
            stream,
            name,
            capability,
            multiprocessors,
        })
    }

    /// NVRTC architecture of the device, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.capability.0, self.capability.1)
    }

    /// Compiles `build` for this device, through the cubin cache.
    pub fn compile(&self, build: &Build) -> Result<Vec<u8>, BackendError> {
        cache::compile(build, &self.arch())
    }

    /// Compiles `builds` for this device on all cores, through the cubin cache; results in
    /// the order of `builds`.
    pub fn compile_many(&self, builds: &[Build]) -> Vec<Result<Vec<u8>, BackendError>> {
        compile::in_parallel(builds, &self.arch(), cache::compile)
    }

    /// Loads a cubin and returns its function `name`.
    pub fn load(&self, cubin: Vec<u8>, name: &str) -> Result<CudaFunction, BackendError> {
        self.ctx
            .load_module(Ptx::from_binary(cubin))
            .check("loading a compiled kernel module")?
            .load_function(name)
            .check(&format!("finding kernel {name}"))
    }

    /// Errors unless `need` bytes are free, saying what needs them (`detail`).
    pub fn ensure_free(&self, need: usize, detail: &str) -> Result<(), BackendError> {
        let (free, total) = self.ctx.mem_get_info().check("reading free memory")?;
        enough_memory(&self.name, need, free, total, detail)
    }
}

/// Times work queued on a stream with a pair of CUDA events.
pub struct Timer {
    start: CudaEvent,
    end: CudaEvent,
}

impl Timer {
    /// Two events of `device`'s context.
    pub fn new(device: &Device) -> Result<Timer, BackendError> {
        let event = || {
            device
                .ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .check("creating a timing event")
        };
        Ok(Timer {
            start: event()?,
            end: event()?,
        })
    }

    /// Seconds the device spends on what `work` queues on `stream` (waits for it).
    pub fn seconds(
        &self,
        stream: &CudaStream,
        work: impl FnOnce() -> Result<(), BackendError>,
    ) -> Result<f64, BackendError> {
        self.start
            .record(stream)
            .check("recording a timing event")?;
        work()?;
        self.end.record(stream).check("recording a timing event")?;
        let ms = self.start.elapsed_ms(&self.end).check("timing")?;
        Ok(ms as f64 * 1e-3)
    }
}

/// A one-dimensional launch: blocks of `threads` threads covering `items` threads (one block
/// at least).
pub fn grid(items: usize, threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (items.div_ceil(threads as usize).max(1) as u32, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Median of timings.
pub fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn enough_memory(
    device: &str,
    need: usize,
    free: usize,
    total: usize,
    detail: &str,
) -> Result<(), BackendError> {
    if need <= free {
        return Ok(());
    }
    Err(BackendError::OutOfMemory {
        backend: "cuda",
        needed_bytes: need as u64,
        available_bytes: free as u64,
        what: format!(
            "the case ({detail}) on {device} ({:.2} GiB in all)",
            total as f64 / GIB
        ),
    })
}

/// Bytes of level-2 cache of device `ordinal`, the last level before its memory.
pub fn l2_cache_bytes(ordinal: usize) -> Result<usize, BackendError> {
    let device = Device::open(ordinal)?;
    let bytes = device
        .ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
        .check("reading the L2 cache size")?;
    Ok(bytes as usize)
}

/// The first device as `ferroflow info` shows it (name, memory, compute capability, library
/// versions), or the reason no device is usable.
pub fn probe() -> Result<String, String> {
    let device = Device::open(0).map_err(|e| match e {
        BackendError::Unavailable { reason, .. } => reason,
        other => other.to_string(),
    })?;
    let fail = |e: BackendError| e.to_string();
    let (free, total) = device
        .ctx
        .mem_get_info()
        .check("reading free memory")
        .map_err(fail)?;
    let count = CudaContext::device_count()
        .check("counting devices")
        .map_err(fail)?;
    let mut driver = 0;
    // SAFETY: writes one int; the driver library is loaded (Device::open checked it).
    unsafe { sys::cuDriverGetVersion(&mut driver).result() }
        .check("reading the driver version")
        .map_err(fail)?;
    let (major, minor) = device.capability;
    Ok(format!(
        "{} (device 0 of {count}): compute capability {major}.{minor}, {} SMs, {:.1} GiB \
         ({:.1} GiB free); driver CUDA {}.{}, NVRTC {}",
        device.name,
        device.multiprocessors,
        total as f64 / GIB,
        free as f64 / GIB,
        driver / 1000,
        driver % 1000 / 10,
        compile::nvrtc_version().map_err(fail)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_shortage_says_what_is_needed_and_free() {
        assert!(enough_memory("H100", 10, 10, 20, "x").is_ok());
        let e = enough_memory("H100", 3 << 30, 1 << 30, 80 << 30, "state 2 x 3 arrays");
        let Err(
            e @ BackendError::OutOfMemory {
                needed_bytes,
                available_bytes,
                ..
            },
        ) = e
        else {
            panic!("{e:?} is not OutOfMemory");
        };
        assert_eq!((needed_bytes, available_bytes), (3 << 30, 1 << 30));
        let e = e.to_string();
        assert!(
            e.contains("the case (state 2 x 3 arrays) on H100 (80.00 GiB"),
            "{e}"
        );
        assert!(e.contains("needs 3.00 GiB, 1.00 GiB free"), "{e}");
    }

    #[test]
    fn probe_blames_the_driver_only_without_one() {
        // SAFETY: as in Device::open.
        let driver = unsafe { sys::is_culib_present() };
        assert_eq!(probe().err().as_deref() == Some(NO_DRIVER), !driver);
    }
}
