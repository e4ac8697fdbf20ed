//! The processes of a run: this one alone, or (feature `mpi`, started by an MPI launcher) the
//! processes of an MPI job. Every process iterates its blocks and takes part in every
//! collective step; only the first writes files and speaks. What can differ between processes
//! (a signal, a failure) is agreed on, so that none waits for the others forever and all end
//! with the same exit code. Residual norms are the same sums in every process (an MPI
//! all-reduce), so convergence, divergence and the schedule of checkpoints and snapshots are
//! decided alike everywhere without further agreement.
use crate::Failure;
#[cfg(feature = "mpi")]
use ferroflow_parallel::Mpi;

/// The processes of this run.
pub struct World {
    /// The MPI job, when this process is one of several.
    #[cfg(feature = "mpi")]
    mpi: Option<Mpi>,
}

impl World {
    /// This process alone.
    pub fn alone() -> World {
        World {
            #[cfg(feature = "mpi")]
            mpi: None,
        }
    }

    /// The MPI job this process was started in, if any; else this process alone.
    pub fn join() -> World {
        World {
            #[cfg(feature = "mpi")]
            mpi: Mpi::init(),
        }
    }

    /// The MPI job, when this process is one of several.
    #[cfg(feature = "mpi")]
    pub fn mpi(&self) -> Option<&Mpi> {
        self.mpi.as_ref()
    }

    /// This process's number and the number of processes.
    pub fn rank_size(&self) -> (usize, usize) {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            return mpi.rank_size();
        }
        (0, 1)
    }

    /// Number of processes on this machine (they share its cores).
    pub fn here(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            return mpi.here();
        }
        1
    }

    /// This process's number among the processes on its machine.
    pub fn local_rank(&self) -> usize {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            return mpi.local_rank();
        }
        0
    }

    /// Whether this process writes the results and reports.
    pub fn is_root(&self) -> bool {
        self.rank_size().0 == 0
    }

    /// `values` summed over the processes.
    pub fn sum(&self, values: Vec<f64>) -> Vec<f64> {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            let mut values = values;
            mpi.sum(&mut values);
            return values;
        }
        values
    }

    /// Every process's `value`, in process order (NaN stays in its own place).
    pub fn each(&self, value: f64) -> Vec<f64> {
        let (rank, size) = self.rank_size();
        let mut values = vec![0.0; size];
        values[rank] = value;
        self.sum(values)
    }

    /// Whether `flag` is set in any process.
    pub fn any(&self, flag: bool) -> bool {
        self.sum(vec![f64::from(u8::from(flag))])[0] > 0.0
    }

    /// The outcome of a step every process takes, settled: if it failed anywhere, it fails
    /// everywhere, with the exit code of the lowest-numbered process that failed with a message.
    /// That process keeps the message (the first one, when all fail alike, as with bad input);
    /// the others fail silently (an empty message). Settling twice changes nothing.
    pub fn agree<T>(&self, result: Result<T, Failure>) -> Result<T, Failure> {
        let (rank, size) = self.rank_size();
        if size == 1 {
            return result;
        }
        // Per process: its exit code (0: none) and whether it has a message.
        let mut mine = vec![0.0; 2 * size];
        if let Err(f) = &result {
            mine[2 * rank] = f64::from(f.code);
            mine[2 * rank + 1] = f64::from(u8::from(!f.message.is_empty()));
        }
        let all = self.sum(mine);
        let failed = |r: &usize| all[2 * r] != 0.0;
        let speaks = |r: &usize| all[2 * r + 1] != 0.0;
        let Some(first) = (0..size).find(speaks).or_else(|| (0..size).find(failed)) else {
            return result;
        };
        let code = all[2 * first] as u8;
        Err(match result {
            Err(f) if rank == first => f,
            _ => Failure {
                code,
                message: String::new(),
            },
        })
    }

    /// A failure of this process alone in a step the others wait in (a backend failing inside
    /// an iteration or a download): nothing can settle it, so in an MPI job it is reported and
    /// the whole job ends with its exit code. Alone, it is returned.
    pub fn fail_alone(&self, failure: Failure) -> Failure {
        #[cfg(feature = "mpi")]
        if let Some(mpi) = &self.mpi {
            eprintln!("error: process {}: {}", self.rank_size().0, failure.message);
            mpi.abort(failure.code);
        }
        failure
    }
}
