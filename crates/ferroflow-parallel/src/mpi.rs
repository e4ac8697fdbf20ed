//! MPI between processes (feature `mpi`): halos whose neighbour block lives in another
//! process travel as non-blocking point-to-point messages, sums and broadcasts are MPI
//! collectives. Values travel in their own precision. Raw messages ([`Message`]) may name GPU
//! memory where the library says it is CUDA-aware (Open MPI's `MPIX_Query_cuda_support`,
//! asked at run time).
use crate::transport::{swap_across, Halo, Message, Transport};
use ferroflow_core::{BackendError, Real};
use mpi::collective::SystemOperation;
use mpi::datatype::{AsDatatype, Collection, Pointer, PointerMut};
use mpi::environment::Universe;
use mpi::request::WaitGuard;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use mpi::{Rank, Tag, Threading};
use std::any::TypeId;
use std::ffi::c_void;
use std::rc::Rc;

/// Variables that MPI launchers set in the processes they start: Open MPI, Hydra (MPICH, Intel
/// MPI), PMIx (Open MPI 5, Slurm).
const LAUNCHER_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"];

/// This process's part of an MPI job, and the transport between the job's processes. Clones
/// share MPI, which is finalised when the last of them is dropped: the program keeps one for
/// as long as it communicates, the [`crate::Decomposed`] driver another.
#[derive(Clone)]
pub struct Mpi {
    universe: Rc<Universe>,
    /// Processes on this machine, and this one's number among them.
    here: usize,
    local: usize,
    /// Blocks of the decomposition, learned at the first exchange.
    blocks: Option<usize>,
    /// Per process, the lowest-numbered process on its machine.
    machines: Rc<Vec<usize>>,
    /// Whether the library reads and writes GPU memory itself.
    cuda_aware: bool,
}

impl Mpi {
    /// Initialises MPI and joins the job this process was started in by an MPI launcher
    /// (`mpirun`, `mpiexec`, `srun`). `None` when it runs alone: started without a launcher,
    /// in a job of one process, or MPI was initialised before (call this once, at the start).
    pub fn init() -> Option<Mpi> {
        // Without a launcher MPI would start a singleton job: slow, and fragile in containers.
        if !LAUNCHER_VARIABLES
            .iter()
            .any(|v| std::env::var_os(v).is_some())
        {
            return None;
        }
        // Only the main thread calls MPI; compute threads never do.
        let (universe, _) = mpi::initialize_with_threading(Threading::Funneled)?;
        let world = universe.world();
        if world.size() < 2 {
            return None;
        }
        let shared = world.split_shared(0);
        let mut first = world.rank();
        shared.process_at_rank(0).broadcast_into(&mut first);
        let mut machines = vec![0 as Rank; world.size() as usize];
        world.all_gather_into(&first, &mut machines[..]);
        Some(Mpi {
            here: shared.size() as usize,
            local: shared.rank() as usize,
            universe: Rc::new(universe),
            blocks: None,
            machines: Rc::new(machines.into_iter().map(|r| r as usize).collect()),
            cuda_aware: cuda_aware(),
        })
    }

    fn world(&self) -> SimpleCommunicator {
        self.universe.world()
    }

    /// This process's number and the number of processes.
    pub fn rank_size(&self) -> (usize, usize) {
        let world = self.world();
        (world.rank() as usize, world.size() as usize)
    }

    /// Number of processes on this machine, this one included (they share its cores).
    pub fn here(&self) -> usize {
        self.here
    }

    /// This process's number among those on its machine.
    pub fn local_rank(&self) -> usize {
        self.local
    }

    /// Ends every process of the job with exit code `code`: for a failure in one process while
    /// the others wait for it.
    pub fn abort(&self, code: u8) -> ! {
        self.world().abort(code.into())
    }

    /// Sums `values` over all processes (every process gets the sums).
    pub fn sum(&self, values: &mut [f64]) {
        let local = values.to_vec();
        self.world()
            .all_reduce_into(&local[..], values, SystemOperation::sum());
    }

    /// Number of blocks: one more than the largest block number in any process's halos (with
    /// more than one block every block has a neighbour; with one there are no halos).
    fn block_count<R>(&self, halos: &[Halo<R>]) -> usize {
        let local = halos
            .iter()
            .map(|h| h.block.max(h.neighbour) as u64 + 1)
            .max()
            .unwrap_or(0);
        let mut count = 0u64;
        self.world()
            .all_reduce_into(&local, &mut count, SystemOperation::max());
        count as usize
    }

    /// [`Transport::exchange`]: halos whose neighbour block is in this process are swapped,
    /// the others travel as messages of their values' bytes (the same type at both ends).
    fn exchange_halos<R: Real>(&mut self, halos: &mut [Halo<R>]) -> Result<(), BackendError> {
        let count = match self.blocks {
            Some(count) => count,
            None => *self.blocks.insert(self.block_count(halos)),
        };
        let (rank, _) = Mpi::rank_size(self);
        let peer =
            |block: usize| Some(Transport::<R>::owner(self, block, count)).filter(|r| *r != rank);
        for h in 0..halos.len() {
            if peer(halos[h].neighbour).is_none() {
                swap_across(halos, h)?;
            }
        }
        let size = std::mem::size_of::<R>();
        let (mut receives, mut sends) = (Vec::new(), Vec::new());
        for h in halos.iter_mut() {
            let Some(rank) = peer(h.neighbour) else {
                continue;
            };
            receives.push(Message {
                rank,
                tag: h.recv_tag,
                address: h.recv.as_mut_ptr() as usize,
                bytes: h.recv.len() * size,
            });
            sends.push(Message {
                rank,
                tag: h.send_tag,
                address: h.send.as_ptr() as usize,
                bytes: h.send.len() * size,
            });
        }
        // SAFETY: every message names a halo's own buffer, which nothing else touches until
        // the exchange returns.
        unsafe { self.exchange_raw(&sends, &receives) };
        Ok(())
    }

    /// Posts every receive and send, then waits for all of them.
    ///
    /// # Safety
    /// As [`Transport::exchange_bytes`].
    unsafe fn exchange_raw(&self, sends: &[Message], receives: &[Message]) {
        let world = self.world();
        let mut receives: Vec<Bytes> = receives.iter().map(|m| Bytes(*m)).collect();
        let sends: Vec<Bytes> = sends.iter().map(|m| Bytes(*m)).collect();
        mpi::request::scope(|scope| {
            let mut pending = Vec::new();
            for r in &mut receives {
                let (rank, tag) = (r.0.rank as Rank, r.0.tag as Tag);
                let process = world.process_at_rank(rank);
                let request = process.immediate_receive_into_with_tag(scope, r, tag);
                pending.push(WaitGuard::from(request));
            }
            for s in &sends {
                let process = world.process_at_rank(s.0.rank as Rank);
                let request = process.immediate_send_with_tag(scope, s, s.0.tag as Tag);
                pending.push(WaitGuard::from(request));
            }
            // Dropping the guards waits for every request.
        });
    }
}

/// Whether the MPI library takes GPU memory in messages: Open MPI's extension, looked up at run
/// time (other libraries lack the symbol: not CUDA-aware, as far as ferroflow can tell).
fn cuda_aware() -> bool {
    // SAFETY: a symbol lookup in the loaded libraries; the function, where present, takes no
    // arguments and returns an int (Open MPI's mpi-ext.h).
    unsafe {
        let f = libc::dlsym(libc::RTLD_DEFAULT, c"MPIX_Query_cuda_support".as_ptr());
        if f.is_null() {
            return false;
        }
        let query: extern "C" fn() -> std::ffi::c_int = std::mem::transmute(f);
        query() == 1
    }
}

/// Bytes at an address of a [`Message`], as MPI buffers.
struct Bytes(Message);

// SAFETY: the caller of `exchange_bytes` guarantees the address holds `bytes` bytes.
unsafe impl Pointer for Bytes {
    fn pointer(&self) -> *const c_void {
        self.0.address as *const c_void
    }
}

// SAFETY: as above.
unsafe impl PointerMut for Bytes {
    fn pointer_mut(&mut self) -> *mut c_void {
        self.0.address as *mut c_void
    }
}

// SAFETY: `bytes` elements of MPI bytes.
unsafe impl Collection for Bytes {
    fn count(&self) -> mpi::Count {
        self.0.bytes as mpi::Count
    }
}

// SAFETY: the datatype of u8.
unsafe impl AsDatatype for Bytes {
    type Out = <u8 as AsDatatype>::Out;
    fn as_datatype(&self) -> Self::Out {
        0u8.as_datatype()
    }
}

// SAFETY: the four traits above make a buffer of bytes.
unsafe impl mpi::datatype::Buffer for Bytes {}
// SAFETY: as above.
unsafe impl mpi::datatype::BufferMut for Bytes {}

/// `values` as the type `T` they are, if `R` is `T`: MPI needs to know whether a generic
/// [`Real`] is f64 or f32.
fn concrete<R: 'static, T: 'static>(values: &mut [R]) -> Option<&mut [T]> {
    // SAFETY: the types are the same, checked at run time.
    (TypeId::of::<R>() == TypeId::of::<T>())
        .then(|| unsafe { &mut *(values as *mut [R] as *mut [T]) })
}

impl<R: Real> Transport<R> for Mpi {
    fn rank_size(&self) -> (usize, usize) {
        Mpi::rank_size(self)
    }

    fn exchange(&mut self, halos: &mut [Halo<R>]) -> Result<(), BackendError> {
        self.exchange_halos(halos)
    }

    fn sum(&mut self, values: &mut [f64]) -> Result<(), BackendError> {
        Mpi::sum(self, values);
        Ok(())
    }

    fn broadcast(&mut self, values: &mut [R], root: usize) -> Result<(), BackendError> {
        let world = self.world();
        let root = world.process_at_rank(root as Rank);
        if let Some(values) = concrete::<_, f64>(values) {
            root.broadcast_into(values);
        } else if let Some(values) = concrete::<_, f32>(values) {
            root.broadcast_into(values);
        } else {
            unreachable!("Real is f64 or f32")
        }
        Ok(())
    }

    unsafe fn exchange_bytes(
        &mut self,
        sends: &[Message],
        receives: &[Message],
    ) -> Result<(), BackendError> {
        self.exchange_raw(sends, receives);
        Ok(())
    }

    fn device_memory(&self) -> bool {
        self.cuda_aware
    }

    fn machine(&self, rank: usize) -> usize {
        self.machines[rank]
    }
}
