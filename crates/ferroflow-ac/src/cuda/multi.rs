//! [`MultiGpu`]: a decomposed grid on several GPUs (or several blocks per GPU), with the whole
//! state on the devices, driven by one process or by each of several MPI processes for its own
//! blocks. Within a process work is queued, never waited for, except for residual norms and
//! downloads:
//!
//! - each block steps on its device's compute stream; with overlap, it first computes the
//!   strips next to its interfaces, then the rest while its halos travel;
//! - a second stream per block packs its faces into contiguous buffers once the strips are
//!   done (or, without packing, copies boxes of the arrays directly), and pulls the halos of
//!   its neighbours: device to device (peer access where the devices allow it), or staged
//!   through pinned host memory;
//! - blocks then copy the whole grid's pressure reference value from its owner.
//!
//! Halos from blocks of other processes travel as [`super::remote`] says (between the GPUs
//! of one machine without the host); the reference value is broadcast from its owner's
//! process, which waits for its step to end.
//!
//! Events order all of it: a block's next step waits for its halos; a face is packed into
//! one of two buffers by iteration parity, so the next iteration's packing never overwrites
//! a face still being pulled (a block two iterations ahead would need halos not yet sent).
//!
//! The copies themselves, and the peer access they rely on, come from `ferroflow-cuda` and
//! [`super::boxes`]; this module decides what is copied when.
use super::backend::{CudaBackend, CudaOptions};
use super::boxes::{copy_boxes, BoxCopy};
use super::launch::{NodeBox, Vars};
use super::remote::{Remote, Route};
use super::state::bytes;
use crate::blocks::block_problem;
use crate::decomposed::{check_pieces, gather_everywhere, residuals_in_block_order};
use crate::iteration::finish;
use crate::Problem;
use ferroflow_core::decomposition::{halo_width, BlockExtent, Decomposition, Face};
use ferroflow_core::Snapshot;
use ferroflow_core::{Backend, BackendError, Fields, Layout, Points, Real, Residuals, Side};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use ferroflow_cuda::{address, Check, Device};
use ferroflow_cuda::{copy_between, copy_raw, enable_peer_access, host_ptr, pinned, HaloRoute};
use ferroflow_parallel::{InProcess, Transport};
use std::sync::Arc;

/// Options of [`MultiGpu::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiGpuOptions {
    /// Device ordinals; block `b` runs on `devices[b % devices.len()]`.
    pub devices: Vec<usize>,
    /// How halos travel.
    pub exchange: HaloRoute,
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
pub(super) struct Block<R: Real> {
    pub(super) backend: CudaBackend<R>,
    pub(super) extent: BlockExtent,
    /// Packs faces and pulls halos.
    pub(super) comm: Arc<CudaStream>,
    /// Boxes next to the interfaces (computed first with overlap) and the rest.
    strips: Vec<NodeBox>,
    inner: NodeBox,
    strips_done: CudaEvent,
    /// Every face it sends is packed (and staged).
    pub(super) packed: CudaEvent,
    unpacked: CudaEvent,
    stepped: CudaEvent,
}

/// The halo of block `to` across its side `side`, sent by block `from` (both this process's,
/// by their index in its blocks).
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

/// A decomposed grid on one or more GPUs, in one process or over the processes `T` reaches.
pub struct MultiGpu<R: Real, T = InProcess> {
    decomposition: Decomposition,
    /// This process's blocks, in block order.
    blocks: Vec<Block<R>>,
    links: Vec<Link>,
    /// Links to the blocks of other processes.
    remote: Remote,
    transport: T,
    options: MultiGpuOptions,
    /// The block holding the pressure reference node: its index in `blocks` if it is here,
    /// and the process that has it.
    reference: (Option<usize>, usize),
    equations: usize,
    /// Halo layers of the velocity and T (`Problem::halo_reach`).
    reach: usize,
    /// The whole grid's layout.
    layout: Layout,
    parity: usize,
    /// Whether every pair of devices in use has peer access.
    peer_access: bool,
}

impl<R: Real> MultiGpu<R> {
    /// Sets up every block of `decomposition` on its device, all in this process.
    pub fn new(
        problem: &Problem<R>,
        decomposition: Decomposition,
        options: &MultiGpuOptions,
    ) -> Result<MultiGpu<R>, BackendError> {
        MultiGpu::over(problem, decomposition, options, InProcess)
    }
}

impl<R: Real, T: Transport<R>> MultiGpu<R, T> {
    /// Sets up this process's blocks of `decomposition` (those `transport` says it owns), each
    /// on its device, and their links to the blocks of the other processes: between GPUs of
    /// one machine through shared memory with `HaloRoute::Peer`, else by MPI (CUDA-aware where
    /// the library is, else staged through pinned host memory).
    pub fn over(
        problem: &Problem<R>,
        decomposition: Decomposition,
        options: &MultiGpuOptions,
        mut transport: T,
    ) -> Result<MultiGpu<R, T>, BackendError> {
        decomposition.check_grid(&problem.layout, "cuda")?;
        if let crate::Method::Implicit(_) = problem.numerics.method {
            // Its blocks relax on their own under `Decomposed`, halos through the host.
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: "numerics.method = \"implicit\" in the multi-GPU driver".into(),
            });
        }
        if options.devices.is_empty() {
            return Err(failed("no devices given".into()));
        }
        let (vars, reach) = (problem.equations(), problem.halo_reach());
        let extents = decomposition.extents();
        let (rank, _) = transport.rank_size();
        let owner = |id: usize| transport.owner(id, extents.len());
        let mut blocks = Vec::new();
        for e in extents.iter().copied().filter(|e| owner(e.id) == rank) {
            let p = block_problem(&decomposition, problem, &e)
                .map_err(|err| failed(format!("block {}: {err}", e.id)))?;
            let cuda = CudaOptions {
                device: options.devices[e.id % options.devices.len()],
                ..options.cuda
            };
            let backend = CudaBackend::new(&p, &cuda)?;
            let ctx = backend.device.ctx.clone();
            let event = || ctx.new_event(None).check("creating an event");
            let (strips, inner) = split(&p.layout, &e, reach);
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
        let devices: Vec<&Device> = blocks.iter().map(|b| &b.backend.device).collect();
        let peer_access = enable_peer_access(&devices)?;
        let index = |id: usize| blocks.iter().position(|b: &Block<R>| b.extent.id == id);
        let mut links = Vec::new();
        for to in 0..blocks.len() {
            for side in Side::ALL {
                let neighbour = blocks[to].extent.neighbours[side as usize];
                let Some(from) = neighbour.and_then(index) else {
                    continue;
                };
                let layout = blocks[to].backend.layout;
                let face = Face { side, vars, reach };
                let bytes = face.len(&layout) * std::mem::size_of::<R>();
                let alloc = |b: &Block<R>| {
                    b.backend
                        .device
                        .stream
                        .alloc_zeros::<u8>(bytes)
                        .check("allocating a halo buffer")
                };
                let host = match options.exchange {
                    HaloRoute::Peer => Vec::new(),
                    HaloRoute::Host => (0..2)
                        .map(|_| pinned(&blocks[to].backend.device, bytes))
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
        let ipc = options.exchange == HaloRoute::Peer;
        let remote = Remote::new(&blocks, (vars, reach), ipc, extents.len(), &mut transport)?;
        let (reference, _) = decomposition.owner(problem.pressure_ref);
        let reference = (
            blocks.iter().position(|b| b.extent.id == reference),
            transport.owner(reference, extents.len()),
        );
        let mut multi = MultiGpu {
            decomposition,
            blocks,
            links,
            remote,
            transport,
            options: options.clone(),
            reference,
            equations: problem.equations(),
            reach,
            layout: problem.layout,
            parity: 0,
            peer_access,
        };
        multi.reshift()?;
        Ok(multi)
    }

    /// The decomposition.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// Whether the devices copy peer to peer (false: the driver stages the copies).
    pub fn peer_access(&self) -> bool {
        self.peer_access
    }

    /// How halos travel to and from the blocks of other processes, if any: `Ipc` (GPU to GPU
    /// within a machine), `Device` (CUDA-aware MPI), `Host` (staged).
    pub fn remote_routes(&self) -> Vec<Route> {
        self.remote.routes()
    }

    /// Tuning reports of the blocks' interior kernels.
    pub fn tuning(&self) -> Vec<&super::TuneReport> {
        self.blocks.iter().map(|b| b.backend.tuning()).collect()
    }

    /// Queues one iteration of every block and the exchange of its halos.
    fn iterate(&mut self, norms: bool) -> Result<(), BackendError> {
        for id in 0..self.blocks.len() {
            let b = &self.blocks[id].backend;
            let shift = match self.reference.0 == Some(id) {
                true => b.own_shift(),
                false => b.given_shift(),
            };
            self.step_block(id, shift, norms)?;
        }
        self.pull_halos()?;
        self.share_shift()?;
        self.parity = 1 - self.parity;
        Ok(())
    }

    /// Queues every halo into its block's current state (the faces were queued from the
    /// senders' `packed` events): from blocks of this process, then from those of others; then
    /// records each block's `unpacked`.
    fn pull_halos(&mut self) -> Result<(), BackendError> {
        for l in &self.links {
            self.pull_halo(l)?;
        }
        let cur = |b: &Block<R>| b.backend.state.cur();
        let (blocks, parity) = (&self.blocks, self.parity);
        self.remote
            .exchange(blocks, parity, cur, &mut self.transport)?;
        for b in &self.blocks {
            b.unpacked.record(&b.comm).check("recording an event")?;
        }
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
        self.send_faces(id, &be.state.next())?;
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

    /// Queues on block `id`'s communication stream the faces it sends from `next` (the state
    /// being computed): packed into this iteration's send buffers (and staged to pinned memory
    /// for a host exchange), or, without packing, copied as boxes to pinned memory (a device
    /// exchange without packing has nothing to send: `pull_halo` reads the sender's state);
    /// and those for other processes.
    fn send_faces(&self, id: usize, next: &Vars) -> Result<(), BackendError> {
        let (b, p) = (&self.blocks[id], self.parity);
        let be = &b.backend;
        let next = *next;
        self.remote.queue_sends(&self.blocks, id, &next, p)?;
        for l in self.links.iter().filter(|l| l.from == id) {
            let face = Face {
                side: l.side.opposite(),
                vars: self.equations,
                reach: self.reach,
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
            reach: self.reach,
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
    /// the owner's new state, and the wait for its halos: the next step needs both. Between
    /// processes the owner's process reads the value (waiting for its step) and broadcasts it.
    fn share_shift(&mut self) -> Result<(), BackendError> {
        let (here, rank) = self.reference;
        let mut value = [R::zero()];
        if let Some(owner) = here.map(|o| &self.blocks[o]) {
            if self.transport.rank_size().1 > 1 {
                value[0] = owner.backend.own_pressure()?;
            }
        }
        self.transport.broadcast(&mut value, rank)?;
        match here {
            Some(o) => {
                let owner = &self.blocks[o];
                for b in self
                    .blocks
                    .iter()
                    .filter(|b| b.extent.id != owner.extent.id)
                {
                    let stream = &b.backend.device.stream;
                    stream.wait(&owner.stepped).check("waiting for an event")?;
                    let src = owner.backend.own_shift();
                    let (to, from) = (&b.backend.device, &owner.backend.device);
                    let size = std::mem::size_of::<R>();
                    copy_between(stream, to, b.backend.given_shift(), from, src, size)?;
                }
            }
            None => {
                for b in &mut self.blocks {
                    let be = &mut b.backend;
                    be.device
                        .stream
                        .memcpy_htod(bytes(&value), &mut be.shifts)
                        .check("copying the pressure shift to the device")?;
                }
            }
        }
        for b in &self.blocks {
            let stream = &b.backend.device.stream;
            stream.wait(&b.unpacked).check("waiting for an event")?;
        }
        Ok(())
    }

    /// Gives every block the pressure shift of the current state (after it was replaced): as
    /// after a step.
    fn reshift(&mut self) -> Result<(), BackendError> {
        for b in &self.blocks {
            let stream = &b.backend.device.stream;
            b.stepped.record(stream).check("recording an event")?;
            b.unpacked.record(&b.comm).check("recording an event")?;
        }
        self.share_shift()
    }

    /// Fills every halo from the current states (after an upload): the faces of one
    /// iteration's exchange, without the step; then the pressure shift.
    fn fill_halos(&mut self) -> Result<(), BackendError> {
        for id in 0..self.blocks.len() {
            let b = &self.blocks[id];
            let stream = &b.backend.device.stream;
            b.strips_done.record(stream).check("recording an event")?;
            b.stepped.record(stream).check("recording an event")?;
            b.comm.wait(&b.strips_done).check("waiting for an event")?;
            self.send_faces(id, &b.backend.state.cur())?;
            b.packed.record(&b.comm).check("recording an event")?;
        }
        self.pull_halos()?;
        self.share_shift()?;
        self.parity = 1 - self.parity;
        Ok(())
    }
}

/// The strips inside each interface, as wide as the widest halo (velocity and T `reach`
/// layers), of a block (the nodes its faces send), and the box of the other interior nodes.
/// Strips may share edges; nodes there are computed twice, to the same values.
fn split(layout: &Layout, e: &BlockExtent, reach: usize) -> (Vec<NodeBox>, NodeBox) {
    let mut inner = NodeBox::interior(layout);
    let mut strips = Vec::new();
    let width = halo_width(0, reach).max(halo_width(1, reach)) as i64;
    for side in Side::ALL {
        if e.neighbours[side as usize].is_none() {
            continue;
        }
        let a = side.axis();
        let mut s = NodeBox::interior(layout);
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

impl<R: Real, T: Transport<R>> Backend for MultiGpu<R, T> {
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
        let mut sums = Vec::with_capacity(self.blocks.len());
        for b in &self.blocks {
            sums.push((b.extent.id, b.backend.read_norms()?));
        }
        let (d, equations) = (&self.decomposition, self.equations);
        residuals_in_block_order(d, equations, sums, &mut self.transport)
    }

    fn layout(&self) -> Layout {
        self.layout
    }

    /// Every process gets the whole grid: each block's process shares it.
    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        let (d, blocks) = (&self.decomposition, &mut self.blocks);
        gather_everywhere(d, self.equations, &mut self.transport, |id| {
            let mut mine = blocks.iter_mut().filter(|b| b.extent.id == id);
            mine.next().map(|b| b.backend.download())
        })
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        let blocks = self.blocks.iter_mut().map(|b| (b.extent.id, b));
        let vars = self.equations;
        self.decomposition
            .scatter(fields, vars, "cuda", blocks, |b, f| {
                b.comm.synchronize().check("waiting for halos")?;
                b.backend.upload(f)
            })?;
        self.reshift()
    }

    /// This process's blocks as pieces ([`crate::pieces`]); no process gathers the grid.
    fn pieces(&mut self) -> Result<Vec<Snapshot<R>>, BackendError> {
        let mut local = Vec::with_capacity(self.blocks.len());
        for b in &mut self.blocks {
            b.comm.synchronize().check("waiting for halos")?;
            local.push((b.extent, b.backend.download()?));
        }
        crate::pieces::pieces(&self.decomposition, local, &mut self.transport)
    }

    fn piece_points(&self) -> Vec<Points> {
        let d = &self.decomposition;
        let extents = self.blocks.iter().map(|b| &b.extent);
        extents.map(|e| crate::pieces::piece_points(d, e)).collect()
    }

    /// Each block from its own piece, then its halos from their owners.
    fn restore_pieces(&mut self, pieces: &[Snapshot<R>]) -> Result<(), BackendError> {
        let expected = Backend::piece_points(self);
        check_pieces(pieces, &expected, self.equations, "cuda")?;
        let dim = self.decomposition.dim;
        for (b, piece) in self.blocks.iter_mut().zip(pieces) {
            b.comm.synchronize().check("waiting for halos")?;
            let f = crate::pieces::block_from_piece(&b.extent, dim, piece);
            b.backend.upload(&f)?;
        }
        self.fill_halos()
    }
}
