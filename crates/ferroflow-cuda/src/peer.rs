//! What any driver of blocks on several devices needs to move data between them, apart from
//! its own block sequence: peer access between devices (and their memory pools), pinned host
//! staging buffers, copies between unified addresses within or across devices, and faces
//! copied as strided boxes straight from or into a state (one 3D copy per variable), plus
//! [`link_bandwidth`], the bandwidth those copies reach.
use crate::device::{address, Check, Device};
use crate::launch::Vars;
use cudarc::driver::sys::{self, CUdeviceptr, CUmemorytype};
use cudarc::driver::{CudaStream, PinnedHostSlice};
use ferroflow_core::decomposition::{region_len, Face, Region};
use ferroflow_core::{BackendError, Layout, Real};

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
pub(crate) fn enable_peer_access(devices: &[&Device]) -> Result<bool, BackendError> {
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
pub(crate) fn pinned(device: &Device, bytes: usize) -> Result<PinnedHostSlice<u8>, BackendError> {
    // SAFETY: staging buffers are written by copies before they are read.
    unsafe { device.ctx.alloc_pinned::<u8>(bytes) }.check("allocating pinned host memory")
}

/// The unified address of a pinned buffer, for the driver's copies.
pub(crate) fn host_ptr(h: &PinnedHostSlice<u8>) -> Result<CUdeviceptr, BackendError> {
    Ok(h.as_ptr().check("reading a pinned buffer")? as CUdeviceptr)
}

/// Copies `bytes` bytes between unified addresses (device or pinned host) on `stream`.
pub(crate) fn copy_raw(
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
pub(crate) fn copy_between(
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

/// A face copied as strided boxes (one per variable), without packing.
pub(crate) enum BoxCopy {
    /// This block's send layers to a packed buffer in pinned host memory.
    ToHost(CUdeviceptr),
    /// A packed buffer in pinned host memory into this block's halo.
    FromHost(CUdeviceptr),
    /// The sending block's send layers (state, context, layout) into this block's halo.
    FromDevice(Vars, sys::CUcontext, Layout),
}

/// Copies `face` of the state `vars` (layout `layout`) as `how` says, on `stream`.
pub(crate) fn copy_boxes<R: Real>(
    stream: &CudaStream,
    layout: &Layout,
    vars: &Vars,
    face: &Face,
    how: BoxCopy,
) -> Result<(), BackendError> {
    let size = std::mem::size_of::<R>();
    let ctx = stream.context().cu_ctx();
    stream
        .context()
        .bind_to_thread()
        .check("binding a context")?;
    for c in box_copies(layout, vars, ctx, face, how, size) {
        // SAFETY: both boxes lie inside their arrays or buffers; the stream orders the copy
        // after the work that wrote the source.
        unsafe { sys::cuMemcpy3DPeerAsync(&c, stream.cu_stream()) }
            .result()
            .check("copying a halo box")?;
    }
    Ok(())
}

/// The copies of [`copy_boxes`], one per variable: the state `vars` (layout `layout`) is in
/// context `ctx`, values are `size` bytes.
fn box_copies(
    layout: &Layout,
    vars: &Vars,
    ctx: sys::CUcontext,
    face: &Face,
    how: BoxCopy,
    size: usize,
) -> Vec<sys::CUDA_MEMCPY3D_PEER_st> {
    let incoming = !matches!(how, BoxCopy::ToHost(_));
    let mut at = 0;
    let mut copies = Vec::with_capacity(face.vars);
    for var in 0..face.vars {
        let region = face.region(layout, var, incoming);
        let count = [0, 1, 2].map(|d| (region[d].1 - region[d].0) as usize);
        // Where this variable's values start in a packed buffer.
        let packed = (at * size) as CUdeviceptr;
        at += region_len(&region);
        let mine = End::device(vars.v[var], ctx, layout, &region, size);
        let (src, dst) = match how {
            BoxCopy::FromDevice(v, sctx, l) => {
                let theirs = Face {
                    side: face.side.opposite(),
                    vars: face.vars,
                }
                .region(&l, var, false);
                (End::device(v.v[var], sctx, &l, &theirs, size), mine)
            }
            BoxCopy::FromHost(h) => (End::host(h + packed, count, size), mine),
            BoxCopy::ToHost(h) => (mine, End::host(h + packed, count, size)),
        };
        copies.push(box_copy(&src, &dst, count, size));
    }
    copies
}

/// One side of a box copy: a box of a device array, or a packed box in pinned host memory.
struct End {
    memory: CUmemorytype,
    device: CUdeviceptr,
    host: *mut std::ffi::c_void,
    context: sys::CUcontext,
    /// Bytes per row and rows per plane.
    pitch: usize,
    height: usize,
}

impl End {
    /// The box `region` of the array at `base` (context `context`, layout `layout`).
    fn device(
        base: CUdeviceptr,
        context: sys::CUcontext,
        layout: &Layout,
        region: &Region,
        size: usize,
    ) -> End {
        let [i, j, k] = region.map(|(lo, _)| lo);
        End {
            memory: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            device: base + (layout.index(i, j, k) * size) as CUdeviceptr,
            host: std::ptr::null_mut(),
            context,
            pitch: layout.stride[1] * size,
            height: layout.stride[2] / layout.stride[1],
        }
    }

    /// `count` values packed at the pinned host address `at`.
    fn host(at: CUdeviceptr, count: [usize; 3], size: usize) -> End {
        End {
            memory: CUmemorytype::CU_MEMORYTYPE_HOST,
            device: 0,
            host: at as *mut _,
            context: std::ptr::null_mut(),
            pitch: count[0] * size,
            height: count[1],
        }
    }
}

/// The driver's description of the copy of `count` values from `src` to `dst`.
fn box_copy(src: &End, dst: &End, count: [usize; 3], size: usize) -> sys::CUDA_MEMCPY3D_PEER_st {
    sys::CUDA_MEMCPY3D_PEER_st {
        srcXInBytes: 0,
        srcY: 0,
        srcZ: 0,
        srcLOD: 0,
        srcMemoryType: src.memory,
        srcHost: src.host,
        srcDevice: src.device,
        srcArray: std::ptr::null_mut(),
        srcContext: src.context,
        srcPitch: src.pitch,
        srcHeight: src.height,
        dstXInBytes: 0,
        dstY: 0,
        dstZ: 0,
        dstLOD: 0,
        dstMemoryType: dst.memory,
        dstHost: dst.host,
        dstDevice: dst.device,
        dstArray: std::ptr::null_mut(),
        dstContext: dst.context,
        dstPitch: dst.pitch,
        dstHeight: dst.height,
        WidthInBytes: count[0] * size,
        Height: count[1],
        Depth: count[2],
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_core::Side;

    const HOST: CUdeviceptr = 0x9000;

    fn context(n: usize) -> sys::CUcontext {
        n as sys::CUcontext
    }

    /// The copies of the x-high face of two variables (8-byte values) of a 3D block.
    fn copies(how: BoxCopy) -> (Layout, Vars, Vec<sys::CUDA_MEMCPY3D_PEER_st>) {
        let layout = Layout::new(3, [6, 5, 4]);
        let mut vars = Vars::default();
        vars.v[..2].copy_from_slice(&[1 << 20, 2 << 20]);
        let face = Face {
            side: Side::XHi,
            vars: 2,
        };
        let copies = box_copies(&layout, &vars, context(1), &face, how, 8);
        (layout, vars, copies)
    }

    /// The address of the first node of variable `var`'s box of `side` in `vars`.
    fn first(layout: &Layout, vars: &Vars, side: Side, var: usize, incoming: bool) -> u64 {
        let r = Face { side, vars: 2 }.region(layout, var, incoming);
        vars.v[var] + 8 * layout.index(r[0].0, r[1].0, r[2].0) as u64
    }

    #[test]
    fn boxes_go_to_and_from_packed_host_buffers_variable_after_variable() {
        let (layout, vars, out) = copies(BoxCopy::ToHost(HOST));
        let (_, _, back) = copies(BoxCopy::FromHost(HOST));
        let row = (8 * layout.stride[1], layout.stride[2] / layout.stride[1]);
        let first_len = region_len(
            &Face {
                side: Side::XHi,
                vars: 2,
            }
            .region(&layout, 0, false),
        );
        for (var, (o, b)) in out.iter().zip(&back).enumerate() {
            let packed = HOST as usize + 8 * first_len * var;
            assert_eq!(o.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_DEVICE);
            assert_eq!(o.srcDevice, first(&layout, &vars, Side::XHi, var, false));
            assert_eq!(
                (o.srcContext, o.srcPitch, o.srcHeight),
                (context(1), row.0, row.1)
            );
            assert_eq!(o.dstMemoryType, CUmemorytype::CU_MEMORYTYPE_HOST);
            assert_eq!((o.dstHost as usize, o.dstDevice), (packed, 0));
            assert!(o.dstContext.is_null());
            assert_eq!((o.dstPitch, o.dstHeight), (o.WidthInBytes, o.Height));
            // Receiving: the same packed layout into the layers beyond the side.
            assert_eq!(b.srcMemoryType, CUmemorytype::CU_MEMORYTYPE_HOST);
            assert_eq!((b.srcHost as usize, b.srcPitch), (packed, b.WidthInBytes));
            assert_eq!(b.dstDevice, first(&layout, &vars, Side::XHi, var, true));
            assert_eq!(
                (b.dstContext, b.dstPitch, b.dstHeight),
                (context(1), row.0, row.1)
            );
            assert_eq!(
                (b.WidthInBytes, b.Height, b.Depth),
                (o.WidthInBytes, o.Height, o.Depth)
            );
        }
    }

    #[test]
    fn device_boxes_read_the_senders_opposite_side_in_its_context() {
        let theirs = Layout::new(3, [7, 5, 4]);
        let mut from = Vars::default();
        from.v[..2].copy_from_slice(&[5 << 20, 6 << 20]);
        let (layout, vars, c) = copies(BoxCopy::FromDevice(from, context(2), theirs));
        for (var, c) in c.iter().enumerate() {
            assert_eq!(c.srcDevice, first(&theirs, &from, Side::XLo, var, false));
            assert_eq!(
                (c.srcContext, c.srcPitch),
                (context(2), 8 * theirs.stride[1])
            );
            assert_eq!(c.dstDevice, first(&layout, &vars, Side::XHi, var, true));
            assert_eq!(c.dstContext, context(1));
            assert!(c.srcHost.is_null() && c.dstHost.is_null());
        }
    }
}
