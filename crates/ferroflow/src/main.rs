//! The `ferroflow` command-line program.
mod bench;
mod run;
mod verify;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Steady incompressible Navier–Stokes by artificial compressibility, on CPUs (and GPUs).
#[derive(Parser)]
#[command(name = "ferroflow", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a case (a TOML file or a built-in case name; default: cavity2d-re100).
    Run(run::RunArgs),
    /// Verification studies: manufactured solutions and cavity benchmarks.
    #[command(subcommand)]
    Verify(verify::VerifyCommand),
    /// Throughput of the whole iteration against the memory-bandwidth roofline.
    Bench(bench::BenchArgs),
    /// List the built-in cases, or print one.
    Cases {
        /// Print this case's TOML.
        #[arg(value_name = "NAME")]
        show: Option<String>,
    },
}

/// Errors the program reports: the message, and the exit code that goes with it.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    /// Bad input (case file, argument): exit code 2.
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Verify(cmd) => verify::verify(cmd),
        Command::Bench(args) => bench::bench(args),
        Command::Cases { show } => cases(show),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {}", f.message);
            ExitCode::from(f.code)
        }
    }
}

fn cases(show: Option<String>) -> Result<(), Failure> {
    use ferroflow_solver::case::{builtin, BUILTIN};
    match show {
        None => {
            for (name, _) in BUILTIN {
                println!(
                    "{name:<18} {}",
                    builtin(name).expect("built-in").case.description
                );
            }
        }
        Some(name) => {
            let (_, text) = BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .ok_or_else(|| Failure::input(format!("no built-in case named '{name}'")))?;
            print!("{text}");
        }
    }
    Ok(())
}
