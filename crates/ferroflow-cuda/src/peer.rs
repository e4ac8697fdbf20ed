//! What any driver of blocks on several devices needs to move data between them, apart from
//! its own block sequence: peer access between devices (and their memory pools), pinned host
//! staging buffers, copies between unified addresses within or across devices, plus
//! [`link_bandwidth`], the bandwidth those copies reach.
use crate::device::{address, Check, Device};
use cudarc::driver::sys::{self, CUdeviceptr};
use cudarc::driver::{CudaStream, PinnedHostSlice};
use ferroflow_core::BackendError;

/// How halos travel between blocks on different devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HaloRoute {
    /// Device to device (peer-to-peer when the devices allow it).
    Peer,
    /// Device to pinned host memory, then host to device.
    Host,
}

/// Enables peer access between every pair of distinct `devices`; false if some pair cannot
/// (the driver then stages device-to-device copies itself).
pub fn enable_peer_access(devices: &[&Device]) -> Result<bool, BackendError> {
    let mut all = true;
    for a in devices {
        for b in devices {
            all &= enable_peer_pair(a, b)?;
        }
    }
    Ok(all)
}

/// Lets device `a` access `b`'s memory, if it can (true also for one device).
fn enable_peer_pair(a: &Device, b: &Device) -> Result<bool, BackendError> {
    let (ca, cb) = (&a.ctx, &b.ctx);
    if ca.cu_ctx() == cb.cu_ctx() {
        return Ok(true);
    }
    let mut can = 0;
    // SAFETY: plain queries and a context switch on this thread.
    unsafe {
        sys::cuDeviceCanAccessPeer(&mut can, ca.cu_device(), cb.cu_device())
            .result()
            .check("querying peer access")?;
        if can == 0 {
            return Ok(false);
        }
        ca.bind_to_thread().check("binding a context")?;
        let r = sys::cuCtxEnablePeerAccess(cb.cu_ctx(), 0);
        if r != sys::CUresult::CUDA_SUCCESS
            && r != sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
        {
            r.result().check("enabling peer access")?;
        }
        // Buffers come from the stream-ordered allocator (the device's default memory pool),
        // which peer access alone does not open: without this the driver stages every copy
        // through the host. (Devices without pools allocate plainly; nothing to open.)
        let mut pools = 0;
        sys::cuDeviceGetAttribute(
            &mut pools,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED,
            cb.cu_device(),
        )
        .result()
        .check("querying memory pools")?;
        if pools == 0 {
            return Ok(true);
        }
        let mut pool = std::ptr::null_mut();
        sys::cuDeviceGetDefaultMemPool(&mut pool, cb.cu_device())
            .result()
            .check("finding a memory pool")?;
        let access = sys::CUmemAccessDesc {
            location: sys::CUmemLocation {
                type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                id: ca.cu_device(),
            },
            flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
        };
        sys::cuMemPoolSetAccess(pool, &access, 1)
            .result()
            .check("opening a memory pool to a peer")?;
    }
    Ok(true)
}

/// A pinned host buffer of `bytes` bytes for staging copies of `device`, contents undefined.
pub fn pinned(device: &Device, bytes: usize) -> Result<PinnedHostSlice<u8>, BackendError> {
    // SAFETY: staging buffers are written by copies before they are read.
    unsafe { device.ctx.alloc_pinned::<u8>(bytes) }.check("allocating pinned host memory")
}

/// The unified address of a pinned buffer, for the driver's copies.
pub fn host_ptr(h: &PinnedHostSlice<u8>) -> Result<CUdeviceptr, BackendError> {
    Ok(h.as_ptr().check("reading a pinned buffer")? as CUdeviceptr)
}

/// Copies `bytes` bytes between unified addresses (device or pinned host) on `stream`.
pub fn copy_raw(
    stream: &CudaStream,
    dst: CUdeviceptr,
    src: CUdeviceptr,
    bytes: usize,
) -> Result<(), BackendError> {
    stream
        .context()
        .bind_to_thread()
        .check("binding a context")?;
    // SAFETY: both addresses hold `bytes` bytes; the stream orders the copy after the work
    // that wrote the source.
    unsafe { sys::cuMemcpyAsync(dst, src, bytes, stream.cu_stream()) }
        .result()
        .check("copying a halo")
}

/// Copies `bytes` bytes from `src` on device `from` to `dst` on device `to`, on `stream`.
pub fn copy_between(
    stream: &CudaStream,
    to: &Device,
    dst: CUdeviceptr,
    from: &Device,
    src: CUdeviceptr,
    bytes: usize,
) -> Result<(), BackendError> {
    let (dc, sc) = (to.ctx.cu_ctx(), from.ctx.cu_ctx());
    if dc == sc {
        return copy_raw(stream, dst, src, bytes);
    }
    stream
        .context()
        .bind_to_thread()
        .check("binding a context")?;
    // SAFETY: as in copy_raw, with each address in its own context.
    unsafe { sys::cuMemcpyPeerAsync(dst, dc, src, sc, bytes, stream.cu_stream()) }
        .result()
        .check("copying a halo between devices")
}

/// Bandwidth of the link between devices `a` and `b` in bytes per second, one direction, as
/// halos use it: peer copies, or device to pinned host to device. Median of `repeats`
/// copies of `bytes` bytes after a warm-up; the scaling study's communication model divides
/// the bytes exchanged per iteration by it.
pub fn link_bandwidth(
    a: usize,
    b: usize,
    route: HaloRoute,
    bytes: usize,
    repeats: usize,
) -> Result<f64, BackendError> {
    let (da, db) = (Device::open(a)?, Device::open(b)?);
    let src = da.stream.alloc_zeros::<u8>(bytes).check("allocating")?;
    let dst = db.stream.alloc_zeros::<u8>(bytes).check("allocating")?;
    let host = pinned(&da, bytes)?;
    let (s, d, h) = (
        address(&src, &da.stream),
        address(&dst, &db.stream),
        host_ptr(&host)?,
    );
    // The copy runs on `b`'s stream and reads `a`'s memory: both directions, as MultiGpu.
    enable_peer_pair(&da, &db)?;
    enable_peer_pair(&db, &da)?;
    let copy = || -> Result<(), BackendError> {
        match route {
            HaloRoute::Peer => copy_between(&db.stream, &db, d, &da, s, bytes),
            HaloRoute::Host => {
                copy_raw(&da.stream, h, s, bytes)?;
                da.stream.synchronize().check("copying")?;
                copy_raw(&db.stream, d, h, bytes)
            }
        }?;
        db.stream.synchronize().check("copying")
    };
    copy()?;
    let mut times = Vec::new();
    for _ in 0..repeats.max(1) {
        let start = std::time::Instant::now();
        copy()?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok(bytes as f64 / crate::device::median(times))
}
