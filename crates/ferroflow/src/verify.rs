//! `ferroflow verify`: manufactured-solution order of accuracy, cavity benchmarks.
use crate::run::{deviations, load_case, solve};
use crate::Failure;
use clap::Subcommand;
use ferroflow_core::{Backend, Numerics};
use ferroflow_cpu::CpuBackend;
use ferroflow_solver::mms::{study, Manufactured};
use ferroflow_solver::{output, Flow, Simulation, StopCriteria};
use std::path::PathBuf;

/// Verification studies.
#[derive(Subcommand)]
pub enum VerifyCommand {
    /// Observed order of accuracy with manufactured solutions.
    Mms {
        /// 2 or 3.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(2..=3))]
        dim: u8,
        /// Nodes per axis of each grid, ascending [default: 2D 17,33,65,129; 3D 9,17,33,65].
        #[arg(long, value_delimiter = ',')]
        sizes: Vec<usize>,
        /// Output directory for mms.csv.
        #[arg(long, default_value = "ferroflow-out/mms")]
        out: PathBuf,
    },
    /// Run the cavity cases and print the deviation from the published profiles.
    Cavity {
        /// Cases to run [default: cavity2d-re100, cavity2d-re1000].
        cases: Vec<String>,
    },
}

/// Scheme settings of the manufactured-solution study.
pub const MMS_NUMERICS: Numerics = Numerics {
    cfl: 0.8,
    kappa: 1.0,
    u_ref: 1.0,
    c4: 0.02,
};

pub fn verify(cmd: VerifyCommand) -> Result<(), Failure> {
    match cmd {
        VerifyCommand::Mms { dim, sizes, out } => {
            let dim = dim as usize;
            let sizes = if !sizes.is_empty() {
                sizes
            } else if dim == 2 {
                vec![17, 33, 65, 129]
            } else {
                vec![9, 17, 33, 65]
            };
            let mms = Manufactured::new(dim);
            let stop = StopCriteria {
                tolerance: 1e-12,
                max_iterations: 2_000_000,
                check_interval: 100,
            };
            let rows = study::<f64>(&mms, &sizes, MMS_NUMERICS, |problem| {
                let mut backend = CpuBackend::new(problem, 0).map_err(|e| e.to_string())?;
                let mut sim = Simulation::new(stop);
                let outcome = sim
                    .run(&mut backend, problem.variable_names(), |_| Flow::Continue)
                    .map_err(|e| e.to_string())?;
                eprintln!(
                    "n = {:>4}: {} iterations, {:.1} s{}",
                    problem.layout.n[0],
                    sim.iteration,
                    outcome.wall_seconds,
                    if outcome.converged {
                        ""
                    } else {
                        " (NOT converged)"
                    }
                );
                backend.download().map_err(|e| e.to_string())
            })
            .map_err(Failure::runtime)?;
            std::fs::create_dir_all(&out)
                .map_err(|e| Failure::runtime(format!("{}: {e}", out.display())))?;
            output::write_mms(&out.join("mms.csv"), &rows).map_err(Failure::runtime)?;
            println!(
                "{:>5} {:>3} {:>12} {:>12} {:>7} {:>7}",
                "n", "var", "L2 error", "Linf error", "L2 ord", "Li ord"
            );
            let fmt = |o: Option<f64>| o.map(|o| format!("{o:.3}")).unwrap_or_default();
            for r in &rows {
                println!(
                    "{:>5} {:>3} {:>12.4e} {:>12.4e} {:>7} {:>7}",
                    r.n,
                    r.variable,
                    r.l2_error,
                    r.linf_error,
                    fmt(r.l2_order),
                    fmt(r.linf_order)
                );
            }
            Ok(())
        }
        VerifyCommand::Cavity { cases } => {
            let cases = if cases.is_empty() {
                vec!["cavity2d-re100".to_string(), "cavity2d-re1000".to_string()]
            } else {
                cases
            };
            for name in cases {
                let case = load_case(&name)?;
                let s = solve::<f64>(&case, true)?;
                println!(
                    "{name}: {} after {} iterations ({:.1} s)",
                    if s.outcome.converged {
                        "converged"
                    } else {
                        "NOT converged"
                    },
                    s.sim.iteration,
                    s.outcome.wall_seconds
                );
                let devs = deviations(&case, &s);
                if devs.is_empty() {
                    println!("  no reference data for this case");
                }
                for d in devs {
                    println!(
                        "  {}: max |deviation| {:.4} at {:.4} ({})",
                        d.profile, d.max_abs_deviation, d.at, d.source
                    );
                }
            }
            Ok(())
        }
    }
}
