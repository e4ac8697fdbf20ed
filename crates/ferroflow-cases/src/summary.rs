//! The summary of a run (`summary.json`) and the tables a case's results add: centreline
//! profiles and the manufactured-solution study.
use crate::case::Model;
use crate::convection::HeatTransfer;
use crate::mms::MmsRow;
use crate::post::Results;
use crate::Case;
use ferroflow_ac::Problem;
use ferroflow_core::{ProblemError, Real};
use ferroflow_io::table::write_csv;
use ferroflow_solver::{Simulation, Status};
use serde::Serialize;
use std::io;
use std::path::Path;
use std::time::Instant;

/// Contents of `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Case name.
    pub case: String,
    /// What the flow depends on, resolved.
    pub physics: Physics,
    /// The `--set KEY=VALUE` overrides of the case (and the options that stand for them).
    pub overrides: Vec<String>,
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
    /// Wall time of the iterations (checkpoints and snapshots written meanwhile included),
    /// earlier runs of a restarted one included, seconds.
    pub wall_seconds: f64,
    /// Wall time of this invocation from its start to the summary, seconds: set-up (kernel
    /// compilation, tuning), iterations and every file written; earlier runs of a restarted
    /// one are not in it.
    pub total_wall_seconds: f64,
    /// Interior node updates per second of the iterations (over `wall_seconds`).
    pub node_updates_per_second: f64,
    /// Deviations from reference data, if the case has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<Deviation>,
    /// Buoyancy-driven cavity: Ra, Pr, Nusselt numbers, energy balance, velocity maxima.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heat_transfer: Option<HeatTransfer>,
}

/// The resolved physics of a run, by its model.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "model", rename_all = "kebab-case")]
pub enum Physics {
    /// Incompressible Navier–Stokes.
    Incompressible {
        /// Reynolds number U L / ν.
        reynolds: f64,
        /// Velocity scale U: the fastest wall's speed.
        velocity: f64,
        /// Length L: the box's side.
        length: f64,
        /// Kinematic viscosity ν.
        viscosity: f64,
    },
    /// Boussinesq buoyancy (nondimensional inputs: L = ΔT = α = 1).
    Boussinesq {
        /// Rayleigh number |g| β_T ΔT L³ / (ν α).
        rayleigh: f64,
        /// Prandtl number ν / α.
        prandtl: f64,
        /// Length L.
        length: f64,
        /// Temperature difference ΔT between the hot and the cold wall.
        delta_t: f64,
        /// Kinematic viscosity ν.
        viscosity: f64,
        /// Thermal diffusivity α.
        diffusivity: f64,
    },
}

impl Physics {
    /// The resolved physics of `run`.
    pub fn of<R: Real>(run: &RunRecord<R>) -> Result<Physics, ProblemError> {
        let case = run.case;
        Ok(match case.physics.model {
            Model::Incompressible => Physics::Incompressible {
                reynolds: case.physics.reynolds,
                velocity: run.problem.numerics.u_ref,
                length: case.mesh.length,
                viscosity: run.problem.physics.viscosity,
            },
            Model::Boussinesq => {
                let c = case.heated_cavity()?;
                Physics::Boussinesq {
                    rayleigh: c.rayleigh,
                    prandtl: c.prandtl,
                    length: c.length,
                    delta_t: c.delta_t,
                    viscosity: c.viscosity,
                    diffusivity: c.diffusivity,
                }
            }
        })
    }
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

/// What a run did, for its result files.
pub struct RunRecord<'a, R: Real> {
    /// The resolved case.
    pub case: &'a Case,
    /// The problem solved.
    pub problem: &'a Problem<R>,
    /// The driver's record.
    pub sim: &'a Simulation,
    /// How the run ended.
    pub status: Status,
    /// Wall time of the iterations (earlier runs of a restarted one included), seconds.
    pub wall_seconds: f64,
    /// When this invocation started.
    pub started: Instant,
    /// Backend name.
    pub backend: &'static str,
    /// The overrides of the case, as `KEY=VALUE`.
    pub overrides: Vec<String>,
}

impl Summary {
    /// The summary of `run`; `results` are its post-processed fields (none after divergence).
    pub fn new<R: Real>(
        run: &RunRecord<R>,
        results: Option<Results>,
    ) -> Result<Summary, ProblemError> {
        let names = run.problem.variable_names();
        let last = run.sim.history.last().map_or(&[][..], |h| &h.relative);
        let (reference, heat_transfer) =
            results.map_or((Vec::new(), None), |r| (r.deviations, r.heat_transfer));
        let updates = run.problem.layout.interior_nodes() as f64 * run.sim.iteration as f64;
        Ok(Summary {
            case: run.case.case.name.clone(),
            physics: Physics::of(run)?,
            overrides: run.overrides.clone(),
            dim: run.case.mesh.dim,
            grid: run.case.mesh.nodes.clone(),
            precision: R::NAME.into(),
            backend: run.backend.into(),
            iterations: run.sim.iteration,
            converged: run.status == Status::Converged,
            status: run.status,
            residuals: names
                .iter()
                .zip(last)
                .map(|(n, r)| (n.to_string(), (*r).into()))
                .collect(),
            wall_seconds: run.wall_seconds,
            // Measured when the summary is made, after the fields and profiles are written.
            total_wall_seconds: run.started.elapsed().as_secs_f64(),
            node_updates_per_second: updates / run.wall_seconds,
            reference,
            heat_transfer,
        })
    }
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
