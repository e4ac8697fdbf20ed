//! ferroflow-solver: the backend-agnostic driver (pseudo-time loop, convergence, divergence),
//! case files, verification problems (manufactured solutions, lid-driven and buoyancy-driven
//! cavities with published reference data), result files (VTK fields, CSV, JSON) and checkpoints.
#![deny(missing_docs)]

pub mod case;
pub mod cavity;
pub mod checkpoint;
pub mod convection;
pub mod mms;
pub mod output;
pub mod reference;
pub mod simulation;
pub mod vtk;

pub use case::{Case, CaseError};
pub use simulation::{
    Callback, Flow, Outcome, Progress, RunError, Schedule, Simulation, SolveError, StopCriteria,
};
