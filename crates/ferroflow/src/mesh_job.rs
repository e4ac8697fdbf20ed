//! What `ferroflow run` and `check` of a case on an unstructured mesh share, whichever solver
//! it is for (finite elements, finite volumes): which solver the arguments name, and the job
//! they describe (the case read and overridden, the threads, the output directory, the
//! checkpoint of `--restart`), checked before anything is written.
use crate::backends::{cores, cpu_threads};
use crate::check::output_state_of;
use crate::input::{dir_name, problem_keys_of, with_overrides, Override, Source};
use crate::results::{self, CASE_FILE};
use crate::run::{read_checkpoint, value_name, Restart, RunArgs};
use crate::world::World;
use crate::Failure;
use ferroflow_cases::case::{key_line, BackendKind, BackendSpec, Precision};
use ferroflow_cases::fem::{FemCase, SolverKind};
use ferroflow_cases::fv::FvCase;
use ferroflow_cases::CaseError;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A case file's schema for a solver on an unstructured mesh.
pub trait MeshCase: Clone + Sized {
    /// The solver, as messages name it.
    const SOLVER: &'static str;
    /// Whether it computes in f32 too (`backend.precision = "f32"`).
    const F32: bool;
    /// Parses the case; errors name the origin, the line and the key.
    fn from_toml(text: &str, origin: &str) -> Result<Self, CaseError>;
    /// The resolved case as TOML.
    fn to_toml(&self) -> String;
    /// `case.name`.
    fn name(&self) -> &str;
    /// `backend.precision` and `backend.threads`.
    fn backend(&self) -> (Precision, usize);
    /// A mesh file named relative to `dir` made absolute.
    fn resolve_mesh_file(&mut self, dir: &Path);
}

impl MeshCase for FemCase {
    const SOLVER: &'static str = "the finite-element solver";
    const F32: bool = true;
    fn from_toml(text: &str, origin: &str) -> Result<Self, CaseError> {
        FemCase::from_toml(text, origin)
    }
    fn to_toml(&self) -> String {
        FemCase::to_toml(self)
    }
    fn name(&self) -> &str {
        &self.case.name
    }
    fn backend(&self) -> (Precision, usize) {
        (self.backend.precision, self.backend.threads)
    }
    fn resolve_mesh_file(&mut self, dir: &Path) {
        FemCase::resolve_mesh_file(self, dir)
    }
}

impl MeshCase for FvCase {
    const SOLVER: &'static str = "the finite-volume solver";
    const F32: bool = false;
    fn from_toml(text: &str, origin: &str) -> Result<Self, CaseError> {
        FvCase::from_toml(text, origin)
    }
    fn to_toml(&self) -> String {
        FvCase::to_toml(self)
    }
    fn name(&self) -> &str {
        &self.case.name
    }
    fn backend(&self) -> (Precision, usize) {
        (self.backend.precision, self.backend.threads)
    }
    fn resolve_mesh_file(&mut self, dir: &Path) {
        FvCase::resolve_mesh_file(self, dir)
    }
}

/// The solver the arguments' case is for: the case given, or without one the case recorded
/// beside the checkpoint of `--restart` (structured where there is none).
pub fn solver_of_args(args: &RunArgs) -> Result<SolverKind, Failure> {
    if let Some(case) = &args.case {
        return Source::read(case)?.solver();
    }
    let Some(restart) = &args.restart else {
        return Ok(SolverKind::Structured);
    };
    let file = match restart.is_dir() {
        true => results::checkpoint_in(restart),
        false => restart.clone(),
    };
    let record = file.parent().unwrap_or(Path::new(".")).join(CASE_FILE);
    let Ok(text) = std::fs::read_to_string(&record) else {
        return Ok(SolverKind::Structured);
    };
    let origin = record.display().to_string();
    let source = Source {
        text,
        origin,
        dir: None,
    };
    source.solver()
}

/// A run of a case on an unstructured mesh, checked.
pub struct MeshJob<C> {
    pub case: C,
    /// The case's text and where it came from, for messages.
    pub source: Source,
    /// The resolved case as TOML.
    pub resolved: String,
    pub overrides: Vec<Override>,
    pub out: PathBuf,
    pub overwrite: bool,
    pub restart: Option<Restart>,
    pub quiet: bool,
    pub threads: usize,
    /// `--backend cuda`: the steps run on the GPU.
    pub cuda: bool,
    /// `--no-tune`: the GPU's launch choices are not timed.
    pub no_tune: bool,
    /// When this invocation started.
    pub started: Instant,
}

impl<C: MeshCase> MeshJob<C> {
    /// The job the arguments describe; nothing is written.
    pub fn new(args: RunArgs, world: &World) -> Result<MeshJob<C>, Failure> {
        let started = Instant::now();
        let cuda = args.backend == Some(BackendKind::Cuda);
        if !args.blocks.is_empty() {
            return Err(Failure::input(format!(
                "--blocks: a case of {} runs as one piece",
                C::SOLVER
            )));
        }
        let restart = args.restart.as_deref().map(read_checkpoint).transpose()?;
        let source = match (&args.case, &restart) {
            (Some(case), _) => Source::read(case)?,
            (None, Some(r)) => Source {
                text: r.checkpoint.case_toml.clone(),
                origin: r.file.display().to_string(),
                dir: None,
            },
            (None, None) => unreachable!("solver_of_args found a case"),
        };
        let mut overrides = args.set;
        let flags = [
            ("backend.precision", args.precision.map(value_name)),
            ("backend.threads", args.threads.map(|t| t.to_string())),
        ];
        for (key, value) in flags {
            if let Some(value) = value {
                overrides.push(Override {
                    key: key.into(),
                    value,
                });
            }
        }
        let base = C::from_toml(&source.text, &source.origin).map_err(Failure::input)?;
        let mut case = with_overrides(&source.text, &overrides, |t| C::from_toml(t, ""))?
            .unwrap_or_else(|| base.clone());
        let (precision, threads) = case.backend();
        if precision == Precision::F32 && !C::F32 {
            return Err(Failure::input(format!(
                "{}: backend.precision = \"f32\": {} computes in f64 only (its operators, \
                 solves and checkpoints are f64)",
                source.origin,
                C::SOLVER
            )));
        }
        let spec = BackendSpec {
            threads,
            ..BackendSpec::default()
        };
        let invalid = |e| Failure::input(format!("{}: {e}", source.origin));
        let threads = cpu_threads(&spec, world).map_err(invalid)?;
        if let Some(dir) = &source.dir {
            case.resolve_mesh_file(dir);
        }
        let resolved = case.to_toml();
        let keys = problem_keys_of(&resolved);
        let out = match (args.out, &restart) {
            (Some(out), _) => out,
            (None, Some(r)) => results::output_dir_of(&r.file),
            (None, None) => {
                let base_keys = problem_keys_of(&base.to_toml());
                Path::new("ferroflow-out").join(dir_name(case.name(), &base_keys, &keys))
            }
        };
        results::check_usable(&out, &keys, args.overwrite)?;
        Ok(MeshJob {
            case,
            source,
            resolved,
            overrides,
            out,
            overwrite: args.overwrite,
            restart,
            quiet: args.quiet,
            threads,
            cuda,
            no_tune: args.no_tune,
            started,
        })
    }

    /// The last lines of `ferroflow check`: the threads, the output directory, the verdict.
    pub fn print_check_end(&self) {
        println!("cpu: {} threads ({} cores)", self.threads, cores());
        let restart = self.restart.is_some();
        println!("output: {}", output_state_of(&self.out, restart));
        println!("ok: nothing was run or written");
    }

    /// An input error of the case's `key`, with its line.
    pub fn invalid(&self, key: &str, message: String) -> Failure {
        let (origin, text) = (&self.source.origin, &self.source.text);
        Failure::input(CaseError {
            origin: origin.clone(),
            line: key_line(text, key),
            key: Some(key.into()),
            message,
        })
    }
}
