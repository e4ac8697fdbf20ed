//! What a run of a case on an unstructured mesh does around its solver's steps, whichever
//! solver it is (finite elements, finite volumes): the thread pool, the output directory
//! opened with its log and resolved case, field snapshots in `fields.pvd`, checkpoints of a
//! state of values per node or per cell, and the endings (committed; interrupted, exit
//! code 130; diverged, exit code 3), each leaving the earlier results as they were.
use crate::input::problem_keys_of;
use crate::mesh_job::{MeshCase, MeshJob};
use crate::progress::{Mode, Reporter, Work};
use crate::results::{self, OutputDir, CASE_FILE, LOG_FILE};
use crate::run::{log_header, Restart};
use crate::signals::Interrupt;
use crate::Failure;
use ferroflow_cases::fem::{FemStatus, PatchForce};
use ferroflow_core::{Points, Real, Snapshot};
use ferroflow_solver::checkpoint;
use ferroflow_solver::Simulation;
use std::io;
use std::path::Path;

/// Runs `run` on a pool of the job's threads, with Ctrl-C (and SIGTERM) caught.
pub fn in_pool<C, F>(job: &MeshJob<C>, run: F) -> Result<(), Failure>
where
    F: FnOnce(Interrupt) -> Result<(), Failure> + Send,
{
    let interrupt = Interrupt::install(true).map_err(Failure::runtime)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(job.threads)
        .build()
        .map_err(Failure::runtime)?;
    pool.install(|| run(interrupt))
}

/// The points of a checkpoint of `count` values per variable (a mesh's nodes or cells in
/// order), stored as a grid of one row: the format holds values per point in order, which is
/// all a mesh's state needs.
fn state_points(count: usize) -> Points {
    Points::grid(2, [count, 1, 1])
}

/// The state of `--restart`'s checkpoint in precision `R`: `vars` variables of `count` values
/// each (a mesh's nodes or cells); an error names the file.
pub fn restored_state<R: Real>(
    restart: &Restart,
    count: usize,
    vars: usize,
) -> Result<Vec<Vec<R>>, Failure> {
    let Restart { file, checkpoint } = restart;
    let state = (checkpoint.state::<R>(state_points(count), vars))
        .map_err(|e| Failure::input(format!("--restart {}: {e}", file.display())))?;
    Ok(state.vars)
}

/// A run's output directory, locked, and its log and progress.
pub struct MeshOutput {
    pub out: OutputDir,
    pub report: Reporter,
}

impl MeshOutput {
    /// Opens the job's output directory (checked, locked, staged), writes the resolved case,
    /// and opens the log with its header (`backend` in words) and `headline`.
    pub fn open<C: MeshCase>(
        job: &MeshJob<C>,
        work: Work,
        backend: &str,
        headline: &str,
    ) -> Result<MeshOutput, Failure> {
        let keys = problem_keys_of(&job.resolved);
        let out = OutputDir::open(&job.out, &keys, job.overwrite, job.restart.as_ref())?;
        ferroflow_io::file::write(&out.join(CASE_FILE), &job.resolved).map_err(Failure::runtime)?;
        let log = out.join(LOG_FILE);
        let mut report = Reporter::new(Mode::detect(job.quiet), &log, job.restart.is_some(), work)
            .map_err(|e| Failure::runtime(ferroflow_io::file::naming(&log, e)))?;
        log_header(&mut report, job.restart.as_ref(), backend, &job.resolved);
        report.note(&format!("{headline}; output in {}", job.out.display()));
        Ok(MeshOutput { out, report })
    }

    /// Writes the snapshot of `step` with `write` (given its path in the staging directory)
    /// and lists it in `fields.pvd`.
    pub fn snapshot(
        &mut self,
        step: usize,
        write: impl FnOnce(&Path) -> io::Result<()>,
    ) -> Result<(), Failure> {
        let name = format!("{}.vtu", results::snapshot_pieces(step));
        write(&self.out.join(&name)).map_err(Failure::runtime)?;
        (self.out.add_snapshot(step, name)).map_err(Failure::runtime)
    }

    /// At the end of a run: the progress bar removed, the checkpoint of `vars` (see
    /// [`MeshOutput::checkpoint`]), and the final fields `fields.vtu` written with `write` and
    /// listed in `fields.pvd` after the snapshots.
    pub fn write_final<C, R: Real>(
        &mut self,
        job: &MeshJob<C>,
        (sim, wall_seconds): (&Simulation, f64),
        vars: Vec<Vec<R>>,
        write: impl FnOnce(&Path) -> io::Result<()>,
    ) -> Result<(), Failure> {
        self.report.finish();
        self.checkpoint(job, sim, wall_seconds, vars)?;
        write(&self.out.join("fields.vtu")).map_err(Failure::runtime)?;
        (self.out.add_final(sim.iteration, "fields.vtu")).map_err(Failure::runtime)
    }

    /// Writes the checkpoint of `vars` (values per node or cell, in the run's precision `R`)
    /// after `sim`'s last step, atomically.
    pub fn checkpoint<C, R: Real>(
        &self,
        job: &MeshJob<C>,
        sim: &Simulation,
        wall_seconds: f64,
        vars: Vec<Vec<R>>,
    ) -> Result<(), Failure> {
        let state = Snapshot {
            points: state_points(vars.first().map_or(0, Vec::len)),
            vars,
        };
        let path = self.out.join(checkpoint::FILE_NAME);
        checkpoint::save(&path, &job.resolved, sim, wall_seconds, &state).map_err(Failure::runtime)
    }

    /// Ends a run whose state diverged (`why`) with its `record` (summary and history)
    /// written into the staging directory: no fields, the last checkpoint kept, the results
    /// in the output directory unchanged; exit code 3 (or `record`'s failure).
    pub fn diverged<C>(
        mut self,
        job: &MeshJob<C>,
        why: &str,
        record: Result<(), Failure>,
    ) -> Failure {
        self.report.finish();
        if let Err(e) = record {
            return e;
        }
        let staging = job.out.join(results::STAGING);
        let message = format!(
            "{why}; no fields written, the results in {} are unchanged; this run's summary is \
             in {}",
            job.out.display(),
            staging.display()
        );
        self.report.log(&message);
        Failure::diverged(message)
    }

    /// Ends a run whose results are written: an interrupted one (stopped after `step`)
    /// leaves them in the staging directory and fails with exit code 130, any other
    /// replaces the results in the output directory.
    pub fn end<C>(
        mut self,
        job: &MeshJob<C>,
        step: usize,
        interrupted: bool,
    ) -> Result<(), Failure> {
        if interrupted {
            let (out, staging) = (&job.out, job.out.join(results::STAGING));
            let message = format!(
                "stopped at step {step}; its results and checkpoint are in {}, the results in {} \
                 are unchanged; continue with: ferroflow run --restart {}{}",
                staging.display(),
                out.display(),
                out.display(),
                // The checkpoint keeps the case, not the backend.
                if job.cuda { " --backend cuda" } else { "" }
            );
            self.report.log(&message);
            return Err(Failure::interrupted(message));
        }
        self.out.commit().map_err(Failure::runtime)
    }

    /// Where the results of a run that ends `interrupted` or not are.
    pub fn results_dir<C>(job: &MeshJob<C>, interrupted: bool) -> std::path::PathBuf {
        match interrupted {
            true => job.out.join(results::STAGING),
            false => job.out.clone(),
        }
    }

    /// Says how the run ended (`status`, then `what`: its steps and measures, with the
    /// results in `dir`) and the forces on its walls.
    pub fn tell(&mut self, status: FemStatus, what: &str, dir: &Path, forces: &[PatchForce]) {
        let verdict = match status {
            FemStatus::Steady => "steady",
            FemStatus::EndTime => "reached the end time",
            FemStatus::MaxSteps => "NOT steady (step limit)",
            FemStatus::Interrupted | FemStatus::Diverged => "stopped",
        };
        (self.report).note(&format!(
            "{verdict} after {what}; results in {}",
            dir.display()
        ));
        for f in forces {
            self.report.note(&format!(
                "  force on {}: {:?}, coefficients {:?}",
                f.patch, f.force, f.coefficients
            ));
        }
    }
}
