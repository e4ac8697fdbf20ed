//! ferroflow-solver: the driver, which knows no scheme, case or device. [`Simulation`]
//! advances a [`ferroflow_core::Solver`] in chunks, watches the residuals (convergence,
//! divergence, stalls, the iteration limit) and calls the [`Callback`]s registered with it
//! when their [`Schedule`]s fall due: progress, signals, snapshots, checkpoints
//! ([`checkpoint`]).
#![deny(missing_docs)]

pub mod checkpoint;
pub mod simulation;
mod status;

pub use simulation::{
    Callback, Flow, Outcome, Progress, RunError, Schedule, Simulation, SolveError, Stall,
    StopCriteria, IMPLICIT_STALL_CHECKS, STALL_CHECKS,
};
pub use status::{write_residuals, Status};
