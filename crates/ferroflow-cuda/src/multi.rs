//! [`MultiGpu`]: a decomposed grid on several GPUs (or several blocks per GPU) driven by one
//! process, with the whole state on the devices. Work is queued, never waited for, except
//! for residual norms and downloads:
//!
//! - each block steps on its device's compute stream; with overlap, it first computes the
//!   strips next to its interfaces, then the rest while its halos travel;
//! - a second stream per block packs its faces into contiguous buffers once the strips are
//!   done (or, without packing, copies boxes of the arrays directly), and pulls the halos of
//!   its neighbours: device to device (peer access where the devices allow it), or staged
//!   through pinned host memory;
//! - blocks then copy the whole grid's pressure reference value from its owner.
//!
//! Events order all of it: a block's next step waits for its halos; a face is packed into
//! one of two buffers by iteration parity, so the next iteration's packing never overwrites
//! a face still being pulled (a block two iterations ahead would need halos not yet sent).
use crate::backend::{CudaBackend, CudaOptions};
use crate::device::{address, Check, Device};
use crate::launch::{Region, Vars};
use cudarc::driver::sys::{self, CUdeviceptr, CUmemorytype};
use cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use ferroflow_ac::blocks::block_problem;
use ferroflow_ac::iteration::finish;
use ferroflow_ac::Problem;
use ferroflow_core::decomposition::{halo_width, region_len, BlockExtent, Decomposition, Face};
use ferroflow_core::{Backend, BackendError, Fields, Layout, Real, Residuals, Side};
use std::sync::Arc;

/// How halos travel between blocks on different devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exchange {
    /// Device to device (peer-to-peer when the devices allow it).
    Peer,
    /// Device to pinned host memory, then host to device.
    Host,
}

/// Options of [`MultiGpu::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiGpuOptions {
    /// Device ordinals; block `b` runs on `devices[b % devices.len()]`.
    pub devices: Vec<usize>,
    /// How halos travel.
    pub exchange: Exchange,
    /// Pack faces into contiguous buffers with a kernel (else copy strided boxes).
    pub packing: bool,
    /// Compute interior nodes while halos travel.
    pub overlap: bool,
    /// Options of each block's backend (`device` is replaced).
    pub cuda: CudaOptions,
}

fn failed(message: String) -> BackendError {
    BackendError::Failed {
        backend: "cuda",
        message,
    }
}

/// One block on its device.
struct Block<R: Real> {
    backend: CudaBackend<R>,
    extent: BlockExtent,
    /// Packs faces and pulls halos.
    comm: Arc<CudaStream>,
    /// Boxes next to the interfaces (computed first with overlap) and the rest.
    strips: Vec<Region>,
    inner: Region,
    strips_done: CudaEvent,
    packed: CudaEvent,
    unpacked: CudaEvent,
    stepped: CudaEvent,
}

/// The halo of block `to` across its side `side`, sent by block `from`.
struct Link {
    from: usize,
    to: usize,
    side: Side,
    /// Packed face on `from`'s device, one per iteration parity.
    send: [CudaSlice<u8>; 2],
    /// The halo as it arrives on `to`'s device.
    recv: CudaSlice<u8>,
    /// Pinned staging buffers, one per iteration parity (host exchange only).
    host: Vec<PinnedHostSlice<u8>>,
}

/// A decomposed grid on one or more GPUs.
pub struct MultiGpu<R: Real> {
    decomposition: Decomposition,
    blocks: Vec<Block<R>>,
    links: Vec<Link>,
    options: MultiGpuOptions,
    /// Owner block of the pressure reference node.
    reference: usize,
    equations: usize,
    initial: Fields<R>,
    parity: usize,
    /// Whether every pair of devices in use has peer access.
    peer_access: bool,
}

impl<R: Real> MultiGpu<R> {
    /// Sets up every block of `decomposition` on its device.
    pub fn new(
        problem: &Problem<R>,
        decomposition: Decomposition,
        options: &MultiGpuOptions,
    ) -> Result<MultiGpu<R>, BackendError> {
        decomposition.check_grid(&problem.layout, "cuda")?;
        if options.devices.is_empty() {
            return Err(failed("no devices given".into()));
        }
        let vars = problem.equations();
        let mut blocks = Vec::new();
        for e in decomposition.extents() {
            let p = block_problem(&decomposition, problem, &e)
                .map_err(|err| failed(format!("block {}: {err}", e.id)))?;
            let cuda = CudaOptions {
                device: options.devices[e.id % options.devices.len()],
                ..options.cuda
            };
            let backend = CudaBackend::new(&p, &cuda)?;
            let ctx = backend.device.ctx.clone();
            let event = || ctx.new_event(None).check("creating an event");
            let (strips, inner) = split(&p.layout, &e);
            blocks.push(Block {
                comm: ctx.new_stream().check("creating a stream")?,
                strips,
                inner,
                strips_done: event()?,
                packed: event()?,
                unpacked: event()?,
                stepped: event()?,
                extent: e,
                backend,
            });
        }
        let peer_access = enable_peer_access(&blocks)?;
        let mut links = Vec::new();
        for to in 0..blocks.len() {
            for side in Side::ALL {
                let Some(from) = blocks[to].extent.neighbours[side as usize] else {
                    continue;
                };
                let layout = blocks[to].backend.layout;
                let bytes = Face { side, vars }.len(&layout) * std::mem::size_of::<R>();
                let alloc = |b: &Block<R>| {
                    b.backend
                        .device
                        .stream
                        .alloc_zeros::<u8>(bytes)
                        .check("allocating a halo buffer")
                };
                let host = match options.exchange {
                    Exchange::Peer => Vec::new(),
                    Exchange::Host => (0..2)
                        .map(|_| {
                            // SAFETY: the staging buffers are written by copies before read.
                            unsafe { blocks[to].backend.device.ctx.alloc_pinned::<u8>(bytes) }
                                .check("allocating pinned host memory")
                        })
                        .collect::<Result<_, _>>()?,
                };
                links.push(Link {
                    from,
                    to,
                    side,
                    send: [alloc(&blocks[from])?, alloc(&blocks[from])?],
                    recv: alloc(&blocks[to])?,
                    host,
                });
            }
        }
        let (reference, _) = decomposition.owner(problem.pressure_ref);
        Ok(MultiGpu {
            decomposition,
            blocks,
            links,
            options: options.clone(),
            reference,
            equations: problem.equations(),
            initial: problem.initial.clone(),
            parity: 0,
            peer_access,
        })
    }

    /// The decomposition.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// Whether the devices copy peer to peer (false: the driver stages the copies).
    pub fn peer_access(&self) -> bool {
        self.peer_access
    }

    /// Tuning reports of the blocks' interior kernels.
    pub fn tuning(&self) -> Vec<&crate::TuneReport> {
        self.blocks.iter().map(|b| b.backend.tuning()).collect()
    }

    /// Queues one iteration of every block and the exchange of its halos.
    fn iterate(&mut self, norms: bool) -> Result<(), BackendError> {
        let owner_shift = self.blocks[self.reference].backend.own_shift();
        for id in 0..self.blocks.len() {
            let shift = if id == self.reference {
                owner_shift
            } else {
                self.blocks[id].backend.given_shift()
            };
            self.step_block(id, shift, norms)?;
        }
        for l in &self.links {
            self.pull_halo(l)?;
        }
        // Every halo of a block has been queued on its communication stream.
        for b in &self.blocks {
            b.unpacked.record(&b.comm).check("recording an event")?;
        }
        self.share_shift()?;
        self.parity = 1 - self.parity;
        Ok(())
    }

    /// Queues block `id`'s step with the pressure shift at `shift` on its compute stream (with
    /// overlap: the strips, then the rest) and the faces it sends on its communication stream,
    /// once the strips are done.
    fn step_block(
        &mut self,
        id: usize,
        shift: CUdeviceptr,
        norms: bool,
    ) -> Result<(), BackendError> {
        let split = self.options.overlap && !norms;
        let b = &self.blocks[id];
        let be = &b.backend;
        // The x walls the interior pass fills (only a pass over the whole block does).
        let mut done = 0;
        if split {
            for r in &b.strips {
                be.queue_step(Some(r), shift, false)?;
            }
        } else {
            done = be.queue_step(None, shift, norms)?;
        }
        b.strips_done
            .record(&be.device.stream)
            .check("recording an event")?;
        b.comm.wait(&b.strips_done).check("waiting for an event")?;
        self.send_faces(id)?;
        b.packed.record(&b.comm).check("recording an event")?;
        if split && !b.inner.is_empty() {
            be.queue_step(Some(&b.inner), shift, false)?;
        }
        let b = &mut self.blocks[id];
        finish(&mut b.backend, done, norms)?;
        // The swap flipped cur: the state just computed is now current.
        b.stepped
            .record(&b.backend.device.stream)
            .check("recording an event")
    }

    /// Queues on block `id`'s communication stream the faces it sends from the state being
    /// computed: packed into this iteration's send buffers (and staged to pinned memory for a
    /// host exchange), or, without packing, copied as boxes to pinned memory (a device exchange
    /// without packing has nothing to send: `pull_halo` reads the sender's state).
    fn send_faces(&self, id: usize) -> Result<(), BackendError> {
        let (b, p) = (&self.blocks[id], self.parity);
        let be = &b.backend;
        let next = be.state.next();
        for l in self.links.iter().filter(|l| l.from == id) {
            let face = Face {
                side: l.side.opposite(),
                vars: self.equations,
            };
            if self.options.packing {
                let send = address(&l.send[p], &be.device.stream);
                be.queue_face(&b.comm, &next, &face, send, false)?;
                if let Some(host) = l.host.get(p) {
                    copy_raw(&b.comm, host_ptr(host)?, send, host.len())?;
                }
            } else if let Some(host) = l.host.get(p) {
                let how = BoxCopy::ToHost(host_ptr(host)?);
                copy_boxes::<R>(&b.comm, &be.layout, &next, &face, how)?;
            }
        }
        Ok(())
    }

    /// Queues the halo of `l`, pulled by the receiving block's communication stream into its
    /// new state once the sender has packed it.
    fn pull_halo(&self, l: &Link) -> Result<(), BackendError> {
        let (from, to, p) = (&self.blocks[l.from], &self.blocks[l.to], self.parity);
        let face = Face {
            side: l.side,
            vars: self.equations,
        };
        let (comm, tb, fb) = (&to.comm, &to.backend, &from.backend);
        let cur = tb.state.cur();
        comm.wait(&from.packed).check("waiting for an event")?;
        let recv = address(&l.recv, &tb.device.stream);
        let host = l.host.get(p).map(host_ptr).transpose()?;
        if self.options.packing {
            match host {
                Some(host) => copy_raw(comm, recv, host, l.recv.len())?,
                None => {
                    let send = address(&l.send[p], &fb.device.stream);
                    copy_between(comm, &tb.device, recv, &fb.device, send, l.recv.len())?;
                }
            }
            return tb.queue_face(comm, &cur, &face, recv, true);
        }
        let how = match host {
            Some(host) => BoxCopy::FromHost(host),
            None => {
                // Straight from the sender's state, whose step is done (strips_done).
                comm.wait(&from.strips_done).check("waiting for an event")?;
                BoxCopy::FromDevice(fb.state.cur(), fb.device.ctx.cu_ctx(), fb.layout)
            }
        };
        copy_boxes::<R>(comm, &tb.layout, &cur, &face, how)
    }

    /// Queues on every block's compute stream the copy of the whole grid's pressure shift from
    /// the owner's new state, and the wait for its halos: the next step needs both.
    fn share_shift(&self) -> Result<(), BackendError> {
        let owner = &self.blocks[self.reference];
        for (id, b) in self.blocks.iter().enumerate() {
            let stream = &b.backend.device.stream;
            if id != self.reference {
                stream.wait(&owner.stepped).check("waiting for an event")?;
                let src = owner.backend.own_shift();
                let (to, from) = (&b.backend.device, &owner.backend.device);
                let size = std::mem::size_of::<R>();
                copy_between(stream, to, b.backend.given_shift(), from, src, size)?;
            }
            stream.wait(&b.unpacked).check("waiting for an event")?;
        }
        Ok(())
    }
}

/// The strips inside each interface, as wide as the widest halo, of a block (the nodes its faces send), and
/// the box of the other interior nodes. Strips may share edges; nodes there are computed
/// twice, to the same values.
fn split(layout: &Layout, e: &BlockExtent) -> (Vec<Region>, Region) {
    let mut inner = Region::interior(layout);
    let mut strips = Vec::new();
    let width = halo_width(0) as i64;
    for side in Side::ALL {
        if e.neighbours[side as usize].is_none() {
            continue;
        }
        let a = side.axis();
        let mut s = Region::interior(layout);
        if side.is_high() {
            s.lo[a] = s.hi[a] - width;
            inner.hi[a] = inner.hi[a].min(s.lo[a]);
        } else {
            s.hi[a] = s.lo[a] + width;
            inner.lo[a] = inner.lo[a].max(s.hi[a]);
        }
        strips.push(s);
    }
    (strips, inner)
}

/// Enables peer access between every pair of distinct devices in use; false if some pair
/// cannot (the driver then stages device-to-device copies itself).
fn enable_peer_access<R: Real>(blocks: &[Block<R>]) -> Result<bool, BackendError> {
    let mut all = true;
    for a in blocks {
        for b in blocks {
            all &= enable_peer_pair(&a.backend.device, &b.backend.device)?;
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

fn host_ptr(h: &PinnedHostSlice<u8>) -> Result<CUdeviceptr, BackendError> {
    Ok(h.as_ptr().check("reading a pinned buffer")? as CUdeviceptr)
}

/// Copies `bytes` bytes between unified addresses (device or pinned host) on `stream`.
fn copy_raw(
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
fn copy_between(
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
enum BoxCopy {
    /// This block's send layers to a packed buffer in pinned host memory.
    ToHost(CUdeviceptr),
    /// A packed buffer in pinned host memory into this block's halo.
    FromHost(CUdeviceptr),
    /// The sending block's send layers (state, context, layout) into this block's halo.
    FromDevice(Vars, sys::CUcontext, Layout),
}

/// Copies `face` of the state `vars` (layout `layout`) as `how` says, on `stream`.
fn copy_boxes<R: Real>(
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
        region: &ferroflow_core::decomposition::Region,
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

impl<R: Real> Backend for MultiGpu<R> {
    type Real = R;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        if iterations == 0 {
            return Ok(Residuals::default());
        }
        for it in 0..iterations {
            self.iterate(it + 1 == iterations)?;
        }
        let sums = self.blocks.iter().map(|b| b.backend.residuals());
        let sums = sums.collect::<Result<Vec<_>, _>>()?;
        Ok(self.decomposition.sum_residuals(self.equations, sums))
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        // `new` sets up every block in order: block `id` is `blocks[id]`.
        let blocks = &mut self.blocks;
        self.decomposition
            .gather(&self.initial, |e| blocks[e.id].backend.download())
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        let blocks = self.blocks.iter_mut().map(|b| (b.extent.id, b));
        let vars = self.equations;
        self.decomposition
            .scatter(fields, vars, "cuda", blocks, |b, f| {
                b.comm.synchronize().check("waiting for halos")?;
                b.backend.upload(f)
            })
    }
}

/// Bandwidth of the link between devices `a` and `b` in bytes per second, one direction, as
/// halos use it: peer copies, or device to pinned host to device. Median of `repeats`
/// copies of `bytes` bytes after a warm-up; the scaling study's communication model divides
/// the bytes exchanged per iteration by it.
pub fn link_bandwidth(
    a: usize,
    b: usize,
    exchange: Exchange,
    bytes: usize,
    repeats: usize,
) -> Result<f64, BackendError> {
    let (da, db) = (Device::open(a)?, Device::open(b)?);
    let src = da.stream.alloc_zeros::<u8>(bytes).check("allocating")?;
    let dst = db.stream.alloc_zeros::<u8>(bytes).check("allocating")?;
    // SAFETY: written by the copies before it is read.
    let host = unsafe { da.ctx.alloc_pinned::<u8>(bytes) }.check("allocating pinned memory")?;
    let (s, d, h) = (
        address(&src, &da.stream),
        address(&dst, &db.stream),
        host_ptr(&host)?,
    );
    // The copy runs on `b`'s stream and reads `a`'s memory: both directions, as MultiGpu.
    enable_peer_pair(&da, &db)?;
    enable_peer_pair(&db, &da)?;
    let copy = || -> Result<(), BackendError> {
        match exchange {
            Exchange::Peer => copy_between(&db.stream, &db, d, &da, s, bytes),
            Exchange::Host => {
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
