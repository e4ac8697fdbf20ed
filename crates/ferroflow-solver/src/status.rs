//! How a run ended, and its residual history as a table.
use crate::simulation::HistoryRow;
use serde::Serialize;
use std::io;
use std::path::Path;

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every residual reached the tolerance.
    Converged,
    /// The iteration limit came first.
    MaxIterations,
    /// The residuals stopped falling before they reached the tolerance (see
    /// [`crate::simulation::STALL_DROP`]).
    Stalled,
    /// Stopped by a signal (Ctrl-C, SIGTERM); a checkpoint allows continuing.
    Interrupted,
    /// Residuals became non-finite or grew without bound.
    Diverged,
    /// The state left the bounds physics gives it (a grid-scale instability that the
    /// residuals, locked in a checkerboard, do not show).
    Unstable,
}

/// Writes the residual history (`iteration,<name>...`).
pub fn write_residuals(path: &Path, names: &[&str], history: &[HistoryRow]) -> io::Result<()> {
    let mut header = vec!["iteration"];
    header.extend_from_slice(names);
    let rows = history.iter().map(|row| {
        let mut rec = vec![row.iteration.to_string()];
        rec.extend(row.relative.iter().map(|r| format!("{r:e}")));
        rec
    });
    ferroflow_io::table::write_csv(path, &header, rows)
}
