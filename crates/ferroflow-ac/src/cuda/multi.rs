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
//!
//! The copies themselves, and the peer access they rely on, come from `ferroflow-cuda` and
//! [`super::boxes`]; this module decides what is copied when.
use super::backend::{CudaBackend, CudaOptions};
use super::boxes::{copy_boxes, BoxCopy};
use super::launch::NodeBox;
use crate::blocks::block_problem;
use crate::iteration::finish;
use crate::Problem;
use ferroflow_core::decomposition::{halo_width, BlockExtent, Decomposition, Face};
use ferroflow_core::{Backend, BackendError, Fields, Layout, Real, Residuals, Side};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{CudaEvent, CudaSlice, CudaStream, PinnedHostSlice};
use ferroflow_cuda::{address, Check, Device};
use ferroflow_cuda::{copy_between, copy_raw, enable_peer_access, host_ptr, pinned, HaloRoute};
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
struct Block<R: Real> {
    backend: CudaBackend<R>,
    extent: BlockExtent,
    /// Packs faces and pulls halos.
    comm: Arc<CudaStream>,
    /// Boxes next to the interfaces (computed first with overlap) and the rest.
    strips: Vec<NodeBox>,
    inner: NodeBox,
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
    /// The whole grid's layout.
    layout: Layout,
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
        let devices: Vec<&Device> = blocks.iter().map(|b| &b.backend.device).collect();
        let peer_access = enable_peer_access(&devices)?;
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
        let (reference, _) = decomposition.owner(problem.pressure_ref);
        Ok(MultiGpu {
            decomposition,
            blocks,
            links,
            options: options.clone(),
            reference,
            equations: problem.equations(),
            layout: problem.layout,
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
    pub fn tuning(&self) -> Vec<&super::TuneReport> {
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
fn split(layout: &Layout, e: &BlockExtent) -> (Vec<NodeBox>, NodeBox) {
    let mut inner = NodeBox::interior(layout);
    let mut strips = Vec::new();
    let width = halo_width(0) as i64;
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
        let sums = self.blocks.iter().map(|b| b.backend.read_norms());
        let sums = sums.collect::<Result<Vec<_>, _>>()?;
        Ok(self.decomposition.sum_residuals(self.equations, sums))
    }

    fn layout(&self) -> Layout {
        self.layout
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        // `new` sets up every block in order: block `id` is `blocks[id]`.
        let blocks = &mut self.blocks;
        self.decomposition
            .gather(self.equations, |e| blocks[e.id].backend.download())
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
