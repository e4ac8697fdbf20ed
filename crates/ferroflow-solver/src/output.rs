//! Result files: summary.json, residuals.csv, centreline profiles, MMS tables.
use crate::convection::HeatTransfer;
use crate::mms::MmsRow;
use crate::simulation::HistoryRow;
use serde::Serialize;
use std::io;
use std::path::Path;

/// Contents of `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Case name.
    pub case: String,
    /// 2 or 3.
    pub dim: usize,
    /// Nodes per axis.
    pub grid: Vec<usize>,
    /// `f64` or `f32`.
    pub precision: String,
    /// Backend name.
    pub backend: String,
    /// Iterations done.
    pub iterations: usize,
    /// Whether the tolerance was reached.
    pub converged: bool,
    /// How the run ended.
    pub status: Status,
    /// Final relative residual per equation, by variable name.
    pub residuals: serde_json::Map<String, serde_json::Value>,
    /// Wall time of the iterations, seconds.
    pub wall_seconds: f64,
    /// Interior node updates per second.
    pub node_updates_per_second: f64,
    /// Deviations from reference data, if the case has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<Deviation>,
    /// Buoyancy-driven cavity: Ra, Pr, Nusselt numbers, energy balance, velocity maxima.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heat_transfer: Option<HeatTransfer>,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every residual reached the tolerance.
    Converged,
    /// The iteration limit came first.
    MaxIterations,
    /// Stopped by a signal (Ctrl-C, SIGTERM); a checkpoint allows continuing.
    Interrupted,
    /// Residuals became non-finite or grew without bound.
    Diverged,
}

/// Largest deviation of a computed profile from a published one.
#[derive(Debug, Clone, Serialize)]
pub struct Deviation {
    /// Which profile (e.g. `u(y) at x = 0.5`).
    pub profile: String,
    /// Source of the reference data.
    pub source: String,
    /// Largest absolute deviation over the reference stations.
    pub max_abs_deviation: f64,
    /// Station where it occurs.
    pub at: f64,
}

/// Writes `summary.json`.
pub fn write_summary(path: &Path, summary: &Summary) -> io::Result<()> {
    let text = serde_json::to_string_pretty(summary).map_err(io::Error::other)?;
    std::fs::write(path, text + "\n")
}

/// Writes the residual history (`iteration,<name>...`).
pub fn write_residuals(path: &Path, names: &[&str], history: &[HistoryRow]) -> io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    let mut header = vec!["iteration"];
    header.extend_from_slice(names);
    w.write_record(&header)?;
    for row in history {
        let mut rec = vec![row.iteration.to_string()];
        rec.extend(row.relative.iter().map(|r| format!("{r:e}")));
        w.write_record(&rec)?;
    }
    w.flush()
}

/// Writes a two-column profile with the given header names.
pub fn write_profile(path: &Path, header: [&str; 2], points: &[(f64, f64)]) -> io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record(header)?;
    for (x, y) in points {
        w.write_record([x.to_string(), y.to_string()])?;
    }
    w.flush()
}

/// Writes the MMS error table (`n,variable,l2_error,linf_error,l2_order,linf_order`).
pub fn write_mms(path: &Path, rows: &[MmsRow]) -> io::Result<()> {
    let mut w = csv::Writer::from_path(path)?;
    w.write_record([
        "n",
        "variable",
        "l2_error",
        "linf_error",
        "l2_order",
        "linf_order",
    ])?;
    let opt = |o: Option<f64>| o.map(|o| format!("{o:.4}")).unwrap_or_default();
    for r in rows {
        w.write_record([
            r.n.to_string(),
            r.variable.to_string(),
            format!("{:e}", r.l2_error),
            format!("{:e}", r.linf_error),
            opt(r.l2_order),
            opt(r.linf_order),
        ])?;
    }
    w.flush()
}
