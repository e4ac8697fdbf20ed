//! `ferroflow run` and `ferroflow check` of a finite-element case (`case.solver =
//! "finite-element"`): the fractional-step solver of `ferroflow-fem` stepped in time on the
//! case's tetrahedral mesh, with the structured runs' output directory (staging, lock,
//! atomic files, commit), progress, signals and checkpoints. Results: `fields.vtu` (nodal
//! velocity and pressure), snapshots `fields_<step>.vtu` in `fields.pvd`, `summary.json`,
//! `residuals.csv` (per step: time, Δt, rates, divergence, CG iterations and residual),
//! `run.log`, `case.resolved.toml`, `checkpoint.ffcp`; for the lid-driven cube its centreline
//! profiles ([`fem_profiles`]).
//!
//! With `--backend cuda` the steps run on the GPU ([`CudaFractional`], the CPU's bits),
//! with equal or local time steps. The state stays there: after a step the host reads only
//! the rates and the largest velocity component ([`CudaFractional::changes`]), and the state
//! for snapshots, checkpoints, the end and a divergence's message; the files are the CPU's.
//!
//! The run computes in `backend.precision` (f64 or f32); the fields, summary and histories are
//! written in f64 (widened, exactly), the checkpoint in the run's precision, and a restart
//! continues only in its checkpoint's.
use crate::fem_profiles;
use crate::input::Override;
use crate::mesh_job::MeshJob;
use crate::mesh_run::{in_pool, restored_state, MeshOutput};
use crate::progress::Work;
use crate::results::{OutputDir, SUMMARY};
use crate::run::RunArgs;
use crate::signals::Interrupt;
use crate::world::World;
use crate::Failure;
use ferroflow_cases::case::Precision;
use ferroflow_cases::fem::{
    CgSummary, FemCase, FemMeshKind, FemSetup, FemStatus, FemSummary, MeshSize, PatchForce,
    SolverKind, StepResiduals,
};
use ferroflow_cases::summary::Deviation;
use ferroflow_core::{BackendError, Real};
use ferroflow_fem::cuda::{CudaFractional, CudaOptions, DeviceReal, TuneMode};
use ferroflow_fem::fractional::StepReport;
use ferroflow_io::table::write_json;
use ferroflow_mesh::vtu::{self, Field};
use ferroflow_solver::simulation::{HistoryRow, DIVERGENCE_FACTOR};
use ferroflow_solver::{write_residuals, Simulation, StopCriteria};
use std::path::Path;
use std::time::Instant;

/// The columns of `residuals.csv` after `iteration` (the step): one row per step.
const COLUMNS: [&str; 8] = [
    "time",
    "dt",
    "velocity_rate",
    "pressure_rate",
    "divergence",
    "continuity",
    "cg_iterations",
    "cg_residual",
];

/// What the progress line shows of a step.
const SHOWN: [&str; 2] = ["du/dt", "dp/dt"];

/// Variables of a checkpoint: u, v, w, p at the nodes.
const STATE_VARS: usize = 4;

/// A finite-element run, checked.
type FemJob = MeshJob<FemCase>;

/// The GPU's options for a job with `--backend cuda`.
fn cuda_options(job: &FemJob) -> Option<CudaOptions> {
    job.cuda.then(|| CudaOptions {
        tune: match job.no_tune {
            true => TuneMode::Off,
            false => TuneMode::Cached,
        },
        ..CudaOptions::default()
    })
}

/// The mesh and the solver in precision `R` at the start (or at the checkpoint's state, which
/// must be in `R`); errors name the key at fault.
fn setup<R: DeviceReal>(job: &FemJob) -> Result<FemSetup<R>, Failure> {
    let case = &job.case;
    let mesh = case.mesh().map_err(|e| {
        let key = match case.mesh.kind {
            FemMeshKind::Gmsh | FemMeshKind::Su2 => "mesh.file",
            FemMeshKind::TetBox => "mesh.cells",
        };
        job.invalid(key, e.to_string())
    })?;
    let mut setup = case
        .setup::<R>(mesh)
        .map_err(|(key, e)| job.invalid(&key, e))?;
    if let Some(restart) = &job.restart {
        let held = &restart.checkpoint.precision;
        if held != R::NAME {
            return Err(job.invalid(
                "backend.precision",
                format!(
                    "\"{}\", but the checkpoint of --restart {} holds an {held} state: a run \
                     continues in its checkpoint's precision",
                    R::NAME,
                    restart.file.display()
                ),
            ));
        }
        let vars = restored_state::<R>(restart, setup.mesh.nodes.len(), STATE_VARS)?;
        let s = &mut setup.solver;
        for (i, u) in s.u.iter_mut().enumerate() {
            *u = [0, 1, 2].map(|c| vars[c][i]);
        }
        s.p.clone_from(&vars[3]);
    }
    Ok(setup)
}

/// Writes the nodal velocity and pressure of `setup` as `.vtu` at `path` (in f64).
fn write_fields<R: Real>(setup: &FemSetup<R>, compress: bool, path: &Path) -> std::io::Result<()> {
    let s = &setup.solver;
    let velocity: Vec<f64> = s.u.iter().flatten().map(|v| v.f64()).collect();
    let pressure: Vec<f64> = s.p.iter().map(|v| v.f64()).collect();
    let fields = [
        Field {
            name: "velocity",
            components: 3,
            values: &velocity,
        },
        Field {
            name: "pressure",
            components: 1,
            values: &pressure,
        },
    ];
    vtu::write(path, &setup.mesh, &fields, &[], compress)
}

/// `ferroflow run` of a finite-element case, in its precision.
pub fn run(args: RunArgs) -> Result<(), Failure> {
    let world = World::alone();
    let job = FemJob::new(args, &world)?;
    match job.case.backend.precision {
        Precision::F64 => in_pool(&job, |interrupt| {
            FemRun::<f64>::start(&job, interrupt)?.iterate()
        }),
        Precision::F32 => in_pool(&job, |interrupt| {
            FemRun::<f32>::start(&job, interrupt)?.iterate()
        }),
    }
}

/// `ferroflow check` of a finite-element case: the case resolved, the mesh built and the
/// solver set up (which checks the patches and the mesh), nothing stepped or written.
pub fn check(args: RunArgs) -> Result<(), Failure> {
    let world = World::alone();
    let job = FemJob::new(args, &world)?;
    match job.case.backend.precision {
        Precision::F64 => check_in::<f64>(&job),
        Precision::F32 => check_in::<f32>(&job),
    }
}

fn check_in<R: DeviceReal>(job: &FemJob) -> Result<(), Failure> {
    let setup = setup::<R>(job)?;
    let (case, ops) = (&job.case, setup.solver.operators());
    println!(
        "case {} (finite elements), {} nodes, {} tetrahedra, {} edges, {}",
        case.case.name,
        ops.nodes(),
        setup.mesh.cells.len(),
        ops.columns.len() / 2,
        R::NAME
    );
    println!("patches: {}", setup.mesh.patches.join(", "));
    let n = &case.numerics;
    let stop = match n.steady_tolerance {
        Some(t) => format!("steady below {t:e}, or"),
        None => "at".into(),
    };
    println!(
        "stop: {stop} t = {}, at most {} steps; stable time step now {:.4e} s",
        n.end_time,
        n.max_steps,
        setup.solver.time_step()
    );
    if job.cuda {
        println!("cuda: the steps on GPU 0 (the device is opened when the run starts)");
    }
    job.print_check_end();
    Ok(())
}

/// A finite-element run in progress, in precision `R`.
struct FemRun<'a, R: DeviceReal> {
    job: &'a FemJob,
    setup: FemSetup<R>,
    /// The GPU copy of the solver that takes the steps, with `--backend cuda`.
    gpu: Option<CudaFractional<R>>,
    sim: Simulation,
    /// Time reached.
    time: f64,
    /// Wall time of the steps, earlier runs of a restarted one included.
    wall_seconds: f64,
    files: MeshOutput,
    interrupt: Interrupt,
}

impl<'a, R: DeviceReal> FemRun<'a, R> {
    /// Sets the run up, then opens the output directory: nothing is written before the case,
    /// the mesh and the checkpoint are found valid.
    fn start(job: &'a FemJob, interrupt: Interrupt) -> Result<FemRun<'a, R>, Failure> {
        let setup = setup::<R>(job)?;
        let gpu = cuda_options(job)
            .map(|options| CudaFractional::new(&setup.solver, &options))
            .transpose()
            .map_err(|e| match e {
                BackendError::NotSuitable { .. } => Failure::input(e.to_string()),
                e => Failure::runtime(e),
            })?;
        let n = &job.case.numerics;
        let stop = StopCriteria {
            tolerance: n.steady_tolerance.unwrap_or(0.0),
            max_iterations: n.max_steps,
            check_interval: 1,
            stall_checks: 0,
        };
        let (sim, wall_seconds) = match &job.restart {
            Some(r) => (r.checkpoint.simulation(stop), r.checkpoint.wall_seconds),
            None => (Simulation::new(stop), 0.0),
        };
        // The time is the last step's (every step has its row).
        let time = sim.history.last().map_or(0.0, |row| row.relative[0]);
        let work = Work {
            names: &SHOWN,
            nodes: setup.mesh.nodes.len(),
            tolerance: n.steady_tolerance.unwrap_or(f64::MIN_POSITIVE),
            max_iterations: n.max_steps,
            start_iteration: sim.iteration,
        };
        let backend = match &gpu {
            Some(gpu) => format!("cuda, {}, finite elements", gpu.device_name()),
            None => format!("cpu, {} threads, finite elements", job.threads),
        };
        let headline = format!(
            "{}: {} nodes, {} tetrahedra, {}, {backend}",
            job.case.case.name,
            setup.mesh.nodes.len(),
            setup.mesh.cells.len(),
            R::NAME,
        );
        let files = MeshOutput::open(job, work, &backend, &headline)?;
        Ok(FemRun {
            job,
            setup,
            gpu,
            sim,
            time,
            wall_seconds,
            files,
            interrupt,
        })
    }

    /// Steps until a steady state, the end time, the step limit, divergence or a signal,
    /// then writes the results.
    fn iterate(mut self) -> Result<(), Failure> {
        let (case, start) = (&self.job.case, Instant::now());
        let earlier = self.wall_seconds;
        let speed = self.speed_scale();
        let status = loop {
            if let Some(status) = self.stopped() {
                break status;
            }
            let (step, report, change) = self.advance().map_err(Failure::runtime)?;
            let [rate, pressure_rate, fastest] = change;
            self.time += step;
            self.sim.iteration += 1;
            let row = [
                self.time,
                step,
                rate,
                pressure_rate,
                report.divergence,
                report.continuity,
                report.pressure.iterations as f64,
                report.pressure.relative_residual,
            ];
            self.sim.history.push(HistoryRow {
                iteration: self.sim.iteration,
                relative: row.to_vec(),
            });
            self.wall_seconds = earlier + start.elapsed().as_secs_f64();
            if let Some(why) = self.diverged(fastest, speed)? {
                return Err(self.fail_diverged(&why));
            }
            (self.files.report).update(self.sim.iteration, &[rate, pressure_rate]);
            let step_no = self.sim.iteration;
            let o = &case.output;
            if o.field_interval > 0
                && step_no.is_multiple_of(o.field_interval)
                && self.stopped().is_none()
            {
                self.read_state()?;
                let setup = &self.setup;
                let write = |path: &Path| write_fields(setup, o.compress, path);
                self.files.snapshot(step_no, write)?;
            }
            if o.checkpoint_interval > 0 && step_no.is_multiple_of(o.checkpoint_interval) {
                self.checkpoint()?;
            }
        };
        self.finish(status)
    }

    /// One step from the time reached, on the CPU or the GPU (the state left there): the time
    /// it advanced, the step's report and what it changed, [velocity rate, pressure rate,
    /// largest |u| component or NaN on the CPU] (the rates of [`FractionalStep::rates`]).
    ///
    /// [`FractionalStep::rates`]: ferroflow_fem::fractional::FractionalStep::rates
    fn advance(&mut self) -> Result<(f64, StepReport, [f64; 3]), BackendError> {
        let n = &self.job.case.numerics;
        let solver = &mut self.setup.solver;
        let dt = match &self.gpu {
            // The smallest is all the GPU's step needs: it finds the local ones itself.
            Some(gpu) => vec![R::of(gpu.time_step()?)],
            None => solver.local_time_steps(),
        };
        let smallest = dt.iter().fold(f64::INFINITY, |a, d| a.min(d.f64()));
        // Equal steps that land on the end time, none above the stable one (time-accurate
        // runs); local time steps advance the time by the smallest.
        let step = match n.local_time_steps {
            true => smallest,
            false => {
                let left = n.end_time - self.time;
                let dt = left / (left / smallest).ceil();
                dt.max(f64::MIN_POSITIVE)
            }
        };
        let held = &self.setup.boundary;
        let boundary = |i: usize, t: f64| held.velocity(i, t);
        Ok(match &mut self.gpu {
            Some(gpu) => {
                let report = gpu.step(step, self.time, &boundary)?;
                (step, report, gpu.changes()?)
            }
            None => {
                let dt = match n.local_time_steps {
                    true => dt,
                    false => vec![R::of(step); dt.len()],
                };
                let (u0, p0) = (solver.u.clone(), solver.p.clone());
                let report = solver.advance(&dt, step, self.time, &boundary);
                let (rate, pressure_rate) = solver.rates(&u0, &p0, &dt);
                (step, report, [rate, pressure_rate, f64::NAN])
            }
        })
    }

    /// Copies the GPU's state into the host solver's, which the outputs read (nothing on the
    /// CPU).
    fn read_state(&mut self) -> Result<(), Failure> {
        if let Some(gpu) = &self.gpu {
            let s = &mut self.setup.solver;
            (s.u, s.p) = gpu.state().map_err(Failure::runtime)?;
        }
        Ok(())
    }

    /// Why the run stops before its next step, if it does.
    fn stopped(&self) -> Option<FemStatus> {
        let n = &self.job.case.numerics;
        let last = self.sim.history.last().map(|row| &row.relative);
        if let (Some(tolerance), Some(row)) = (n.steady_tolerance, last) {
            if row[2].max(row[3]) < tolerance {
                return Some(FemStatus::Steady);
            }
        }
        // Equal steps add up to the end time within rounding.
        if n.end_time - self.time <= 1e-12 * n.end_time {
            return Some(FemStatus::EndTime);
        }
        if self.sim.iteration >= n.max_steps {
            return Some(FemStatus::MaxSteps);
        }
        self.interrupt.requested().then_some(FemStatus::Interrupted)
    }

    /// The speed the state is measured against for divergence: the largest of the state's
    /// and the held nodes' now, or 1 where all are at rest.
    fn speed_scale(&self) -> f64 {
        let (b, s) = (&self.setup.boundary, &self.setup.solver);
        let speed = |v: [f64; 3]| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        let fastest = (0..s.u.len())
            .map(|i| speed(s.u[i].map(|c| c.f64())).max(speed(b.velocity(i, self.time))))
            .fold(0.0, f64::max);
        if fastest > 0.0 {
            fastest
        } else {
            1.0
        }
    }

    /// Why the state after the last step is not usable, if it is not: a non-finite value, or
    /// a velocity [`DIVERGENCE_FACTOR`] times `speed`. On the GPU the state is read (for the
    /// message) only where its largest component `fastest` says so.
    fn diverged(&mut self, fastest: f64, speed: f64) -> Result<Option<String>, Failure> {
        if self.gpu.is_some() {
            if fastest <= DIVERGENCE_FACTOR * speed {
                return Ok(None);
            }
            self.read_state()?;
        }
        let s = &self.setup.solver;
        let step = self.sim.iteration;
        let bad = |x: R| !x.is_finite();
        if let Some(i) = (0..s.p.len()).find(|&i| s.u[i].iter().any(|&c| bad(c)) || bad(s.p[i])) {
            return Ok(Some(format!(
                "diverged at step {step}: not finite at node {i}"
            )));
        }
        let fastest =
            s.u.iter()
                .map(|v| v.iter().map(|c| c.f64().abs()).fold(0.0, f64::max));
        let fastest = fastest.fold(0.0, f64::max);
        Ok((fastest > DIVERGENCE_FACTOR * speed).then(|| {
            format!(
                "diverged at step {step}: |u| reached {fastest:.3e}, {DIVERGENCE_FACTOR:e} times \
                 the fastest initial or boundary speed"
            )
        }))
    }

    /// The state after the last step as a checkpoint holds it: u, v, w, p per node.
    fn state_vars(&self) -> Vec<Vec<R>> {
        let s = &self.setup.solver;
        let mut vars: Vec<Vec<R>> = (0..3).map(|c| s.u.iter().map(|v| v[c]).collect()).collect();
        vars.push(s.p.clone());
        vars
    }

    /// Writes the checkpoint of the state after the last step, atomically.
    fn checkpoint(&mut self) -> Result<(), Failure> {
        self.read_state()?;
        (self.files).checkpoint(self.job, &self.sim, self.wall_seconds, self.state_vars())
    }

    /// The summary of the run so far, ended with `status`, with the profiles' deviations
    /// `reference`.
    fn summary(&self, status: FemStatus, reference: Vec<Deviation>) -> FemSummary {
        let (case, s) = (&self.job.case, &self.setup.solver);
        let last = self.sim.history.last().map(|r| r.relative.as_slice());
        let last = last.unwrap_or(&[f64::NAN; COLUMNS.len()]);
        let steps = self.sim.history.len().max(1) as f64;
        let cg: f64 = self.sim.history.iter().map(|r| r.relative[6]).sum();
        let nodes = self.setup.mesh.nodes.len();
        let rho = case.physics.density;
        let o = &case.output;
        let scale = 2.0 / (rho * o.reference_velocity.powi(2) * o.reference_area);
        let forces = (self.setup.forces(rho * case.physics.viscosity).into_iter())
            .map(|(patch, force)| PatchForce {
                patch,
                force,
                coefficients: force.map(|f| f * scale),
            })
            .collect();
        FemSummary {
            case: case.case.name.clone(),
            solver: SolverKind::FiniteElement,
            physics: case.physics.clone(),
            overrides: self.job.overrides.iter().map(Override::to_string).collect(),
            mesh: MeshSize {
                nodes,
                tetrahedra: self.setup.mesh.cells.len(),
                edges: s.operators().columns.len() / 2,
            },
            precision: R::NAME.into(),
            backend: match self.gpu {
                Some(_) => "cuda",
                None => "cpu",
            }
            .into(),
            steps: self.sim.iteration,
            time: self.time,
            converged: status == FemStatus::Steady,
            status,
            residuals: StepResiduals {
                velocity_rate: last[2],
                pressure_rate: last[3],
                divergence: last[4],
                continuity: last[5],
            },
            cg: CgSummary {
                iterations_per_step: cg / steps,
                last_iterations: last[6] as usize,
                last_relative_residual: last[7],
            },
            wall_seconds: self.wall_seconds,
            total_wall_seconds: self.job.started.elapsed().as_secs_f64(),
            node_updates_per_second: nodes as f64 * self.sim.iteration as f64 / self.wall_seconds,
            forces,
            exact_errors: self.setup.exact_errors(self.time),
            reference,
        }
    }

    /// Writes the summary, with the profiles' deviations `reference`, and the history into
    /// the staging directory of `out`.
    fn write_record(
        &self,
        out: &OutputDir,
        status: FemStatus,
        reference: Vec<Deviation>,
    ) -> Result<FemSummary, Failure> {
        let summary = self.summary(status, reference);
        let history = &self.sim.history;
        write_residuals(&out.join("residuals.csv"), &COLUMNS, history)
            .and_then(|()| write_json(&out.join(SUMMARY), &summary))
            .map_err(Failure::runtime)?;
        Ok(summary)
    }

    /// Ends a run whose state diverged (see [`MeshOutput::diverged`]).
    fn fail_diverged(self, why: &str) -> Failure {
        let record = self.write_record(&self.files.out, FemStatus::Diverged, Vec::new());
        self.files.diverged(self.job, why, record.map(drop))
    }

    /// Writes the results and the checkpoint; a run that ends by itself replaces the results
    /// in the output directory, an interrupted one leaves its own in the staging directory
    /// and fails with exit code 130.
    fn finish(mut self, status: FemStatus) -> Result<(), Failure> {
        self.read_state()?;
        let compress = self.job.case.output.compress;
        let write = |path: &Path| write_fields(&self.setup, compress, path);
        let done = (&self.sim, self.wall_seconds);
        (self.files).write_final(self.job, done, self.state_vars(), write)?;
        let reference = fem_profiles::write(&self.files.out, &self.job.case, &self.setup);
        let reference = reference.map_err(Failure::runtime)?;
        let summary = self.write_record(&self.files.out, status, reference)?;
        let interrupted = status == FemStatus::Interrupted;
        let what = format!(
            "{} steps, t = {:.6} ({:.2} s, {:.1} CG iterations per step)",
            summary.steps, summary.time, summary.wall_seconds, summary.cg.iterations_per_step,
        );
        let dir = MeshOutput::results_dir(self.job, interrupted);
        (self.files).tell(status, &what, &dir, &summary.forces);
        self.files.end(self.job, self.sim.iteration, interrupted)
    }
}
