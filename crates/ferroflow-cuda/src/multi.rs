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
use ferroflow_core::decomposition::{halo_width, region_len, BlockExtent, Decomposition, Face};
use ferroflow_core::{Backend, BackendError, Fields, Layout, Problem, Real, Residuals, Side};
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
    layout: Layout,
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
        if options.devices.is_empty() {
            return Err(failed("no devices given".into()));
        }
        let vars = problem.equations();
        let mut blocks = Vec::new();
        for e in decomposition.extents() {
            let p = decomposition
                .block_problem(problem, &e)
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
            layout: problem.layout,
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
        let p = self.parity;
        let owner_shift = self.blocks[self.reference].backend.own_shift();
        for (id, b) in self.blocks.iter_mut().enumerate() {
            let be = &b.backend;
            let shift = if id == self.reference {
                owner_shift
            } else {
                be.given_shift()
            };
            let stream = be.device.stream.clone();
            let split = self.options.overlap && !norms;
            // The x walls the interior pass fills (only a pass over the whole block does).
            let mut done = 0;
            if split {
                for r in &b.strips {
                    be.queue_step(Some(r), shift, false)?;
                }
            } else {
                done = be.queue_step(None, shift, norms)?;
            }
            b.strips_done.record(&stream).check("recording an event")?;
            b.comm.wait(&b.strips_done).check("waiting for an event")?;
            // Faces this block sends, packed (and staged) on its communication stream.
            let next = be.state.next();
            for l in self.links.iter().filter(|l| l.from == id) {
                let face = Face {
                    side: l.side.opposite(),
                    vars: self.equations,
                };
                if self.options.packing {
                    let send = address(&l.send[p], &be.device.stream);
                    be.queue_face(&b.comm, &next, &face, send, false)?;
                    if let [h0, h1] = &l.host[..] {
                        let host = [h0, h1][p];
                        copy_raw(&b.comm, host_ptr(host)?, send, host.len())?;
                    }
                } else if let [h0, h1] = &l.host[..] {
                    let host = [h0, h1][p];
                    let how = BoxCopy::ToHost(host_ptr(host)?);
                    copy_boxes::<R>(&b.comm, &be.layout, &next, &face, how)?;
                }
            }
            b.packed.record(&b.comm).check("recording an event")?;
            if split && !b.inner.is_empty() {
                be.queue_step(Some(&b.inner), shift, false)?;
            }
            b.backend.queue_walls_and_swap(norms, done)?;
            // The swap flipped cur: the state just computed is now current.
            b.stepped
                .record(&b.backend.device.stream)
                .check("recording an event")?;
        }
        // Halos, pulled by the receiving block's communication stream into its new state.
        for l in &self.links {
            let (from, to) = (&self.blocks[l.from], &self.blocks[l.to]);
            let face = Face {
                side: l.side,
                vars: self.equations,
            };
            let comm = &to.comm;
            let cur = to.backend.state.cur();
            comm.wait(&from.packed).check("waiting for an event")?;
            let recv = address(&l.recv, &to.backend.device.stream);
            let host = l.host.get(self.parity).map(host_ptr).transpose()?;
            match (self.options.packing, host) {
                (true, None) => {
                    let send = address(&l.send[p], &from.backend.device.stream);
                    copy_between(
                        comm,
                        &to.backend.device,
                        recv,
                        &from.backend.device,
                        send,
                        l.recv.len(),
                    )?;
                    to.backend.queue_face(comm, &cur, &face, recv, true)?;
                }
                (true, Some(host)) => {
                    copy_raw(comm, recv, host, l.recv.len())?;
                    to.backend.queue_face(comm, &cur, &face, recv, true)?;
                }
                (false, None) => {
                    // Straight from the sender's state, whose step is done (strips_done).
                    comm.wait(&from.strips_done).check("waiting for an event")?;
                    let fb = &from.backend;
                    let how =
                        BoxCopy::FromDevice(fb.state.cur(), fb.device.ctx.cu_ctx(), fb.layout);
                    copy_boxes::<R>(comm, &to.backend.layout, &cur, &face, how)?;
                }
                (false, Some(host)) => {
                    let how = BoxCopy::FromHost(host);
                    copy_boxes::<R>(comm, &to.backend.layout, &cur, &face, how)?;
                }
            }
        }
        for b in &self.blocks {
            b.unpacked.record(&b.comm).check("recording an event")?;
        }
        // The whole grid's pressure shift for the next iteration, and the halos, before it.
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
        self.parity = 1 - p;
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
    // Pitch in bytes and rows per plane of a layout's arrays.
    let pitch = |l: &Layout| (l.stride[1] * size, l.stride[2] / l.stride[1]);
    let start = |l: &Layout, r: &ferroflow_core::decomposition::Region| {
        (l.index(r[0].0, r[1].0, r[2].0) * size) as CUdeviceptr
    };
    let incoming = !matches!(how, BoxCopy::ToHost(_));
    let mut at = 0;
    for var in 0..face.vars {
        let mine = face.region(layout, var, incoming);
        let count = [0, 1, 2].map(|d| (mine[d].1 - mine[d].0) as usize);
        let packed = (at * size) as CUdeviceptr;
        at += region_len(&mine);
        let (my_pitch, my_height) = pitch(layout);
        let mut c = sys::CUDA_MEMCPY3D_PEER_st {
            srcXInBytes: 0,
            srcY: 0,
            srcZ: 0,
            srcLOD: 0,
            srcMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            srcHost: std::ptr::null(),
            srcDevice: 0,
            srcArray: std::ptr::null_mut(),
            srcContext: std::ptr::null_mut(),
            srcPitch: 0,
            srcHeight: 0,
            dstXInBytes: 0,
            dstY: 0,
            dstZ: 0,
            dstLOD: 0,
            dstMemoryType: CUmemorytype::CU_MEMORYTYPE_DEVICE,
            dstHost: std::ptr::null_mut(),
            dstDevice: vars.v[var] + start(layout, &mine),
            dstArray: std::ptr::null_mut(),
            dstContext: ctx,
            dstPitch: my_pitch,
            dstHeight: my_height,
            WidthInBytes: count[0] * size,
            Height: count[1],
            Depth: count[2],
        };
        match how {
            BoxCopy::FromDevice(v, sctx, l) => {
                let theirs = Face {
                    side: face.side.opposite(),
                    vars: face.vars,
                }
                .region(&l, var, false);
                let (sp, sh) = pitch(&l);
                c.srcDevice = v.v[var] + start(&l, &theirs);
                c.srcContext = sctx;
                c.srcPitch = sp;
                c.srcHeight = sh;
            }
            BoxCopy::FromHost(h) => {
                c.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
                c.srcHost = (h + packed) as *const _;
                c.srcPitch = count[0] * size;
                c.srcHeight = count[1];
            }
            BoxCopy::ToHost(h) => {
                (c.srcDevice, c.srcContext, c.srcPitch, c.srcHeight) =
                    (c.dstDevice, ctx, my_pitch, my_height);
                c.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_HOST;
                c.dstDevice = 0;
                c.dstContext = std::ptr::null_mut();
                c.dstHost = (h + packed) as *mut _;
                c.dstPitch = count[0] * size;
                c.dstHeight = count[1];
            }
        }
        // SAFETY: both boxes lie inside their arrays or buffers; the stream orders the copy
        // after the work that wrote the source.
        unsafe { sys::cuMemcpy3DPeerAsync(&c, stream.cu_stream()) }
            .result()
            .check("copying a halo box")?;
    }
    Ok(())
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
        let mut total = Residuals {
            equations: self.equations,
            nodes: self.layout.interior_nodes(),
            ..Default::default()
        };
        for b in &self.blocks {
            total.add(&b.backend.residuals()?);
        }
        Ok(total)
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        let mut whole = self.initial.clone();
        for b in &mut self.blocks {
            let f = b.backend.download()?;
            self.decomposition.paste(&mut whole, &b.extent, &f);
        }
        Ok(whole)
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        if fields.layout != self.layout || fields.vars.len() != self.equations {
            return Err(failed(
                "uploaded state does not match the problem's grid".into(),
            ));
        }
        for b in &mut self.blocks {
            b.comm.synchronize().check("waiting for halos")?;
            b.backend
                .upload(&self.decomposition.cut(fields, &b.extent))?;
        }
        Ok(())
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
