//! The scheme on NVIDIA GPUs (feature `cuda`, on by default), on the runtime of `ferroflow-cuda`.
//! [`CudaBackend`] runs the CPU backend's iteration on a GPU and gives the same answers: the
//! kernels in `kernels/*.cu` of this crate are `__device__` twins of [`crate::cpu::formulas`]
//! and of its fused pass, with the same operation order, compiled
//! without fused multiply-adds by default ([`CudaOptions::fmad`]) and with IEEE division and
//! square root, so that states round as on the CPU. They can differ only where values pass
//! through the subnormal range: the CPU flushes them to zero, the GPU does so in f32 only.
//!
//! - The CUDA driver and NVRTC are loaded at run time (nothing is needed to build). Without
//!   them, or without a device, [`CudaBackend::new`] and [`ferroflow_cuda::probe`] say
//!   exactly what is missing ([`ferroflow_core::BackendError::Unavailable`]).
//! - The kernel sources are embedded and compiled with NVRTC at start for the device's
//!   architecture, with the real type and the launch shape as `-D` macros ([`programs`]). The
//!   cubins are cached on disk (`cubin/` in the cache directory below, keyed by a digest of
//!   NVRTC's version, the options and the source); `FERROFLOW_CUDA_DISABLE_CACHE=1` turns
//!   that cache off.
//! - The state lives on the device for the whole run (two buffers per variable, swapped);
//!   residual norms are reduced on the device in a fixed order and copied back only for the
//!   last iteration of each [`ferroflow_core::Backend::advance`] call. The iterations before it
//!   replay CUDA graphs ([`CudaOptions::graph_iterations`]).
//! - The interior kernel's launch shape is autotuned and cached on disk
//!   (`FERROFLOW_CUDA_CACHE_DIR`, default `~/.cache/ferroflow`): see [`TuneMode`] and
//!   [`CudaBackend::tuning`], whose [`TuneReport`] prints the timing table.
//!
//! Benchmarks (`ferroflow bench --backend cuda`) report the solver's throughput against the
//! roofline of the same run: [`ferroflow_cuda::copy_bandwidth`] measures device-to-device copy bandwidth
//! (bytes read + written per second). One iteration moves at least every variable once in and
//! once out, `2 × (1 + dim) × size_of::<R>()` bytes per interior node, so the roofline in node
//! updates per second is `copy_bandwidth(..) / that`:
//!
//! ```no_run
//! use ferroflow_ac::cuda::{CudaBackend, CudaOptions};
//! use ferroflow_ac::Numerics;
//! use ferroflow_core::Backend;
//! use ferroflow_cuda::copy_bandwidth;
//!
//! let numerics = Numerics::default();
//! let problem = ferroflow_cases::cavity::lid_driven::<f64>(2, [4097; 3], 1000.0, 1.0, numerics)?;
//! let bandwidth = copy_bandwidth(0, 1 << 30, 20)?;
//! let mut backend = CudaBackend::new(&problem, &CudaOptions::default())?;
//! print!("{}", backend.tuning());
//! backend.advance(100)?; // warm-up: graphs are captured on first use
//! let start = std::time::Instant::now();
//! backend.advance(1000)?; // returns after the last iteration has finished
//! let rate = problem.layout.interior_nodes() as f64 * 1000.0 / start.elapsed().as_secs_f64();
//! let roofline = bandwidth / (2 * 3 * 8) as f64;
//! println!("{:.1} G node-updates/s, {:.0}% of roofline", rate / 1e9, 100.0 * rate / roofline);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backend;
mod boxes;
mod implicit;
mod launch;
mod multi;
mod multigrid;
pub mod programs;
mod remote;
mod state;
mod tune;

pub use backend::{CudaBackend, CudaOptions};
pub use launch::LaunchShape;
pub use multi::{MultiGpu, MultiGpuOptions};
pub use multigrid::multigrid;
pub use remote::Route;
pub use tune::{candidates, TuneMode, TuneReport, DEFAULT_SHAPE};
