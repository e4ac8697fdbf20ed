//! The summary of a run (`summary.json`) and the tables a case's results add: centreline
//! profiles and the manufactured-solution study.
use crate::convection::HeatTransfer;
use crate::mms::MmsRow;
use ferroflow_io::table::write_csv;
use ferroflow_solver::Status;
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

/// Writes a two-column profile with the given header names.
pub fn write_profile(path: &Path, header: [&str; 2], points: &[(f64, f64)]) -> io::Result<()> {
    let rows = points
        .iter()
        .map(|(x, y)| vec![x.to_string(), y.to_string()]);
    write_csv(path, &header, rows)
}

/// Writes the MMS error table (`n,variable,l2_error,linf_error,l2_order,linf_order`).
pub fn write_mms(path: &Path, rows: &[MmsRow]) -> io::Result<()> {
    let header = [
        "n",
        "variable",
        "l2_error",
        "linf_error",
        "l2_order",
        "linf_order",
    ];
    let opt = |o: Option<f64>| o.map(|o| format!("{o:.4}")).unwrap_or_default();
    let rows = rows.iter().map(|r| {
        vec![
            r.n.to_string(),
            r.variable.to_string(),
            format!("{:e}", r.l2_error),
            format!("{:e}", r.linf_error),
            opt(r.l2_order),
            opt(r.linf_order),
        ]
    });
    write_csv(path, &header, rows)
}
