//! `ferroflow run` and `ferroflow check` of a finite-volume case (`case.solver =
//! "finite-volume"`): the compressible cell-centred solver of `ferroflow-fv` on the case's
//! mixed mesh, with the finite-element runs' job, output directory, progress, signals and
//! checkpoints ([`crate::mesh_run`]).
//!
//! Steady schemes (`rk-local`, `newton-jacobi`) take one iteration at a time; before each,
//! the RMS of R/Ω of every conservative variable is measured from the residual R(U^n) that
//! the iteration starts from (the four-stage scheme's first stage, the implicit right-hand
//! side: no residual of its own), and the run is
//! steady once the density's has dropped by `numerics.residual_drop` from its largest: an
//! impulsive start (a no-slip wall in a uniform stream) puts the first residual in the
//! momentum at the wall, and the density's grows from round-off before it falls.
//! `ssp-rk3` takes steps of the smallest cell's CFL step to `numerics.end_time`. Results:
//! `fields.vtu` (cell data), snapshots in `fields.pvd`, `surface_<patch>.csv` per wall
//! patch, `summary.json`, `residuals.csv`, `run.log`, `case.resolved.toml`,
//! `checkpoint.ffcp` (the conservative state per cell). The solver keeps the cells in the
//! order of `numerics.renumber` (RCM by default); every file is in the mesh's numbering.
//!
//! With `--backend cuda` the `rk-local` iterations run on the GPU ([`CudaSolver`], the CPU's
//! bits in f64): each iteration's residual, measured as it begins, gives the row, and the
//! host reads only its five RMS values; the state comes back for snapshots, checkpoints and
//! the results, whose surfaces are computed on the CPU. A state gone unphysical shows as a
//! residual not finite one iteration later, or where the state is read back. The other
//! schemes are refused.
use crate::fv_output::{self, FvMeshSize, FvSummary, Surface};
use crate::input::Override;
use crate::mesh_job::MeshJob;
use crate::mesh_run::{in_pool, restored_state, MeshOutput};
use crate::progress::Work;
use crate::results::{OutputDir, SUMMARY};
use crate::run::{Restart, RunArgs};
use crate::signals::Interrupt;
use crate::world::World;
use crate::Failure;
use ferroflow_cases::fem::{FemStatus, SolverKind};
use ferroflow_cases::fv::{FvCase, FvSetup, Scheme};
use ferroflow_core::BackendError;
use ferroflow_fv::cuda::{CudaOptions, CudaSolver};
use ferroflow_fv::gas::Cons;
use ferroflow_fv::implicit::Implicit;
use ferroflow_fv::time::{GlobalSteps, Method, SteadyIteration, FOUR_STAGE};
use ferroflow_io::table::write_json;
use ferroflow_solver::simulation::HistoryRow;
use ferroflow_solver::{write_residuals, Simulation, StopCriteria};
use rayon::prelude::*;
use std::path::Path;
use std::time::Instant;

/// A finite-volume run, checked.
type FvJob = MeshJob<FvCase>;

/// The job the arguments describe, with the checks only finite volumes need: the GPU runs
/// the steady four-stage scheme only.
fn job(args: RunArgs, world: &World) -> Result<FvJob, Failure> {
    let job = FvJob::new(args, world)?;
    let scheme = job.case.numerics.scheme;
    if job.cuda && scheme != Scheme::RkLocal {
        return Err(Failure::input(format!(
            "{}: numerics.scheme = \"{}\" with --backend cuda: the GPU runs the steady \
             four-stage scheme only (--set numerics.scheme=\"rk-local\", or --backend cpu)",
            job.source.origin,
            serde_name(&scheme)
        )));
    }
    Ok(job)
}

/// Variables of a checkpoint: ρ, ρu, ρv, ρw, ρE of each cell.
const STATE_VARS: usize = 5;

/// The columns of a steady run's `residuals.csv` after `iteration` (done before the row's
/// residual was measured): the density residual over its largest so far, then the RMS of
/// R/Ω of each variable.
const STEADY_COLUMNS: [&str; 6] = ["drop", "rho", "rho_u", "rho_v", "rho_w", "rho_e"];

/// The columns of an unsteady run's `residuals.csv` after `iteration` (the step): time, Δt,
/// and the RMS of ΔU/Δt of each variable over the step.
const UNSTEADY_COLUMNS: [&str; 7] = ["time", "dt", "rho", "rho_u", "rho_v", "rho_w", "rho_e"];

/// The mesh and the solver at the start (or at the checkpoint's state); errors name the key
/// at fault.
fn setup(job: &FvJob) -> Result<FvSetup, Failure> {
    let case = &job.case;
    let mesh = (case.mesh()).map_err(|e| job.invalid(case.mesh_key(), e.to_string()))?;
    let mut setup = case.setup(mesh).map_err(|(key, e)| job.invalid(&key, e))?;
    if let Some(restart) = &job.restart {
        check_same_kind(restart, case)?;
        let vars = restored_state(restart, setup.state.len(), STATE_VARS)?;
        // Checkpoints hold the mesh's numbering, whatever `numerics.renumber` was.
        let user: Vec<Cons> = (0..setup.state.len())
            .map(|c| std::array::from_fn(|k| vars[k][c]))
            .collect();
        setup.state = setup.solver.from_user(&user);
    }
    Ok(setup)
}

/// Whether `scheme` marches to a steady state.
fn is_steady(scheme: Scheme) -> bool {
    scheme != Scheme::SspRk3
}

/// A checkpoint continues only a run of its kind, steady or unsteady: their histories differ
/// (residuals before each iteration, or time and rates after each step).
fn check_same_kind(restart: &Restart, case: &FvCase) -> Result<(), Failure> {
    let Ok(theirs) = FvCase::from_toml(&restart.checkpoint.case_toml, "checkpoint") else {
        return Ok(());
    };
    let (was, is) = (theirs.numerics.scheme, case.numerics.scheme);
    if is_steady(was) == is_steady(is) {
        return Ok(());
    }
    Err(Failure::input(format!(
        "--restart {}: the checkpoint is of a run with numerics.scheme = \"{}\", the case has \
         \"{}\"; a steady run continues only a steady one, an unsteady run an unsteady one",
        restart.file.display(),
        serde_name(&was),
        serde_name(&is)
    )))
}

/// `ferroflow run` of a finite-volume case.
pub fn run(args: RunArgs) -> Result<(), Failure> {
    let world = World::alone();
    let job = job(args, &world)?;
    in_pool(&job, |interrupt| FvRun::start(&job, interrupt)?.iterate())
}

/// `ferroflow check` of a finite-volume case: the case resolved, the mesh built and the
/// solver set up (which checks the patches and the mesh), nothing stepped or written.
pub fn check(args: RunArgs) -> Result<(), Failure> {
    let world = World::alone();
    let job = job(args, &world)?;
    let mut setup = setup(&job)?;
    let case = &job.case;
    let counts = setup.mesh.cells.counts();
    let kinds: Vec<String> = (counts.iter())
        .map(|(kind, n)| format!("{}: {n}", kind.name()))
        .collect();
    let g = &setup.solver.geometry;
    println!(
        "case {} (finite volumes), {} cells ({}), {} faces, f64",
        case.case.name,
        g.cells,
        kinds.join(", "),
        g.faces()
    );
    let patches: Vec<String> = (setup.mesh.patches.iter())
        .map(|name| format!("{name} ({})", serde_name(&case.patch_kind(name))))
        .collect();
    println!("patches: {}", patches.join(", "));
    let n = &case.numerics;
    let physics = match setup.solver.viscous {
        Some(_) => "Navier-Stokes",
        None => "Euler",
    };
    println!(
        "{physics}, γ = {}; {}, limiter {}, CFL {}",
        case.physics.gamma,
        serde_name(&n.scheme),
        serde_name(&n.limiter),
        n.cfl
    );
    let mut dt = vec![0.0; setup.state.len()];
    (setup.solver).time_steps(&setup.state, 0.0, n.cfl, &mut dt);
    let smallest = dt.iter().copied().fold(f64::INFINITY, f64::min);
    let stop = match n.scheme {
        Scheme::SspRk3 => format!("at t = {}", n.end_time),
        Scheme::RkLocal | Scheme::NewtonJacobi => {
            format!("steady at a residual drop of {:e}", n.residual_drop)
        }
    };
    println!(
        "stop: {stop}, at most {} iterations; smallest time step now {smallest:.4e}",
        n.max_iterations
    );
    if job.cuda {
        println!("cuda: the iterations on GPU 0 (the device is opened when the run starts)");
    }
    job.print_check_end();
    Ok(())
}

/// How `value` is written in a case file.
fn serde_name(value: &impl serde::Serialize) -> String {
    toml::Value::try_from(value).map_or_else(|_| "?".into(), |v| v.as_str().unwrap_or("?").into())
}

/// A finite-volume run in progress.
struct FvRun<'a> {
    job: &'a FvJob,
    setup: FvSetup,
    /// The GPU copy of the solver and state that iterates, with `--backend cuda`; then
    /// `setup.state` is the state last read back.
    gpu: Option<CudaSolver>,
    /// Whether the GPU's iteration from its state has begun (its residual measured).
    begun: bool,
    sim: Simulation,
    /// Time reached (unsteady).
    time: f64,
    /// Wall time of the steps, earlier runs of a restarted one included.
    wall_seconds: f64,
    files: MeshOutput,
    interrupt: Interrupt,
    /// The scheme's iterations or steps, with their buffers.
    march: March,
}

/// A run's iterations (steady) or time steps (unsteady).
enum March {
    Steady(SteadyIteration),
    /// The steps, and the state before the last (for the rates of its row).
    Unsteady(GlobalSteps, Vec<Cons>),
}

impl<'a> FvRun<'a> {
    /// Sets the run up, then opens the output directory: nothing is written before the case,
    /// the mesh and the checkpoint are found valid.
    fn start(job: &'a FvJob, interrupt: Interrupt) -> Result<FvRun<'a>, Failure> {
        let setup = setup(job)?;
        let gpu = (job.cuda)
            .then(|| CudaSolver::new(&setup.solver, &setup.state, &CudaOptions::default()))
            .transpose()
            .map_err(|e| match e {
                BackendError::NotSuitable { .. } => Failure::input(e.to_string()),
                e => Failure::runtime(e),
            })?;
        let n = &job.case.numerics;
        let steady = is_steady(n.scheme);
        let stop = StopCriteria {
            tolerance: if steady { n.residual_drop } else { 0.0 },
            max_iterations: n.max_iterations,
            check_interval: 1,
            stall_checks: 0,
        };
        let (sim, wall_seconds) = match &job.restart {
            Some(r) => (r.checkpoint.simulation(stop), r.checkpoint.wall_seconds),
            None => (Simulation::new(stop), 0.0),
        };
        // An unsteady run's time is its last step's (every step has its row).
        let last = sim.history.last().filter(|_| !steady);
        let time = last.map_or(0.0, |row| row.relative[0]);
        let work = Work {
            names: if steady { &["drop"] } else { &["rho rate"] },
            nodes: setup.state.len(),
            tolerance: if steady {
                n.residual_drop
            } else {
                f64::MIN_POSITIVE
            },
            max_iterations: n.max_iterations,
            start_iteration: sim.iteration,
        };
        let backend = match &gpu {
            Some(gpu) => format!("cuda, {}, finite volumes", gpu.device_name()),
            None => format!("cpu, {} threads, finite volumes", job.threads),
        };
        let g = &setup.solver.geometry;
        let headline = format!(
            "{}: {} cells, {} faces, f64, {backend}, {}",
            job.case.case.name,
            g.cells,
            g.faces(),
            serde_name(&n.scheme)
        );
        let files = MeshOutput::open(job, work, &backend, &headline)?;
        let cells = setup.state.len();
        let march = match n.scheme {
            Scheme::RkLocal => March::Steady(SteadyIteration::new(
                Method::Stages {
                    cfl: n.cfl,
                    stages: FOUR_STAGE.to_vec(),
                },
                cells,
            )),
            Scheme::NewtonJacobi => {
                let how = Implicit {
                    cfl: n.cfl,
                    sweeps: n.sweeps,
                };
                March::Steady(SteadyIteration::new(Method::Implicit(how), cells))
            }
            Scheme::SspRk3 => {
                March::Unsteady(GlobalSteps::new(cells, n.cfl), vec![[0.0; 5]; cells])
            }
        };
        Ok(FvRun {
            job,
            setup,
            gpu,
            begun: false,
            sim,
            time,
            wall_seconds,
            files,
            interrupt,
            march,
        })
    }

    /// Iterates until a steady state, the end time, the iteration limit, divergence or a
    /// signal, then writes the results.
    fn iterate(mut self) -> Result<(), Failure> {
        let (case, start) = (&self.job.case, Instant::now());
        let earlier = self.wall_seconds;
        let status = loop {
            if let Some(why) = self.measure()? {
                return Err(self.fail_diverged(&why));
            }
            if let Some(status) = self.stopped() {
                break status;
            }
            self.advance()?;
            self.sim.iteration += 1;
            self.wall_seconds = earlier + start.elapsed().as_secs_f64();
            let step = self.sim.iteration;
            let o = &case.output;
            let snapshot = o.field_interval > 0 && step.is_multiple_of(o.field_interval);
            let checkpoint =
                o.checkpoint_interval > 0 && step.is_multiple_of(o.checkpoint_interval);
            // The GPU's state is read back only where it is written.
            if self.gpu.is_none() || snapshot || checkpoint {
                self.fetch()?;
                if let Some(why) = self.unphysical() {
                    return Err(self.fail_diverged(&why));
                }
            }
            if snapshot {
                let setup = &self.setup;
                let write = |path: &Path| fv_output::write_fields(setup, o.compress, path);
                self.files.snapshot(step, write)?;
            }
            if checkpoint {
                self.checkpoint()?;
            }
        };
        self.fetch()?;
        if let Some(why) = self.unphysical() {
            return Err(self.fail_diverged(&why));
        }
        self.finish(status)
    }

    /// With the GPU, reads its state back into `setup.state`.
    fn fetch(&mut self) -> Result<(), Failure> {
        if let Some(gpu) = &self.gpu {
            self.setup.state = gpu.state().map_err(Failure::runtime)?;
        }
        Ok(())
    }

    /// Steady: the residual of the state reached, its row and its progress, unless the
    /// history has it (a restart's checkpoint); the residuals where the density's was
    /// largest are the simulation's normalisers. Why the run diverged, if the residual is
    /// not finite. On the GPU the measure begins the iteration.
    fn measure(&mut self) -> Result<Option<String>, Failure> {
        let case = &self.job.case;
        let at = self.sim.iteration;
        let measured = self.sim.history.last().is_some_and(|r| r.iteration == at);
        if !is_steady(case.numerics.scheme) || measured {
            return Ok(None);
        }
        let rms = match (&mut self.gpu, &mut self.march) {
            (Some(gpu), _) => {
                self.begun = true;
                (gpu.begin_iteration(case.numerics.cfl)).map_err(Failure::runtime)?
            }
            (None, March::Steady(iteration)) => {
                iteration.measure(&mut self.setup.solver, &self.setup.state)
            }
            (None, March::Unsteady(..)) => return Ok(None),
        };
        let peak = (self.sim.initial).get_or_insert_with(|| rms.to_vec());
        if rms[0] > peak[0] {
            *peak = rms.to_vec();
        }
        let drop = if peak[0] > 0.0 { rms[0] / peak[0] } else { 0.0 };
        let mut row = vec![drop];
        row.extend_from_slice(&rms);
        self.sim.history.push(HistoryRow {
            iteration: at,
            relative: row,
        });
        self.files.report.update(at, &[drop]);
        Ok((rms.iter().any(|x| !x.is_finite()))
            .then(|| format!("diverged at iteration {at}: the residual is not finite")))
    }

    /// Why the run stops before its next iteration, if it does.
    fn stopped(&self) -> Option<FemStatus> {
        let n = &self.job.case.numerics;
        match is_steady(n.scheme) {
            true => {
                let last = self.sim.history.last().map(|row| &row.relative);
                let peak = self.sim.initial.as_ref().map(|f| f[0]);
                if let (Some(row), Some(peak)) = (last, peak) {
                    if row[1] <= n.residual_drop * peak {
                        return Some(FemStatus::Steady);
                    }
                }
            }
            false if self.time >= n.end_time => return Some(FemStatus::EndTime),
            false => {}
        }
        if self.sim.iteration >= n.max_iterations {
            return Some(FemStatus::MaxSteps);
        }
        self.interrupt.requested().then_some(FemStatus::Interrupted)
    }

    /// One iteration of the case's scheme (a steady one from the residual measured before
    /// it); an unsteady step adds its row.
    fn advance(&mut self) -> Result<(), Failure> {
        let n = &self.job.case.numerics;
        if let Some(gpu) = &mut self.gpu {
            // `rk-local`, the only scheme `job` lets through to the GPU.
            if !self.begun {
                gpu.begin_iteration(n.cfl).map_err(Failure::runtime)?;
            }
            gpu.end_iteration(&FOUR_STAGE).map_err(Failure::runtime)?;
            self.begun = false;
            return Ok(());
        }
        let (s, u) = (&mut self.setup.solver, &mut self.setup.state);
        match &mut self.march {
            March::Steady(iteration) => iteration.advance(s, u),
            March::Unsteady(steps, before) => {
                let t = self.time;
                before.copy_from_slice(u);
                let next = steps.step(s, u, t, n.end_time);
                let step = next - t;
                let mut row = vec![next, step];
                row.extend(rms_rates(before, u, step));
                self.time = next;
                let iteration = self.sim.iteration + 1;
                self.files.report.update(iteration, &row[2..3]);
                self.sim.history.push(HistoryRow {
                    iteration,
                    relative: row,
                });
            }
        }
        Ok(())
    }

    /// Why the state reached is not usable, if it is not: the first cell with a value not
    /// finite, or a density or pressure not positive.
    fn unphysical(&self) -> Option<String> {
        let gas = self.setup.solver.gas;
        let bad = |u: &Cons| {
            let w = gas.prim(u);
            !(u.iter().all(|x| x.is_finite()) && w[0] > 0.0 && w[4] > 0.0)
        };
        let c = self.setup.state.par_iter().position_first(bad)?;
        let u = self.setup.state[c];
        let c = self.setup.solver.user_cell(c);
        let w = gas.prim(&u);
        let what = match u.iter().all(|x| x.is_finite()) {
            false => "not finite".to_string(),
            true => format!("density {:.3e}, pressure {:.3e}", w[0], w[4]),
        };
        Some(format!(
            "diverged at iteration {}: cell {c} is {what}",
            self.sim.iteration
        ))
    }

    /// The state after the last iteration as a checkpoint holds it: ρ, ρu, ρv, ρw, ρE per
    /// cell, in the mesh's numbering.
    fn state_vars(&self) -> Vec<Vec<f64>> {
        let u = &self.setup.solver.to_user(&self.setup.state);
        (0..STATE_VARS)
            .map(|k| u.iter().map(|u| u[k]).collect())
            .collect()
    }

    /// Writes the checkpoint of the state after the last iteration, atomically.
    fn checkpoint(&self) -> Result<(), Failure> {
        (self.files).checkpoint(self.job, &self.sim, self.wall_seconds, self.state_vars())
    }

    /// The summary of the run so far, ended with `status`, with the forces on `surfaces`.
    fn summary(&self, status: FemStatus, surfaces: &[Surface]) -> FvSummary {
        let (case, s) = (&self.job.case, &self.setup.solver);
        let steady = is_steady(case.numerics.scheme);
        let last = self.sim.history.last().map(|r| r.relative.as_slice());
        let at = if steady { 1 } else { 2 };
        let last_rms = std::array::from_fn(|k| last.map_or(f64::NAN, |r| r[at + k]));
        let g = &s.geometry;
        let cells = g.cells;
        FvSummary {
            case: case.case.name.clone(),
            solver: SolverKind::FiniteVolume,
            scheme: case.numerics.scheme,
            overrides: self.job.overrides.iter().map(Override::to_string).collect(),
            mesh: FvMeshSize {
                cells,
                faces: g.faces(),
                boundary_faces: g.faces() - g.internal,
            },
            precision: "f64".into(),
            backend: match self.gpu {
                Some(_) => "cuda",
                None => "cpu",
            }
            .into(),
            threads: self.job.threads,
            steps: self.sim.iteration,
            time: (!steady).then_some(self.time),
            converged: status == FemStatus::Steady,
            status,
            residual_drop: last.filter(|_| steady).map(|r| r[0]),
            peak_rms: (self.sim.initial.as_ref())
                .filter(|_| steady)
                .map(|f| std::array::from_fn(|k| f[k])),
            last_rms,
            totals: s.totals(&self.setup.state),
            wall_seconds: self.wall_seconds,
            total_wall_seconds: self.job.started.elapsed().as_secs_f64(),
            cell_updates_per_second: cells as f64 * self.sim.iteration as f64 / self.wall_seconds,
            forces: fv_output::forces(case, surfaces),
            shock_tube_l1_density: fv_output::shock_tube_error(case, &self.setup, self.time),
        }
    }

    /// Writes the summary, the history and the surface tables into the staging directory of
    /// `out`.
    fn write_record(
        &self,
        out: &OutputDir,
        status: FemStatus,
        surfaces: &[Surface],
    ) -> Result<FvSummary, Failure> {
        let summary = self.summary(status, surfaces);
        let columns: &[&str] = match is_steady(self.job.case.numerics.scheme) {
            true => &STEADY_COLUMNS,
            false => &UNSTEADY_COLUMNS,
        };
        let history = &self.sim.history;
        let surface = |s: &Surface| {
            let path = out.join(&fv_output::surface_file(&s.patch));
            fv_output::write_surface(&path, s)
        };
        write_residuals(&out.join("residuals.csv"), columns, history)
            .and_then(|()| surfaces.iter().try_for_each(surface))
            .and_then(|()| write_json(&out.join(SUMMARY), &summary))
            .map_err(Failure::runtime)?;
        Ok(summary)
    }

    /// Ends a run whose state diverged (see [`MeshOutput::diverged`]).
    fn fail_diverged(mut self, why: &str) -> Failure {
        // The summary's totals are of the state reached.
        if let Err(e) = self.fetch() {
            return e;
        }
        let record = self.write_record(&self.files.out, FemStatus::Diverged, &[]);
        self.files.diverged(self.job, why, record.map(drop))
    }

    /// Writes the results and the checkpoint; a run that ends by itself replaces the results
    /// in the output directory, an interrupted one leaves its own in the staging directory
    /// and fails with exit code 130.
    fn finish(mut self, status: FemStatus) -> Result<(), Failure> {
        let compress = self.job.case.output.compress;
        let write = |path: &Path| fv_output::write_fields(&self.setup, compress, path);
        let done = (&self.sim, self.wall_seconds);
        (self.files).write_final(self.job, done, self.state_vars(), write)?;
        let surfaces = fv_output::surfaces(&self.job.case, &mut self.setup, self.time);
        let summary = self.write_record(&self.files.out, status, &surfaces)?;
        let interrupted = status == FemStatus::Interrupted;
        let reached = match (summary.time, summary.residual_drop) {
            (Some(t), _) => format!("t = {t:.6}"),
            (None, Some(drop)) => format!("residual drop {drop:.3e}"),
            (None, None) => "nothing measured".into(),
        };
        let what = format!(
            "{} iterations, {reached} ({:.2} s)",
            summary.steps, summary.wall_seconds
        );
        let dir = MeshOutput::results_dir(self.job, interrupted);
        (self.files).tell(status, &what, &dir, &summary.forces);
        if let Some(l1) = summary.shock_tube_l1_density {
            let note = format!("  L1 error in density against the exact shock tube: {l1:.4e}");
            self.files.report.note(&note);
        }
        self.files.end(self.job, self.sim.iteration, interrupted)
    }
}

/// The RMS over the cells of (u − before)/Δt of each variable.
fn rms_rates(before: &[Cons], u: &[Cons], dt: f64) -> Cons {
    let mut sum = [0.0; 5];
    for (a, b) in before.iter().zip(u) {
        (0..5).for_each(|k| sum[k] += ((b[k] - a[k]) / dt).powi(2));
    }
    sum.map(|x| (x / u.len() as f64).sqrt())
}
