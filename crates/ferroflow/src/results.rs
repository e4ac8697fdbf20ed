//! The output directory of a run and the files in it: fields for ParaView, summary, residual
//! history, centreline profiles, plots, checkpoint.
use crate::plot;
use crate::Failure;
use ferroflow_cases::case::CaseKind;
use ferroflow_cases::reference::{self, Profile};
use ferroflow_cases::summary::{write_profile, Deviation, Summary};
use ferroflow_cases::{cavity, Case};
use ferroflow_core::{Fields, Problem, Real};
use ferroflow_io::table::write_json;
use ferroflow_io::vtk;
use ferroflow_solver::{checkpoint, write_residuals, Simulation, Status};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Files that hold the result of one run; cleared when a run starts in the directory.
const RESULT_FILES: [&str; 9] = [
    "summary.json",
    "residuals.csv",
    "centerline_u.csv",
    "centerline_v.csv",
    "fields.vti",
    "fields.pvd",
    "residuals.png",
    "centerlines.png",
    "checkpoint.ffcp.tmp",
];

/// A run's output directory and the field snapshots written to it so far.
pub struct OutputDir {
    dir: PathBuf,
    /// `(iteration, file name)` of each snapshot, in iteration order.
    snapshots: Vec<(usize, String)>,
}

/// Iteration of a snapshot file `fields_<iteration>.vti`.
fn snapshot_iteration(name: &str) -> Option<usize> {
    name.strip_prefix("fields_")?
        .strip_suffix(".vti")?
        .parse()
        .ok()
}

impl OutputDir {
    /// Creates `dir` (bad input if it cannot be) and clears what an earlier run left there:
    /// the results, and for a fresh run (`restart` = None) the snapshots and the checkpoint;
    /// when continuing from iteration `restart`, only the snapshots after it.
    pub fn create(dir: &Path, restart: Option<usize>) -> Result<OutputDir, Failure> {
        let cannot = |e: io::Error| {
            Failure::input(format!(
                "cannot use output directory {}: {e}",
                dir.display()
            ))
        };
        fs::create_dir_all(dir).map_err(cannot)?;
        let mut snapshots = Vec::new();
        for entry in fs::read_dir(dir).map_err(cannot)? {
            let name = entry
                .map_err(cannot)?
                .file_name()
                .to_string_lossy()
                .into_owned();
            let stale = match (snapshot_iteration(&name), restart) {
                (Some(i), Some(r)) if i <= r => {
                    snapshots.push((i, name.clone()));
                    false
                }
                (Some(_), _) => true,
                (None, _) => {
                    RESULT_FILES.contains(&name.as_str())
                        || (restart.is_none() && name == checkpoint::FILE_NAME)
                }
            };
            if stale {
                fs::remove_file(dir.join(&name)).map_err(cannot)?;
            }
        }
        snapshots.sort();
        Ok(OutputDir {
            dir: dir.to_path_buf(),
            snapshots,
        })
    }

    /// Path of `name` in the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Writes the snapshot `fields_<iteration>.vti` (zlib-compressed with `compress`) and the
    /// updated `fields.pvd`.
    pub fn write_snapshot<R: Real>(
        &mut self,
        problem: &Problem<R>,
        fields: &Fields<R>,
        iteration: usize,
        compress: bool,
    ) -> io::Result<()> {
        let name = format!("fields_{iteration:08}.vti");
        vtk::write_image_data(&self.join(&name), problem, fields, compress)?;
        self.snapshots.push((iteration, name));
        vtk::write_collection(&self.join("fields.pvd"), &self.snapshots)
    }

    /// Writes the results of a run. `fields` (pressure referenced) are `None` after divergence:
    /// then only the summary and the residual history are written, no fields or profiles.
    pub fn write_results<R: Real>(
        &self,
        run: &RunRecord<R>,
        fields: Option<&Fields<R>>,
    ) -> io::Result<Summary> {
        let names = run.problem.variable_names();
        let history = &run.sim.history;
        let reference = reference_profiles(run.case);
        let mut deviations = Vec::new();
        let mut heat_transfer = None;
        if let Some(fields) = fields {
            let compress = run.case.output.compress;
            vtk::write_image_data(&self.join("fields.vti"), run.problem, fields, compress)?;
            if !self.snapshots.is_empty() {
                let mut all = self.snapshots.clone();
                if all.last().is_some_and(|(i, _)| *i == run.sim.iteration) {
                    all.pop();
                }
                all.push((run.sim.iteration, "fields.vti".into()));
                vtk::write_collection(&self.join("fields.pvd"), &all)?;
            }
            let (u, v) = cavity::centrelines(run.problem, fields);
            write_profile(&self.join("centerline_u.csv"), ["y", "u"], &u)?;
            write_profile(&self.join("centerline_v.csv"), ["x", "v"], &v)?;
            let grid: Vec<String> = run.case.grid.nodes.iter().map(|n| n.to_string()).collect();
            let parameters = match run.case.case.kind {
                CaseKind::LidDrivenCavity => format!("Re = {}", run.case.physics.reynolds),
                CaseKind::BuoyancyDrivenCavity => {
                    let cavity = run.case.heated_cavity().map_err(io::Error::other)?;
                    heat_transfer = Some(cavity.report(run.problem, fields));
                    format!("Ra = {:.4e}, Pr = {}", cavity.rayleigh, cavity.prandtl)
                }
            };
            let title = format!(
                "{}: {parameters}, {} nodes, centreline profiles",
                run.case.case.name,
                grid.join(" x ")
            );
            plot::centrelines(
                &self.join("centerlines.png"),
                &title,
                &u,
                &v,
                reference.as_ref(),
            )?;
            if let Some((ref_u, ref_v)) = &reference {
                deviations = [
                    ("u(y) at x = 0.5", &u, ref_u),
                    ("v(x) at y = 0.5", &v, ref_v),
                ]
                .into_iter()
                .map(|(profile, computed, r)| {
                    let (dev, at) = cavity::max_deviation(computed, r);
                    Deviation {
                        profile: profile.into(),
                        source: r.source.into(),
                        max_abs_deviation: dev,
                        at,
                    }
                })
                .collect();
            }
        }
        write_residuals(&self.join("residuals.csv"), names, history)?;
        plot::residuals(
            &self.join("residuals.png"),
            names,
            history,
            run.sim.stop.tolerance,
        )?;
        let last = history
            .last()
            .map(|h| h.relative.clone())
            .unwrap_or_default();
        let nodes = run.problem.layout.interior_nodes() as f64;
        let summary = Summary {
            case: run.case.case.name.clone(),
            dim: run.case.grid.dim,
            grid: run.case.grid.nodes.clone(),
            precision: R::NAME.into(),
            backend: run.backend.into(),
            iterations: run.sim.iteration,
            converged: run.status == Status::Converged,
            status: run.status,
            residuals: names
                .iter()
                .zip(&last)
                .map(|(n, r)| (n.to_string(), (*r).into()))
                .collect(),
            wall_seconds: run.wall_seconds,
            node_updates_per_second: nodes * run.sim.iteration as f64 / run.wall_seconds,
            reference: deviations,
            heat_transfer,
        };
        write_json(&self.join("summary.json"), &summary)?;
        Ok(summary)
    }
}

/// What a run did, for its result files.
pub struct RunRecord<'a, R: Real> {
    pub case: &'a Case,
    pub problem: &'a Problem<R>,
    pub sim: &'a Simulation,
    pub status: Status,
    pub wall_seconds: f64,
    pub backend: &'static str,
}

/// Published centreline profiles for the case's Reynolds number, if there are any.
fn reference_profiles(case: &Case) -> Option<(Profile, Profile)> {
    let re = case.physics.reynolds;
    if case.case.kind != CaseKind::LidDrivenCavity
        || re.fract() != 0.0
        || case.physics.lid_velocity != 1.0
    {
        None
    } else if case.grid.dim == 2 {
        reference::ghia(re as u32)
    } else {
        reference::albensoeder_kuhlmann(re as u32)
    }
}
