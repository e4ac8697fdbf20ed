//! ferroflow-cuda: the CUDA runtime every scheme's GPU backend builds on. It names no scheme:
//! the crates that own kernels (ferroflow-ac for the structured artificial-compressibility
//! scheme) embed their `.cu` files as [`KernelSource`]s and use what is here.
//!
//! - [`Device`]: a device opened with its context and the one stream its work runs on; the
//!   CUDA driver and NVRTC are loaded at run time (nothing is needed to build), and without
//!   them, or without a device, [`Device::open`] and [`probe`] say exactly what is missing
//!   ([`ferroflow_core::BackendError::Unavailable`]). Driver errors name the call that failed
//!   ([`Check`]).
//! - [`compile`]: a [`Build`] (source, precision, `-D` macros, rounding) compiled with NVRTC to
//!   machine code for the device's architecture. [`Device::compile`] goes through an on-disk
//!   cubin cache (`cubin/` in the cache directory, keyed by a digest of NVRTC's version, the
//!   options and the source; `FERROFLOW_CUDA_DISABLE_CACHE=1` turns it off).
//! - [`tune()`]: any [`Tunable`] kernel's launch shape, timed with CUDA events and cached on
//!   disk (`FERROFLOW_CUDA_CACHE_DIR`, default `~/.cache/ferroflow`), with a [`TuneReport`].
//! - [`ReduceKernel`]: fixed-order sums of per-block partial sums, so that norms computed on the
//!   device do not depend on timing.
//! - Peer access, pinned staging buffers and copies between devices ([`enable_peer_access`],
//!   [`copy_between`], ...), and the bandwidths rooflines divide into: [`copy_bandwidth`]
//!   (device-to-device copy, bytes read + written per second) and [`link_bandwidth`].
//! - [`ipc`]: buffers and events shared between processes of one machine.
#![deny(missing_docs)]

mod bandwidth;
mod cache;
pub mod compile;
mod device;
pub mod ipc;
mod peer;
mod reduce;
mod tune;

pub use bandwidth::{copy_bandwidth, copy_build};
pub use compile::{Build, KernelSource, Scalar};
/// The driver and NVRTC bindings this crate uses, for the crates that launch kernels.
pub use cudarc;
pub use device::{
    address, device_count, grid, l2_cache_bytes, median, probe, Check, Device, Timer, GIB,
};
pub use peer::{
    copy_between, copy_raw, enable_peer_access, host_ptr, link_bandwidth, pinned, HaloRoute,
};
pub use reduce::{reduce_build, ReduceKernel};
pub use tune::{tune, Tunable, TuneMode, TuneReport, TuneRow, TuneSource};
