//! ferroflow-parallel: moving packed halo buffers between the blocks of a decomposed mesh,
//! and the reductions across them. A [`Transport`] exchanges [`Halo`] links (packed values
//! and message tags; no mesh types): by copies between
//! blocks of one process ([`InProcess`]) or by MPI between processes (feature `mpi`). Each
//! scheme's decomposed driver (e.g. `ferroflow_ac::Decomposed`) uses it; it knows no scheme.
#![deny(missing_docs)]

#[cfg(feature = "mpi")]
mod mpi;
mod transport;

#[cfg(feature = "mpi")]
pub use self::mpi::Mpi;
pub use transport::{Halo, InProcess, Message, Transport};
