//! ferroflow-cpu: the CPU as a device for every scheme. Work runs on a rayon pool owned by
//! the solver that made it (never the global one), whose threads flush subnormal numbers to
//! zero ([`pool`]). The schemes' CPU kernels live with the schemes (`ferroflow-ac`'s `cpu`).
#![deny(missing_docs)]

mod denormals;
mod staggered;

pub use staggered::Staggered;

use ferroflow_core::BackendError;

/// A pool of `threads` worker threads (0 = one per core) that flush subnormals to zero.
pub fn pool(threads: usize) -> Result<rayon::ThreadPool, BackendError> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("cpu-{i}"))
        .start_handler(|_| denormals::flush_to_zero())
        .build()
        .map_err(|e| BackendError::Failed {
            backend: "cpu",
            message: e.to_string(),
        })
}
