//! The output directory of a run and the files in it: fields for ParaView, summary, residual
//! history, centreline profiles, plots, checkpoint.
use crate::plot;
use crate::Failure;
use ferroflow_ac::Problem;
use ferroflow_cases::post::{post_process, Results};
use ferroflow_cases::summary::{write_profile, RunRecord, Summary};
use ferroflow_core::{Fields, Real};
use ferroflow_io::table::write_json;
use ferroflow_io::vtk;
use ferroflow_solver::{checkpoint, write_residuals};
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
        let names = problem.variable_names();
        vtk::write_image_data(&self.join(&name), names, problem.spacing, fields, compress)?;
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
        let results = fields.map(|f| self.write_fields(run, f)).transpose()?;
        let names = run.problem.variable_names();
        let history = &run.sim.history;
        write_residuals(&self.join("residuals.csv"), names, history)?;
        let tolerance = run.sim.stop.tolerance;
        plot::residuals(&self.join("residuals.png"), names, history, tolerance)?;
        let summary = Summary::new(run, results).map_err(io::Error::other)?;
        write_json(&self.join("summary.json"), &summary)?;
        Ok(summary)
    }

    /// Writes the final fields (and the index of the snapshots with them), and what they show:
    /// the centreline profiles and their plot.
    fn write_fields<R: Real>(&self, run: &RunRecord<R>, fields: &Fields<R>) -> io::Result<Results> {
        let compress = run.case.output.compress;
        let (names, spacing) = (run.problem.variable_names(), run.problem.spacing);
        vtk::write_image_data(&self.join("fields.vti"), names, spacing, fields, compress)?;
        if !self.snapshots.is_empty() {
            let mut all = self.snapshots.clone();
            if all.last().is_some_and(|(i, _)| *i == run.sim.iteration) {
                all.pop();
            }
            all.push((run.sim.iteration, "fields.vti".into()));
            vtk::write_collection(&self.join("fields.pvd"), &all)?;
        }
        let results = post_process(run.case, run.problem, fields).map_err(io::Error::other)?;
        write_profile(&self.join("centerline_u.csv"), ["y", "u"], &results.u)?;
        write_profile(&self.join("centerline_v.csv"), ["x", "v"], &results.v)?;
        plot::centrelines(
            &self.join("centerlines.png"),
            &format!("{}, centreline profiles", results.title),
            &results.u,
            &results.v,
            results.reference.as_ref(),
        )?;
        Ok(results)
    }
}
