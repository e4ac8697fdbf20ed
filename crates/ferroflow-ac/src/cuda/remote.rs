//! Halos between a block of this process and one of another (MPI) process, for [`super::MultiGpu`].
//! Faces are always packed on the device; then they travel one of three ways ([`Route`]):
//!
//! - `Ipc`: both processes on one machine: the receiver's buffers are opened in the sender
//!   (CUDA IPC), which packs straight into them and records an interprocess event; a message of
//!   no bytes tells the receiver, whose stream then waits for that event. No host copy, and the
//!   host never waits for the device.
//! - `Device`: CUDA-aware MPI moves the packed face from device to device; the host waits for
//!   the packing first.
//! - `Host`: the face is copied to pinned host memory, sent by MPI into pinned memory, and
//!   copied up.
//!
//! Each iteration's faces go into one of two buffers by parity (as between blocks of one
//! process), so a sender two iterations ahead never overwrites a face not yet unpacked; with
//! `Ipc` the events alternate too, so a sender records an event again only after the receiver
//! has queued its wait for the last record (it has sent the next iteration's message by then).
use super::launch::Vars;
use super::multi::Block;
use crate::decomposed::face_tag;
use ferroflow_core::decomposition::{BlockExtent, Face};
use ferroflow_core::{BackendError, Real, Side};
use ferroflow_cuda::cudarc::driver::{CudaSlice, PinnedHostSlice};
use ferroflow_cuda::ipc::{Handle, OpenedBuffer, OpenedEvent, SharedBuffer, SharedEvent};
use ferroflow_cuda::{address, copy_raw, host_ptr, pinned, Check};
use ferroflow_parallel::{Message, Transport};

/// How faces travel between processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// GPU to GPU within a machine, through buffers and events shared between the processes.
    Ipc,
    /// GPU to GPU by CUDA-aware MPI.
    Device,
    /// Through pinned host memory and MPI.
    Host,
}

/// A face this process sends to a block of another.
struct Outgoing {
    route: Route,
    /// The sending block's index in the process's blocks.
    from: usize,
    /// The face it packs.
    face: Face,
    rank: usize,
    tag: usize,
    bytes: usize,
    /// Packed faces by parity (`Device`, `Host`).
    packed: Vec<CudaSlice<u8>>,
    /// Pinned staging by parity (`Host`).
    host: Vec<PinnedHostSlice<u8>>,
    /// The receiver's buffers by parity, opened here, and the events saying they are filled
    /// (`Ipc`).
    opened: Vec<OpenedBuffer>,
    filled: Vec<SharedEvent>,
}

/// A halo this process receives from a block of another.
struct Incoming {
    route: Route,
    /// The receiving block's index in the process's blocks.
    to: usize,
    face: Face,
    rank: usize,
    tag: usize,
    bytes: usize,
    /// The face as it arrives (`Device`, `Host`).
    arrived: Option<CudaSlice<u8>>,
    /// Pinned staging (`Host`).
    host: Option<PinnedHostSlice<u8>>,
    /// Buffers the sender fills, by parity, and its events, opened here (`Ipc`).
    shared: Vec<SharedBuffer>,
    filled: Vec<OpenedEvent>,
}

/// The links of this process's blocks to blocks of other processes.
pub(super) struct Remote {
    sends: Vec<Outgoing>,
    receives: Vec<Incoming>,
}

impl Remote {
    /// The links of `blocks` (this process's, with their extents) to the blocks of other
    /// processes (of `count` blocks in all), whose faces carry `vars` variables `reach` layers
    /// deep (`Face`): `Ipc` to a process of this machine if `ipc`, else
    /// `Device` if the transport is CUDA-aware, else `Host` (both ends decide alike). Buffers
    /// and events of `Ipc` are exchanged here.
    pub fn new<R: Real, T: Transport<R>>(
        blocks: &[Block<R>],
        (vars, reach): (usize, usize),
        ipc: bool,
        count: usize,
        transport: &mut T,
    ) -> Result<Remote, BackendError> {
        let mut remote = Remote {
            sends: Vec::new(),
            receives: Vec::new(),
        };
        let here = transport.rank_size().0;
        for (index, b) in blocks.iter().enumerate() {
            let e: &BlockExtent = &b.extent;
            let device = &b.backend.device;
            for side in Side::ALL {
                let Some(other) = e.neighbours[side as usize] else {
                    continue;
                };
                let rank = transport.owner(other, count);
                if rank == here {
                    continue;
                }
                let route = if ipc && transport.machine(rank) == transport.machine(here) {
                    Route::Ipc
                } else if transport.device_memory() {
                    Route::Device
                } else {
                    Route::Host
                };
                let face = Face { side, vars, reach };
                let bytes = face.len(&b.backend.layout) * std::mem::size_of::<R>();
                let alloc = || {
                    device
                        .stream
                        .alloc_zeros::<u8>(bytes)
                        .check("allocating a halo buffer")
                };
                let mut out = Outgoing {
                    route,
                    from: index,
                    face,
                    rank,
                    tag: face_tag(other, side.opposite()),
                    bytes,
                    packed: Vec::new(),
                    host: Vec::new(),
                    opened: Vec::new(),
                    filled: Vec::new(),
                };
                let mut inc = Incoming {
                    route,
                    to: index,
                    face,
                    rank,
                    tag: face_tag(e.id, side),
                    bytes,
                    arrived: None,
                    host: None,
                    shared: Vec::new(),
                    filled: Vec::new(),
                };
                match route {
                    Route::Ipc => {
                        for _ in 0..2 {
                            inc.shared.push(SharedBuffer::new(device, bytes)?);
                            out.filled.push(SharedEvent::new(device)?);
                        }
                    }
                    Route::Device | Route::Host => {
                        out.packed = vec![alloc()?, alloc()?];
                        inc.arrived = Some(alloc()?);
                        if route == Route::Host {
                            out.host = vec![pinned(device, bytes)?, pinned(device, bytes)?];
                            inc.host = Some(pinned(device, bytes)?);
                        }
                    }
                }
                remote.sends.push(out);
                remote.receives.push(inc);
            }
        }
        remote.open_peers(blocks, transport)?;
        Ok(remote)
    }

    /// `Ipc` links: each receiver gives its sender its buffers, each sender its receiver its
    /// events, and both open what they get.
    fn open_peers<R: Real, T: Transport<R>>(
        &mut self,
        blocks: &[Block<R>],
        transport: &mut T,
    ) -> Result<(), BackendError> {
        let receives = self.receives.iter().filter(|i| i.route == Route::Ipc);
        let sends = self.sends.iter().filter(|o| o.route == Route::Ipc);
        let give = receives.map(|i| (i.rank, i.tag, i.shared.iter().map(SharedBuffer::handle)));
        let give = give.map(|(r, t, h)| Ok((r, t, h.collect::<Result<Vec<_>, _>>()?)));
        let give = give.collect::<Result<Vec<_>, BackendError>>()?;
        let got = trade(transport, give, sends.map(|o| (o.rank, o.tag)))?;
        let sends = self.sends.iter_mut().filter(|o| o.route == Route::Ipc);
        for (out, handles) in sends.zip(got) {
            let device = &blocks[out.from].backend.device;
            for h in handles {
                out.opened.push(OpenedBuffer::open(device, &h)?);
            }
        }
        let receives = self.receives.iter().filter(|i| i.route == Route::Ipc);
        let sends = self.sends.iter().filter(|o| o.route == Route::Ipc);
        let give = sends.map(|o| (o.rank, o.tag, o.filled.iter().map(SharedEvent::handle)));
        let give = give.map(|(r, t, h)| Ok((r, t, h.collect::<Result<Vec<_>, _>>()?)));
        let give = give.collect::<Result<Vec<_>, BackendError>>()?;
        let got = trade(transport, give, receives.map(|i| (i.rank, i.tag)))?;
        let receives = self.receives.iter_mut().filter(|i| i.route == Route::Ipc);
        for (inc, handles) in receives.zip(got) {
            let device = &blocks[inc.to].backend.device;
            for h in handles {
                inc.filled.push(OpenedEvent::open(device, &h)?);
            }
        }
        Ok(())
    }

    /// The routes in use, each once.
    pub fn routes(&self) -> Vec<Route> {
        let mut routes: Vec<Route> = Vec::new();
        for r in self.sends.iter().map(|o| o.route) {
            if !routes.contains(&r) {
                routes.push(r);
            }
        }
        routes
    }

    /// Queues on block `index`'s communication stream the faces it sends to other processes
    /// from `state`, into this iteration's (`parity`) buffers.
    pub fn queue_sends<R: Real>(
        &self,
        blocks: &[Block<R>],
        index: usize,
        state: &Vars,
        parity: usize,
    ) -> Result<(), BackendError> {
        let b = &blocks[index];
        let be = &b.backend;
        for out in self.sends.iter().filter(|o| o.from == index) {
            let target = match out.route {
                Route::Ipc => out.opened[parity].address(),
                Route::Device | Route::Host => address(&out.packed[parity], &be.device.stream),
            };
            be.queue_face(&b.comm, state, &out.face, target, false)?;
            match out.route {
                Route::Ipc => out.filled[parity].record(&b.comm)?,
                Route::Host => copy_raw(&b.comm, host_ptr(&out.host[parity])?, target, out.bytes)?,
                Route::Device => {}
            }
        }
        Ok(())
    }

    /// Moves this iteration's faces (the senders' `packed` events recorded after
    /// [`Remote::queue_sends`]) and queues their unpacking into each receiving block's
    /// `state(block)` on its communication stream.
    pub fn exchange<R: Real, T: Transport<R>>(
        &self,
        blocks: &[Block<R>],
        parity: usize,
        state: impl Fn(&Block<R>) -> Vars,
        transport: &mut T,
    ) -> Result<(), BackendError> {
        // MPI reads only what the device has finished writing.
        for (index, b) in blocks.iter().enumerate() {
            if self
                .sends
                .iter()
                .any(|o| o.from == index && o.route != Route::Ipc)
            {
                b.packed.synchronize().check("waiting for packed faces")?;
            }
        }
        let (mut sends, mut receives) = (Vec::new(), Vec::new());
        for out in &self.sends {
            let (address, bytes) = match out.route {
                // The message only says the face is there.
                Route::Ipc => (std::ptr::NonNull::<u8>::dangling().as_ptr() as usize, 0),
                Route::Device => {
                    let stream = &blocks[out.from].backend.device.stream;
                    (address(&out.packed[parity], stream) as usize, out.bytes)
                }
                Route::Host => (host_ptr(&out.host[parity])? as usize, out.bytes),
            };
            sends.push(Message {
                rank: out.rank,
                tag: out.tag,
                address,
                bytes,
            });
        }
        for inc in &self.receives {
            let (address, bytes) = match (inc.route, &inc.host, &inc.arrived) {
                (Route::Ipc, ..) => (std::ptr::NonNull::<u8>::dangling().as_ptr() as usize, 0),
                (_, Some(host), _) => (host_ptr(host)? as usize, inc.bytes),
                (_, None, Some(arrived)) => {
                    let stream = &blocks[inc.to].backend.device.stream;
                    (address(arrived, stream) as usize, inc.bytes)
                }
                _ => unreachable!("Device and Host receives have a buffer"),
            };
            receives.push(Message {
                rank: inc.rank,
                tag: inc.tag,
                address,
                bytes,
            });
        }
        // SAFETY: every address is a buffer of this link of its bytes (device memory only on a
        // route the transport reads it on), not written by the device until this returns: the
        // faces are packed (waited for above) and the last unpack of a receive buffer came
        // before this iteration's packing.
        unsafe { transport.exchange_bytes(&sends, &receives)? };
        for inc in &self.receives {
            let b = &blocks[inc.to];
            let be = &b.backend;
            let from = match (inc.route, &inc.arrived) {
                (Route::Ipc, _) => {
                    inc.filled[parity].wait(&b.comm)?;
                    inc.shared[parity].address()
                }
                (_, Some(arrived)) => {
                    let arrived = address(arrived, &be.device.stream);
                    if let Some(host) = &inc.host {
                        copy_raw(&b.comm, arrived, host_ptr(host)?, inc.bytes)?;
                    }
                    arrived
                }
                _ => unreachable!("Device and Host receives have a buffer"),
            };
            be.queue_face(&b.comm, &state(b), &inc.face, from, true)?;
        }
        Ok(())
    }
}

/// Sends each `(rank, tag, handles)` of `give` and receives two handles from each
/// `(rank, tag)` of `get`, in its order.
fn trade<R: Real, T: Transport<R>>(
    transport: &mut T,
    give: Vec<(usize, usize, Vec<Handle>)>,
    get: impl Iterator<Item = (usize, usize)>,
) -> Result<Vec<Vec<Handle>>, BackendError> {
    let message = |(rank, tag): (usize, usize), address: usize, handles: usize| Message {
        rank,
        tag,
        address,
        bytes: handles * std::mem::size_of::<Handle>(),
    };
    let get: Vec<(usize, usize)> = get.collect();
    let mut got = vec![vec![[0u8; 64]; 2]; get.len()];
    let sends: Vec<Message> = give
        .iter()
        .map(|(r, t, h)| message((*r, *t), h.as_ptr() as usize, h.len()))
        .collect();
    let receives: Vec<Message> = get
        .iter()
        .zip(got.iter_mut())
        .map(|(rt, h)| message(*rt, h.as_mut_ptr() as usize, h.len()))
        .collect();
    // SAFETY: every message names a live vector of its length, which nothing else touches
    // until the exchange returns.
    unsafe { transport.exchange_bytes(&sends, &receives)? };
    Ok(got)
}
