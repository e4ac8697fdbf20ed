//! `ferroflow run`: solve a case, with progress, checkpoints, signals and result files.
use crate::backends::{cpu_threads, make_backend};
use crate::input::{key_values, problem_keys, LoadedCase, Override, DEFAULT_CASE};
use crate::memory::{self, StateSize};
use crate::progress::{Mode, Reporter, Work};
use crate::results::{self, Final, OutputDir, CASE_FILE, LOG_FILE};
use crate::signals::Interrupt;
use crate::world::World;
use crate::Failure;
use clap::Args;
use ferroflow_ac::Problem;
use ferroflow_cases::case::{BackendKind, MethodKind, Model, Precision};
use ferroflow_cases::fem::SolverKind;
use ferroflow_cases::post::post_process;
use ferroflow_cases::resolvable::check_resolvable;
use ferroflow_cases::summary::{RunRecord, Summary};
use ferroflow_cases::Case;
use ferroflow_core::nodes::{from_halves, to_halves, NodeVar, Recorder, Sampled};
use ferroflow_core::{Backend, Fields, Layout, Points, Real, Snapshot, Solver};
use ferroflow_io::file::naming;
use ferroflow_io::vtk;
use ferroflow_solver::checkpoint::{self, Checkpoint};
use ferroflow_solver::Status;
use ferroflow_solver::{Callback, Flow, RunError, Schedule, Simulation, SolveError, Stall};
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Periodic checkpoints take at most about 1 / this of a run's time (see `iterate`).
const CHECKPOINT_COST_FACTOR: u32 = 100;

/// Arguments of `ferroflow run`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow run                                     # the default case, results in ferroflow-out/cavity2d-re100/
  ferroflow run cavity3d-re100 --threads 8
  ferroflow run my-case.toml --out results/run1
  ferroflow run --set physics.reynolds=400          # in ferroflow-out/cavity2d-re100--physics.reynolds=400.0/
  ferroflow run --set 'mesh.nodes=[257,257]' --set numerics.tolerance=1e-9
  ferroflow run --restart ferroflow-out/cavity2d-re100   # continue after Ctrl-C or a kill
  ferroflow run cavity3d-re100 --blocks 1,1,4       # the grid cut into 4 blocks along z

Results: fields.vti (open in ParaView), summary.json, residuals.csv, centerline_u.csv,
centerline_v.csv, residuals.png, centerlines.png, run.log, case.resolved.toml, checkpoint.ffcp.
A run writes them into DIR/partial/ and moves them into DIR when it ends with exit code 0:
until then (and after a failure, a kill, divergence, a stall or Ctrl-C) DIR keeps the earlier
results. One run at a time uses a directory; results of another case (other [case], [mesh],
[physics] or [boundary.<patch>] values) are replaced only with --overwrite.
Exit codes: 0 done (converged or iteration limit), 1 runtime failure, 2 bad input or an
output directory in use or holding another case, 3 diverged or unstable, 4 stalled (the
residuals stopped falling before the tolerance), 130 interrupted.
Ctrl-C (or SIGTERM) stops at the next residual check and writes a checkpoint and the
results into DIR/partial/; a second Ctrl-C aborts at once without them (a checkpoint written
earlier stays).")]
pub struct RunArgs {
    /// Case file (TOML) or built-in case name [default: cavity2d-re100, or with --restart the
    /// checkpoint's case].
    #[arg(value_name = "CASE")]
    pub(crate) case: Option<OsString>,
    /// Output directory [default: ferroflow-out/<case name>/, with `--KEY=VALUE` appended for
    /// each --set that changes what the case solves; with --restart the checkpoint's directory].
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
    /// Replace results of another case in the output directory.
    #[arg(long)]
    pub(crate) overwrite: bool,
    /// Compute backend, overriding the case.
    #[arg(long, value_enum)]
    pub(crate) backend: Option<BackendKind>,
    /// Floating-point precision, overriding the case.
    #[arg(long, value_enum)]
    pub(crate) precision: Option<Precision>,
    /// CPU threads (0 = all cores; at most 4 per core), overriding the case.
    #[arg(long, value_name = "N")]
    pub(crate) threads: Option<usize>,
    /// Blocks per axis the grid is cut into (parallel.blocks), overriding the case.
    #[arg(long, value_name = "PX,PY[,PZ]", value_delimiter = ',')]
    pub(crate) blocks: Vec<usize>,
    /// Set any key of the case (dotted path, TOML value), e.g. --set numerics.cfl=1.2.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(crate) set: Vec<Override>,
    /// Use the default CUDA launch shape instead of the tuned one (backend.tune = false).
    #[arg(long)]
    pub(crate) no_tune: bool,
    /// Continue from the checkpoint in DIR (the unfinished run's in DIR/partial/ if there is
    /// one), or from the checkpoint file DIR.
    #[arg(long, value_name = "DIR")]
    pub(crate) restart: Option<PathBuf>,
    /// Print nothing while running (run.log is still written).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// A checkpoint to continue from, and the file it was read from.
pub struct Restart {
    pub file: PathBuf,
    pub checkpoint: Checkpoint,
}

/// Everything a run needs, checked except for the values the solver validates.
pub struct Job<'w> {
    pub loaded: LoadedCase,
    pub out: PathBuf,
    /// Whether results of another case in `out` may be replaced.
    pub overwrite: bool,
    pub restart: Option<Restart>,
    pub mode: Mode,
    pub interrupt: Interrupt,
    /// The processes that run it.
    pub world: &'w World,
    /// When this invocation started: summary.json's `total_wall_seconds` counts from here.
    pub started: Instant,
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    match crate::mesh_job::solver_of_args(&args)? {
        SolverKind::FiniteElement => return crate::fem_run::run(args),
        SolverKind::FiniteVolume => return crate::fv_run::run(args),
        SolverKind::Structured => {}
    }
    // Kept to the end: MPI is finalised when the last handle to it is dropped.
    let world = World::join();
    let job = world.agree(job(args, &world))?;
    execute(job).map(|_| ())
}

/// The job the arguments describe.
pub fn job(args: RunArgs, world: &World) -> Result<Job<'_>, Failure> {
    let started = Instant::now();
    let interrupt = Interrupt::install(world.is_root()).map_err(Failure::runtime)?;
    let restart = args.restart.as_deref().map(read_checkpoint).transpose()?;
    // The flags are shorthands for overrides, applied after the --set ones.
    let mut overrides = args.set;
    let flags = [
        ("backend.kind", args.backend.map(value_name)),
        ("backend.precision", args.precision.map(value_name)),
        ("backend.threads", args.threads.map(|t| t.to_string())),
        ("backend.tune", args.no_tune.then(|| "false".to_string())),
        (
            "parallel.blocks",
            (!args.blocks.is_empty()).then(|| format!("{:?}", args.blocks)),
        ),
    ];
    for (key, value) in flags {
        if let Some(value) = value {
            overrides.push(Override {
                key: key.into(),
                value,
            });
        }
    }
    let loaded = match (&args.case, &restart) {
        (Some(source), _) => LoadedCase::load(source, &overrides)?,
        (None, Some(r)) => LoadedCase::parse(
            r.checkpoint.case_toml.clone(),
            &r.file.display().to_string(),
            &overrides,
        )?,
        (None, None) => LoadedCase::load(DEFAULT_CASE, &overrides)?,
    };
    let mut loaded = loaded;
    if let (None, Some(r)) = (&args.case, &restart) {
        // A checkpoint from before `numerics.method` existed ran the explicit scheme, which
        // its restart continues unless told otherwise.
        let named = |toml: &str| {
            toml.parse::<toml::Table>()
                .is_ok_and(|t| t.get("numerics").and_then(|n| n.get("method")).is_some())
        };
        let overridden = overrides.iter().any(|o| o.key == "numerics.method");
        if !named(&r.checkpoint.case_toml) && !overridden {
            loaded.case.numerics.method = MethodKind::Explicit;
        }
    }
    let case = &loaded.case;
    let blocks = case
        .decomposition(world.rank_size().1)
        .map_err(|e| loaded.invalid(&e))?
        .count();
    // Where a GPU would run blocks (auto probes for one only then).
    let gpu = match case.backend.kind {
        BackendKind::Cuda => true,
        BackendKind::Auto => blocks > 1 && crate::backends::cuda_probe().is_ok(),
        BackendKind::Cpu => false,
    };
    loaded.case.resolve_method(gpu, blocks);
    loaded.case.resolve_dissipation();
    if let Some(r) = &restart {
        check_same_model(&r.file, &r.checkpoint, &loaded.case)?;
    }
    let out = match (args.out, &restart) {
        (Some(out), _) => out,
        (None, Some(r)) => results::output_dir_of(&r.file),
        (None, None) => Path::new("ferroflow-out").join(loaded.dir_name()),
    };
    // Checked again under the directory's lock; here, so that a refusal comes before set-up.
    // By the first process only: the check takes the lock for an instant, and two processes
    // doing so at once would each see the other's as another run's.
    if world.is_root() {
        results::check_usable(&out, &problem_keys(&loaded.case), args.overwrite)?;
    }
    Ok(Job {
        loaded,
        out,
        overwrite: args.overwrite,
        restart,
        mode: Mode::detect(args.quiet),
        interrupt,
        world,
        started,
    })
}

/// The name a command-line value (and a case file) gives `value`.
pub fn value_name(value: impl clap::ValueEnum) -> String {
    value
        .to_possible_value()
        .map_or_else(String::new, |v| v.get_name().to_string())
}

/// A checkpoint continues only a case of its own physical model (the variables differ).
fn check_same_model(path: &Path, ck: &Checkpoint, case: &Case) -> Result<(), Failure> {
    let Ok(theirs) = Case::from_toml(&ck.case_toml, "checkpoint") else {
        return Ok(());
    };
    let (was, is) = (theirs.physics.model, case.physics.model);
    if was == is {
        return Ok(());
    }
    Err(Failure::input(format!(
        "--restart {}: the checkpoint is of case {} with physics.model = \"{}\", the case \
         given ({}) has physics.model = \"{}\"; a checkpoint continues only its own model",
        path.display(),
        theirs.case.name,
        was.name(),
        case.case.name,
        is.name()
    )))
}

/// Reads the checkpoint in directory (or file) `path`.
pub fn read_checkpoint(path: &Path) -> Result<Restart, Failure> {
    let file = if path.is_dir() {
        results::checkpoint_in(path)
    } else {
        path.to_path_buf()
    };
    let checkpoint = checkpoint::load(&file)
        .map_err(|e| Failure::input(format!("--restart {}: {e}", file.display())))?;
    Ok(Restart { file, checkpoint })
}

/// Runs a job in the precision its case asks for; returns the summary of a finished run (in
/// the first process of an MPI job; the others have none).
pub fn execute(job: Job) -> Result<Option<Summary>, Failure> {
    let result = match job.loaded.case.backend.precision {
        Precision::F64 => execute_in::<f64>(&job),
        Precision::F32 => execute_in::<f32>(&job),
    };
    job.world.agree(result)
}

fn execute_in<R: Real>(job: &Job) -> Result<Option<Summary>, Failure> {
    let mut session = Session::<R>::start(job)?;
    let (status, stall) = session.iterate()?;
    session.finish(status, stall)
}

/// A run in progress: the problem on its backend, the driver's record, the output directory.
struct Session<'a, R: Real> {
    job: &'a Job<'a>,
    problem: Problem<R>,
    backend: Box<dyn Backend<Real = R>>,
    sim: Simulation,
    /// Wall time of the iterations, earlier runs of a restarted one included.
    wall_seconds: f64,
    /// The output directory, in the first process only.
    out: Option<OutputDir>,
    report: Reporter,
    /// The resolved case, as written to the log and to checkpoints.
    resolved: String,
}

/// A run set up in one process, before anything is written.
struct Prepared<R: Real> {
    problem: Problem<R>,
    backend: Box<dyn Backend<Real = R>>,
    /// What the backend is, in words.
    backend_line: String,
    sim: Simulation,
    wall_seconds: f64,
}

/// Writes with `write` in the first process (the one with the output directory) and settles
/// the outcome in all.
fn write_first(
    out: &mut Option<OutputDir>,
    job: &Job,
    write: impl FnOnce(&mut OutputDir) -> io::Result<()>,
) -> Result<(), Failure> {
    let written = out.as_mut().map_or(Ok(()), write);
    job.world.agree(written.map_err(Failure::runtime))
}

impl<'a, R: Real> Session<'a, R> {
    /// Validates the case and sets everything up; nothing is written before all is valid, in
    /// every process.
    fn start(job: &'a Job) -> Result<Session<'a, R>, Failure> {
        let case = &job.loaded.case;
        let Prepared {
            problem,
            backend,
            backend_line,
            sim,
            wall_seconds,
        } = job.world.agree(Session::prepare(job))?;
        let resolved = case.to_toml();
        let work = || Work {
            names: problem.variable_names(),
            nodes: problem.layout.interior_nodes(),
            tolerance: sim.stop.tolerance,
            max_iterations: sim.stop.max_iterations,
            start_iteration: sim.iteration,
        };
        let opened = job
            .world
            .is_root()
            .then(|| Session::<R>::open(job, &resolved, work()));
        let (out, mut report) = match job.world.agree(opened.transpose())? {
            Some((out, report)) => (Some(out), report),
            None => (None, Reporter::silent(work())),
        };
        log_header(&mut report, job.restart.as_ref(), &backend_line, &resolved);
        report.note(&format!(
            "{}: {}D {:?}, {}, {}; output in {}",
            case.case.name,
            case.mesh.dim,
            case.mesh.nodes,
            R::NAME,
            backend_line,
            job.out.display()
        ));
        if case.physics.model == Model::Boussinesq {
            let cavity = case.heated_cavity().map_err(|e| job.loaded.invalid(&e))?;
            report.note(&format!(
                "Ra = {:.6e}, Pr = {}, U_ref = {:.4e} (free-fall velocity)",
                cavity.rayleigh,
                cavity.prandtl,
                cavity.velocity_scale()
            ));
        }
        let limit = problem.stable_cfl_at_rest();
        if case.numerics.cfl > limit {
            report.note(&format!(
                "warning: numerics.cfl = {} is above {limit:.3}, the stability limit of the state \
                 at rest on this grid: a grid-scale checkerboard may grow (with the energy \
                 equation the run then ends as unstable)",
                case.numerics.cfl
            ));
        }
        Ok(Session {
            job,
            problem,
            backend,
            sim,
            wall_seconds,
            out,
            report,
            resolved,
        })
    }

    /// The problem on its backend (with the restart's state) and the driver's record. The
    /// memory the state needs is checked before any of it is allocated.
    fn prepare(job: &Job) -> Result<Prepared<R>, Failure> {
        let case = &job.loaded.case;
        let invalid = |e| job.loaded.invalid(&e);
        let stop = case.stop().map_err(invalid)?;
        let decomposition = case
            .decomposition(job.world.rank_size().1)
            .map_err(invalid)?;
        if case.backend.kind != BackendKind::Cuda {
            cpu_threads(&case.backend, job.world).map_err(invalid)?;
        }
        // The processes on this machine (each holding the whole state) share its memory.
        let equations = memory::stand_in::<R>(case).map_err(invalid)?.equations();
        let share = memory::available().map(|a| a / job.world.here() as u64);
        StateSize::of(case, equations, decomposition.count())
            .map_err(invalid)?
            .fits(&case.case.name, share)?;
        // Over several processes each block evaluates its own initial values.
        let problem = match job.world.rank_size().1 {
            1 => case.problem::<R>(),
            _ => case.problem_in_blocks::<R>(),
        };
        let problem = problem.map_err(invalid)?;
        check_resolvable(case, &problem).map_err(invalid)?;
        let (mut backend, backend_line) = make_backend(
            &problem,
            &case.backend,
            &case.parallel,
            decomposition,
            job.world,
        )?;
        let (sim, wall_seconds) = match &job.restart {
            Some(Restart {
                checkpoint: ck,
                file,
            }) => {
                let points = Points::grid(problem.layout.dim, problem.layout.n);
                let bad = |e| Failure::input(format!("--restart {}: {e}", file.display()));
                // A checkpoint cut as this run is: each process reads its own pieces (settled
                // among the processes before restoring them, which exchanges halos).
                let wanted = backend.piece_points();
                let mine = ck.pieces_at::<R>(points, problem.equations(), &wanted);
                match job.world.agree(mine.map_err(bad))? {
                    Some(pieces) => backend.restore_pieces(&pieces),
                    None => {
                        let state = ck.state::<R>(points, problem.equations()).map_err(bad)?;
                        backend.restore(&state)
                    }
                }
                .map_err(|e| job.world.fail_alone(Failure::runtime(e)))?;
                (ck.simulation(stop), ck.wall_seconds)
            }
            None => (Simulation::new(stop), 0.0),
        };
        Ok(Prepared {
            problem,
            backend,
            backend_line,
            sim,
            wall_seconds,
        })
    }

    /// Opens the output directory and starts the resolved case and the log in it.
    fn open(job: &Job, resolved: &str, work: Work) -> Result<(OutputDir, Reporter), Failure> {
        let case = &job.loaded.case;
        let keys = problem_keys(case);
        let out = OutputDir::open(&job.out, &keys, job.overwrite, job.restart.as_ref())?;
        ferroflow_io::file::write(&out.join(CASE_FILE), resolved).map_err(Failure::runtime)?;
        let (log, append) = (out.join(LOG_FILE), job.restart.is_some());
        let report = Reporter::new(job.mode, &log, append, work)
            .map_err(|e| Failure::runtime(naming(&log, e)))?;
        Ok((out, report))
    }

    /// Iterates to convergence, a stall, the iteration limit or a signal; the driver calls the
    /// progress report, the signal check, the snapshot and the checkpoint writers when they
    /// are due. After divergence it writes the summary and residual history (no fields),
    /// keeps the last checkpoint and fails with exit code 3.
    fn iterate(&mut self) -> Result<(Status, Option<Stall>), Failure> {
        let (job, problem, resolved) = (self.job, &self.problem, &self.resolved);
        let (world, output) = (job.world, &job.loaded.case.output);
        let (out, report, earlier) = (&mut self.out, &mut self.report, self.wall_seconds);
        let checkpoint_path = out.as_ref().map(|o| o.join(checkpoint::FILE_NAME));
        type B<R> = dyn Backend<Real = R>;
        // When the last checkpoint was written and how long that took.
        let mut throttle: Option<(Instant, Duration)> = None;
        let mut callbacks: [Callback<B<R>, Halt>; 3] = [
            Callback::new(Schedule::EveryCheck, |p, _| {
                report.update(p.iteration(), p.relative());
                // Processes may see a signal at different checks: all stop when any has one.
                Ok(match world.any(job.interrupt.requested()) {
                    true => Flow::Stop,
                    false => Flow::Continue,
                })
            }),
            Callback::new(Schedule::Iterations(output.field_interval), |p, backend| {
                // The last fields are the results, not a snapshot.
                let iteration = p.iteration();
                if !p.last && world.rank_size().1 > 1 {
                    // Pieces, as the final fields: no process gathers the grid.
                    let (pieces, shift) = pieces_and_shift(job, problem, backend)?;
                    let dir = results::snapshot_pieces(iteration);
                    let index = write_pieces(job, problem, &dir, pieces, shift)?;
                    write_first(out, job, |out| {
                        out.write_snapshot_index(problem, &index, iteration)
                    })?;
                } else if !p.last {
                    let (fields, _) = referenced(problem, backend, world)?;
                    write_first(out, job, |out| {
                        out.write_snapshot(problem, &fields, iteration, output.compress)
                    })?;
                }
                Ok(Flow::Continue)
            }),
            Callback::new(
                Schedule::Any(vec![
                    Schedule::Iterations(output.checkpoint_interval),
                    Schedule::AtEnd,
                ]),
                |p, backend| {
                    // A periodic checkpoint within 100 times the last one's cost of it is
                    // deferred to the next one due: on small grids on a GPU, writing every
                    // 1000 iterations took two thirds of the run. Every process decides alike.
                    let early = throttle.is_some_and(|(at, cost): (Instant, Duration)| {
                        at.elapsed() < CHECKPOINT_COST_FACTOR * cost
                    });
                    if !p.ending && !world.any(!early) {
                        return Ok(Flow::Continue);
                    }
                    let start = Instant::now();
                    if world.rank_size().1 > 1 {
                        let wall = earlier + p.elapsed;
                        let at = (p.sim, wall, resolved.as_str());
                        checkpoint_pieces(job, problem, backend, at, checkpoint_path.as_deref())?;
                        throttle = Some((Instant::now(), start.elapsed()));
                        return Ok(Flow::Continue);
                    }
                    // The raw state (pressure as the backend keeps it), so that the
                    // continuation is bitwise the same.
                    let state = download(backend, world)?;
                    // Only a physical state is kept: a checkerboard the residuals do not show
                    // ends the run here, with the last good checkpoint.
                    if let Err(e) = problem.check_bounds(&state) {
                        return Err(Halt::Unstable(format!(
                            "unstable at iteration {}: {e}",
                            p.iteration()
                        )));
                    }
                    let written = checkpoint_path.as_ref().map_or(Ok(()), |path| {
                        let state = state.snapshot();
                        checkpoint::save(path, resolved, p.sim, earlier + p.elapsed, &state)
                    });
                    world.agree(written.map_err(Failure::runtime))?;
                    throttle = Some((Instant::now(), start.elapsed()));
                    Ok(Flow::Continue)
                },
            ),
        ];
        let result = self
            .sim
            .run(&mut *self.backend, problem.variable_names(), &mut callbacks);
        drop(callbacks);
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(RunError::Solve(e @ SolveError::Diverged { .. })) => {
                return Err(self.diverged(Status::Diverged, e))
            }
            Err(RunError::Callback(Halt::Unstable(e))) => {
                return Err(self.diverged(Status::Unstable, e))
            }
            Err(RunError::Solve(e @ SolveError::Unmeasurable { .. })) => {
                let message = format!("{}: {e}", job.loaded.case.case.name);
                self.report.log(&message);
                return Err(Failure::input(message));
            }
            Err(RunError::Solve(e)) => return Err(world.fail_alone(Failure::runtime(e))),
            Err(RunError::Callback(Halt::Failed(failure))) => return Err(failure),
        };
        self.wall_seconds += outcome.wall_seconds;
        let status = if outcome.converged {
            Status::Converged
        } else if outcome.stalled.is_some() {
            Status::Stalled
        } else if self.sim.iteration >= self.sim.stop.max_iterations {
            Status::MaxIterations
        } else {
            Status::Interrupted
        };
        Ok((status, outcome.stalled))
    }

    /// The current state with pressure referenced, as results show it, and the shift that
    /// referenced it.
    /// The final fields, pressure referenced: in one process the whole grid; over several
    /// each process writes its pieces, and only the nodes the post-processing reads are
    /// gathered (no process holds the grid).
    fn final_fields(&mut self) -> Result<Final<R>, Failure> {
        let world = self.job.world;
        if world.rank_size().1 < 2 {
            let (fields, _) = referenced(&self.problem, &mut *self.backend, world)?;
            return Ok(Final::Whole(fields));
        }
        let pieces = (self.backend.pieces()).map_err(|e| world.fail_alone(Failure::runtime(e)))?;
        let (case, problem) = (&self.job.loaded.case, &self.problem);
        let recorder = Recorder::new(problem.layout);
        recorder.note(0, problem.pressure_ref);
        // Its errors, if any, are the real run's to report.
        let _ = post_process(case, problem, &recorder);
        let at = recorder.read();
        let raw = sample(self.job, &pieces, &at)?;
        let reference = at.iter().position(|a| *a == (0, problem.pressure_ref));
        let shift = R::of(raw[reference.expect("the reference node was noted")]);
        let referenced = at.iter().zip(raw).map(|((var, _), v)| match var {
            0 => (R::of(v) - shift).f64(),
            _ => v,
        });
        let values: Vec<f64> = referenced.collect();
        let sampled = Sampled::new(problem.layout, &at, &values);
        let index = write_pieces(self.job, problem, results::PIECES, pieces, shift)?;
        Ok(Final::Pieces(index, sampled))
    }

    /// Logs the most memory each process has held resident (NaN where it cannot be read).
    fn log_peak_memory(&mut self) {
        let mine = memory::peak_resident().map_or(f64::NAN, |b| b as f64);
        let peaks = self.job.world.each(mine);
        let mib: Vec<String> = peaks
            .iter()
            .map(|b| format!("{:.0}", b / (1u64 << 20) as f64))
            .collect();
        let which = if peaks.len() == 1 { "" } else { " per process" };
        self.report.log(&format!(
            "peak resident memory{which}: {} MiB",
            mib.join(", ")
        ));
    }

    fn record(&self, status: Status) -> RunRecord<'_, R> {
        RunRecord {
            case: &self.job.loaded.case,
            problem: &self.problem,
            sim: &self.sim,
            status,
            wall_seconds: self.wall_seconds,
            started: self.job.started,
            backend: self.backend.name(),
            overrides: self.job.loaded.overrides(),
        }
    }

    /// Ends a run that diverged or became unstable (`status`): summary and residual history,
    /// no fields, the last good checkpoint kept; exit code 3.
    fn diverged(&mut self, status: Status, error: impl std::fmt::Display) -> Failure {
        self.report.finish();
        let Some(out) = &self.out else {
            return Failure::diverged(error);
        };
        if let Err(e) = out.write_results(&self.record(status), None) {
            return Failure::runtime(e);
        }
        let path = out.join(checkpoint::FILE_NAME);
        let kept = if path.exists() {
            format!("the last good checkpoint is kept ({})", path.display())
        } else {
            "no checkpoint had been written".into()
        };
        let message = format!(
            "{error}; no fields written, the results in {} are unchanged; this run's summary \
             is in {}; {kept}",
            self.job.out.display(),
            self.job.out.join(results::STAGING).display()
        );
        self.report.log(&message);
        Failure::diverged(message)
    }

    /// Writes the results and says how the run ended. The results of a finished run replace
    /// those in the output directory; a stalled or interrupted run leaves its own in the
    /// staging directory and fails with exit code 4 or 130.
    fn finish(mut self, status: Status, stall: Option<Stall>) -> Result<Option<Summary>, Failure> {
        self.report.finish();
        let fields = self.final_fields()?;
        let written = (self.out.as_ref())
            .map(|out| out.write_results(&self.record(status), Some(&fields)))
            .transpose();
        let summary = self.job.world.agree(written.map_err(Failure::runtime))?;
        self.log_peak_memory();
        let interrupted = status == Status::Interrupted;
        // Only a run that ends with exit code 0 replaces the earlier results.
        let kept = interrupted || status == Status::Stalled;
        let committed = match (self.out.take(), kept) {
            (Some(out), false) => out.commit(),
            _ => Ok(()),
        };
        self.job.world.agree(committed.map_err(Failure::runtime))?;
        let job = self.job;
        let (out, staging) = (&job.out, job.out.join(results::STAGING));
        if let Some(summary) = &summary {
            self.tell(summary, status, if kept { &staging } else { out });
        }
        if let Some(stall) = stall {
            let message = format!(
                "{stall} (numerics.tolerance); its results and checkpoint are in {}, the results \
                 in {} are unchanged",
                staging.display(),
                out.display()
            );
            self.report.log(&message);
            return Err(Failure::stalled(message));
        }
        if interrupted {
            let message = format!(
                "stopped at iteration {}; its results and checkpoint are in {}, the results in \
                 {} are unchanged; continue with: ferroflow run --restart {}",
                self.sim.iteration,
                staging.display(),
                out.display(),
                shell_quote(out.as_os_str()),
            );
            self.report.log(&message);
            return Err(Failure::interrupted(message));
        }
        Ok(summary)
    }

    /// Says how the run ended and what its results (in `dir`) show.
    fn tell(&mut self, summary: &Summary, status: Status, dir: &Path) {
        let verdict = match status {
            Status::Converged => "converged",
            Status::MaxIterations => "NOT converged (iteration limit)",
            Status::Stalled => "NOT converged (stalled)",
            Status::Interrupted | Status::Diverged | Status::Unstable => "stopped",
        };
        self.report.note(&format!(
            "{verdict} after {} iterations ({:.2} s, {:.1} M node updates/s); results in {}",
            self.sim.iteration,
            self.wall_seconds,
            summary.node_updates_per_second / 1e6,
            dir.display(),
        ));
        if let Some(h) = &summary.heat_transfer {
            self.report.note(&format!(
                "  Nusselt: hot wall {:.4}, cold wall {:.4} (energy imbalance {:.2e})",
                h.hot_wall.mean, h.cold_wall.mean, h.energy_imbalance
            ));
            if let Some(r) = &h.reference {
                self.report.note(&format!(
                    "  Nusselt {} from {} ({:+.2}%)",
                    r.nusselt,
                    r.source,
                    100.0 * r.relative_deviation
                ));
            }
        }
        for d in &summary.reference {
            self.report.note(&format!(
                "  {}: max |deviation| {:.4} at {:.4} from {}",
                d.profile, d.max_abs_deviation, d.at, d.source
            ));
        }
    }
}

/// Why a callback ended the run.
enum Halt {
    /// Something failed.
    Failed(Failure),
    /// The state left its physical bounds (see `Problem::check_bounds`).
    Unstable(String),
}

impl From<Failure> for Halt {
    fn from(failure: Failure) -> Halt {
        Halt::Failed(failure)
    }
}

/// The points of every process's pieces (see `Solver::pieces`), in block order.
fn every_piece(job: &Job) -> Result<Vec<Points>, Failure> {
    let size = job.world.rank_size().1;
    let d = (job.loaded.case.decomposition(size)).map_err(|e| job.loaded.invalid(&e))?;
    let extents = d.extents();
    Ok(extents
        .iter()
        .map(|e| ferroflow_ac::pieces::piece_points(&d, e))
        .collect())
}

/// The file of the piece at `points` in directory `dir`, named by its first global node.
fn piece_file(dir: &str, points: &Points, extension: &str) -> String {
    let Points::Grid {
        offset: [i, j, k], ..
    } = points;
    format!("{dir}/piece_{i}_{j}_{k}.{extension}")
}

/// The checkpoint of a run over several processes, without gathering the state: every process
/// checks the bounds of its pieces of the raw state and writes them into the staging
/// directory's `checkpoint/<iteration>/`; then the first writes the index (`path`: where it
/// has the output directory) with every piece's checksum, and removes the earlier generation.
fn checkpoint_pieces<R: Real>(
    job: &Job,
    problem: &Problem<R>,
    backend: &mut (impl Backend<Real = R> + ?Sized),
    (sim, wall_seconds, resolved): (&Simulation, f64, &str),
    path: Option<&Path>,
) -> Result<(), Halt> {
    let world = job.world;
    let pieces = backend
        .pieces()
        .map_err(|e| world.fail_alone(Failure::runtime(e)))?;
    // Only a physical state is kept: a checkerboard the residuals do not show ends the run
    // here, with the last good checkpoint.
    let mut unstable = None;
    for piece in &pieces {
        let Points::Grid { dim, n, offset } = piece.points;
        let fields = Fields::from_snapshot(Layout::new(dim, n), piece);
        let fields = fields.expect("a piece holds a value per point");
        if let Err(mut e) = problem.check_bounds(&fields) {
            e.node = [0, 1, 2].map(|a| e.node[a] + offset[a]);
            unstable.get_or_insert(format!("unstable at iteration {}: {e}", sim.iteration));
        }
    }
    if world.any(unstable.is_some()) {
        return Err(Halt::Unstable(unstable.unwrap_or_else(|| {
            format!("unstable at iteration {} in another process", sim.iteration)
        })));
    }
    let generation = format!("{}/{}", results::CHECKPOINT_PIECES, sim.iteration);
    let dir = job.out.join(results::STAGING).join(&generation);
    let all = every_piece(job)?;
    let mut crcs = vec![0.0; all.len()];
    let file = |points: &Points| piece_file(&generation, points, "ffcp");
    let written = fs::create_dir_all(&dir)
        .map_err(|e| naming(&dir, e))
        .and_then(|()| {
            for piece in &pieces {
                let path = job.out.join(results::STAGING).join(file(&piece.points));
                let crc = checkpoint::save_piece(&path, piece)?;
                let at = all.iter().position(|p| *p == piece.points);
                crcs[at.expect("a piece of the decomposition")] = crc as f64;
            }
            Ok(())
        });
    world.agree(written.map_err(Failure::runtime))?;
    // Checksums are below 2^32: exact in f64, and each is summed with zeros only.
    let crcs = world.sum(crcs);
    let index = path.map_or(Ok(()), |path| {
        let index: Vec<checkpoint::PieceFile> = (all.iter().zip(&crcs))
            .map(|(points, crc)| checkpoint::PieceFile {
                file: file(points),
                points: *points,
                crc: *crc as u32,
            })
            .collect();
        let whole = (
            Points::grid(problem.layout.dim, problem.layout.n),
            problem.equations(),
        );
        checkpoint::save_index::<R>(path, resolved, sim, wall_seconds, whole, &index)?;
        // The earlier generations: the index no longer names them.
        let pieces = job
            .out
            .join(results::STAGING)
            .join(results::CHECKPOINT_PIECES);
        for entry in fs::read_dir(&pieces)? {
            let entry = entry?;
            if entry.file_name().to_str() != Some(&sim.iteration.to_string()) {
                fs::remove_dir_all(entry.path()).map_err(|e| naming(&entry.path(), e))?;
            }
        }
        Ok::<_, io::Error>(())
    });
    world.agree(index.map_err(Failure::runtime))?;
    Ok(())
}

/// Over several processes: every process writes `pieces`, its pieces of the fields (pressure
/// shifted by `shift`, as the fields are), as `.vti` files into the staging directory's
/// `dir`; returns the index of every process's pieces, for a `.pvti`.
fn write_pieces<R: Real>(
    job: &Job,
    problem: &Problem<R>,
    dir: &str,
    pieces: Vec<Snapshot<R>>,
    shift: R,
) -> Result<Vec<(String, Points)>, Failure> {
    let file = |points: &Points| piece_file(dir, points, "vti");
    let index = every_piece(job)?
        .into_iter()
        .map(|points| (file(&points), points))
        .collect();
    let staging = job.out.join(results::STAGING);
    let (names, spacing) = (problem.variable_names(), problem.spacing);
    let compress = job.loaded.case.output.compress;
    let written = (|| {
        fs::create_dir_all(staging.join(dir))
            .map_err(|e| Failure::runtime(naming(&staging.join(dir), e)))?;
        for mut piece in pieces {
            piece.vars[0].iter_mut().for_each(|x| *x = *x - shift);
            let path = staging.join(file(&piece.points));
            vtk::write_image_data(&path, names, spacing, &piece, compress)
                .map_err(Failure::runtime)?;
        }
        Ok(())
    })();
    job.world.agree(written)?;
    Ok(index)
}

/// Over several processes: this process's pieces of the current state (pressure as the
/// backend keeps it), and the pressure at the reference node (from the process that has it).
fn pieces_and_shift<R: Real>(
    job: &Job,
    problem: &Problem<R>,
    backend: &mut (impl Backend<Real = R> + ?Sized),
) -> Result<(Vec<Snapshot<R>>, R), Failure> {
    let world = job.world;
    let pieces = backend
        .pieces()
        .map_err(|e| world.fail_alone(Failure::runtime(e)))?;
    let shift = sample(job, &pieces, &[(0, problem.pressure_ref)])?;
    Ok((pieces, R::of(shift[0])))
}

/// The values (pressure as the backend keeps it) of the variables at the nodes `at`, each
/// from the piece of the process whose block owns the node, to every process bit for bit.
fn sample<R: Real>(job: &Job, pieces: &[Snapshot<R>], at: &[NodeVar]) -> Result<Vec<f64>, Failure> {
    let size = job.world.rank_size().1;
    let d = (job.loaded.case.decomposition(size)).map_err(|e| job.loaded.invalid(&e))?;
    let extents = d.extents();
    let mut values = vec![0.0; at.len()];
    for ((var, node), value) in at.iter().zip(&mut values) {
        let owner = &extents[d.owner(*node).0];
        let points = ferroflow_ac::pieces::piece_points(&d, owner);
        let Some(piece) = pieces.iter().find(|p| p.points == points) else {
            continue;
        };
        let Points::Grid { n, offset, .. } = points;
        let [i, j, k] = [0, 1, 2].map(|a| node[a] - offset[a]);
        *value = piece.vars[*var][i + n[0] * (j + n[1] * k)].f64();
    }
    Ok(from_halves(&job.world.sum(to_halves(&values))))
}

/// The current state, gathered from every process (pressure as the backend keeps it).
fn download<R: Real>(
    backend: &mut (impl Backend<Real = R> + ?Sized),
    world: &World,
) -> Result<Fields<R>, Failure> {
    backend
        .download()
        .map_err(|e| world.fail_alone(Failure::runtime(e)))
}

/// The current state with pressure referenced, as results show it, and the shift that
/// referenced it (the raw pressure at the reference node).
fn referenced<R: Real>(
    problem: &Problem<R>,
    backend: &mut (impl Backend<Real = R> + ?Sized),
    world: &World,
) -> Result<(Fields<R>, R), Failure> {
    let mut fields = download(backend, world)?;
    let shift = fields.vars[0][problem.pressure_ref_offset()];
    problem.reference_pressure(&mut fields);
    Ok((fields, shift))
}

/// The log's header: how to reproduce the run.
pub fn log_header(report: &mut Reporter, restart: Option<&Restart>, backend: &str, resolved: &str) {
    report.log(&format!(
        "ferroflow {} ({}-{})",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH,
        std::env::consts::OS
    ));
    let args: Vec<String> = std::env::args_os().map(|a| shell_quote(&a)).collect();
    report.log(&format!("command: {}", args.join(" ")));
    if let Some(Restart {
        checkpoint: ck,
        file,
    }) = restart
    {
        report.log(&format!(
            "restart: from iteration {} ({})",
            ck.iteration,
            file.display()
        ));
        for change in changed_keys(&ck.case_toml, resolved) {
            report.log(&format!("  changed since the checkpoint: {change}"));
        }
    }
    report.log(&format!("backend: {backend}"));
    report.log("resolved case (also in case.resolved.toml):");
    for line in resolved.lines() {
        report.log(&format!("    {line}"));
    }
}

/// `key = value` lines of `after` that `before` does not have.
fn changed_keys(before: &str, after: &str) -> Vec<String> {
    let old = key_values(before);
    key_values(after)
        .into_iter()
        .filter(|kv| !old.contains(kv))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect()
}

/// `arg` as a shell would need it to be typed; bytes that are not UTF-8 text as `$'\xNN'`.
fn shell_quote(arg: &OsStr) -> String {
    let Some(arg) = arg.to_str() else {
        let escaped: String = arg
            .as_encoded_bytes()
            .iter()
            .map(|&b| match b {
                b' '..=b'~' if b != b'\'' && b != b'\\' => char::from(b).to_string(),
                _ => format!("\\x{b:02x}"),
            })
            .collect();
        return format!("$'{escaped}'");
    };
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=,:@+".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}
