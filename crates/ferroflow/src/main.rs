//! The `ferroflow` command-line program.
mod backends;
mod bench;
mod bench_fv_cuda;
mod cases;
mod check;
mod fem_profiles;
mod fem_run;
mod fv_output;
mod fv_run;
mod info;
mod input;
mod memory;
mod mesh;
mod mesh_job;
mod mesh_run;
mod plot;
mod progress;
mod results;
mod run;
mod scaling;
mod signals;
mod tune;
mod verify;
mod world;

use clap::{Parser, Subcommand};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Large arrays start at staggered places within a page (`ferroflow_cpu::Staggered`).
#[global_allocator]
static ALLOCATOR: ferroflow_cpu::Staggered = ferroflow_cpu::Staggered::new();

/// Steady incompressible Navier–Stokes by artificial compressibility, on CPUs (and GPUs).
#[derive(Parser)]
#[command(
    name = "ferroflow",
    version,
    about,
    long_about = None,
    after_help = "\
Examples:
  ferroflow run                                   # default case: 2D cavity, Re = 100, 129^2
  ferroflow run cavity2d-re1000 --precision f32   # a built-in case in single precision
  ferroflow run my-case.toml --set numerics.cfl=1.2 --out study/cfl1.2
  ferroflow run --restart ferroflow-out/cavity2d-re100   # continue from the last checkpoint
  ferroflow check my-case.toml                    # validate and size a case, run nothing
  ferroflow cases show cavity3d-re100 > my-case.toml     # start a new case from a built-in one
  ferroflow info                                  # version, CPU threads, GPU backends

Exit codes: 0 done, 1 runtime failure, 2 bad input, 3 diverged or unstable, 4 stalled,
130 interrupted.
Diagnostics of the libraries (kernel cache hits, compile times, tuning): FERROFLOW_LOG=debug."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a case (a TOML file or a built-in case name; default: cavity2d-re100).
    Run(run::RunArgs),
    /// Check a case as `run` would take it (same arguments), without running it: the resolved
    /// settings, the memory it needs, the backend and the output directory.
    #[command(after_help = "\
Examples:
  ferroflow check cavity3d-re1000 --set 'mesh.nodes=[513,513,513]'
  ferroflow check my-case.toml --backend cuda --out results/run1

Exit codes: 0 valid, 2 bad input (named with file, key and value).")]
    Check(run::RunArgs),
    /// List the built-in cases, print one with every key commented, or print the key tables
    /// of docs/cases.md.
    Cases(cases::CasesArgs),
    /// Verification studies: manufactured solutions and cavity benchmarks.
    #[command(subcommand)]
    Verify(verify::VerifyCommand),
    /// Throughput of the whole iteration against the memory-bandwidth roofline.
    Bench(bench::BenchArgs),
    /// Time every CUDA launch shape for a case, print the table, cache the fastest.
    Tune(tune::TuneArgs),
    /// Unstructured meshes: read (Gmsh, SU2), generate, check, measure, convert (.vtu).
    Mesh(mesh::MeshArgs),
    /// Version, CPU threads and the GPU backends usable on this machine.
    #[command(after_help = "Example:\n  ferroflow info")]
    Info,
}

/// Errors the program reports: the message, and the exit code that goes with it.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad input (case file, argument, checkpoint): exit code 2.
    pub fn input(message: impl ToString) -> Failure {
        Failure {
            code: 2,
            message: message.to_string(),
        }
    }
    /// Anything that failed while running: exit code 1.
    pub fn runtime(message: impl ToString) -> Failure {
        Failure {
            code: 1,
            message: message.to_string(),
        }
    }
    /// The iteration diverged: exit code 3.
    pub fn diverged(message: impl ToString) -> Failure {
        Failure {
            code: 3,
            message: message.to_string(),
        }
    }
    /// The residuals stopped falling before the tolerance: exit code 4.
    pub fn stalled(message: impl ToString) -> Failure {
        Failure {
            code: 4,
            message: message.to_string(),
        }
    }
    /// Stopped by SIGINT or SIGTERM: exit code 130, as a shell reports Ctrl-C.
    pub fn interrupted(message: impl ToString) -> Failure {
        Failure {
            code: 130,
            message: message.to_string(),
        }
    }
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so printing into a closed pipe (`| head`) would panic; a
    // command-line tool ends quietly instead.
    // SAFETY: called before any other thread exists; SIG_DFL is a valid disposition.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // The libraries' diagnostics (cache hits, compile times, tuning), off unless asked for.
    let filter = tracing_subscriber::EnvFilter::try_from_env("FERROFLOW_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check(args) => check::check(args),
        Command::Cases(args) => cases::cases(args),
        Command::Verify(cmd) => verify::verify(cmd),
        Command::Bench(args) => bench::bench(args),
        Command::Tune(args) => tune::tune(args),
        Command::Mesh(args) => mesh::mesh(args),
        Command::Info => info::info(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let label = match f.code {
                4 => "not converged",
                130 => "interrupted",
                _ => "error",
            };
            // In an MPI job one process reports a failure, the others fail silently.
            if !f.message.is_empty() {
                eprintln!("{label}: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}
