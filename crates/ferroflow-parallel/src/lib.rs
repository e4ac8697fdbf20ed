//! ferroflow-parallel: runs a decomposed grid as one [`Backend`].
//!
//! [`Decomposed`] holds the blocks this process iterates (any [`BlockBackend`]: CPU blocks,
//! or GPU blocks staged through the host) and a [`Transport`] that moves packed halo buffers
//! between blocks: in-process copies ([`InProcess`]) or MPI between processes (feature
//! `mpi`). Each iteration: the whole grid's pressure reference value is shared, every block
//! takes one step, then every interface face is packed, exchanged and unpacked. The result
//! is the one-block result, bit for bit: the blocks do the same arithmetic on the same
//! values, only the residual sums are added in another order.
#![deny(missing_docs)]

mod decomposed;
#[cfg(feature = "mpi")]
mod mpi;
mod transport;

#[cfg(feature = "mpi")]
pub use self::mpi::Mpi;
pub use decomposed::Decomposed;
pub use transport::{Halo, InProcess, Transport};
