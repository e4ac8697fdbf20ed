//! `ferroflow run`: solve a case and write its results.
use crate::Failure;
use clap::Args;
use ferroflow_core::{Backend, Fields, Problem, Real};
use ferroflow_cpu::CpuBackend;
use ferroflow_solver::output::{self, Deviation, Summary};
use ferroflow_solver::{cavity, reference, Case, Flow, Outcome, Simulation};
use std::path::{Path, PathBuf};

/// Arguments of `ferroflow run`.
#[derive(Args)]
pub struct RunArgs {
    /// Case file (TOML) or built-in case name (see `ferroflow cases`).
    #[arg(value_name = "CASE", default_value = "cavity2d-re100")]
    case: String,
    /// Output directory [default: ferroflow-out/<case name>].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Floating-point precision, overriding the case.
    #[arg(long, value_parser = ["f64", "f32"])]
    precision: Option<String>,
    /// CPU threads (0 = all cores), overriding the case.
    #[arg(long)]
    threads: Option<usize>,
    /// Print nothing while running.
    #[arg(long)]
    quiet: bool,
}

/// Reads a case file, or a built-in case if no such file exists.
pub fn load_case(name: &str) -> Result<Case, Failure> {
    let path = Path::new(name);
    if path.is_file() {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::input(format!("{}: {e}", path.display())))?;
        Case::from_toml(&text, &path.display().to_string()).map_err(Failure::input)
    } else {
        ferroflow_solver::case::builtin(name).ok_or_else(|| {
            Failure::input(format!(
                "'{name}' is neither a case file nor a built-in case (see `ferroflow cases`)"
            ))
        })
    }
}

/// A converged (or stopped) run: the problem, its final state (pressure referenced), the
/// iteration record and how it ended.
pub struct Solved<R> {
    pub problem: Problem<R>,
    pub fields: Fields<R>,
    pub sim: Simulation,
    pub outcome: Outcome,
    pub backend: &'static str,
}

/// Solves `case` in precision `R`, printing a line per `log_every` iterations unless quiet.
pub fn solve<R: Real>(case: &Case, quiet: bool) -> Result<Solved<R>, Failure> {
    let problem = case
        .problem::<R>()
        .map_err(|e| Failure::input(format!("case '{}': {e}", case.case.name)))?;
    let stop = case
        .stop()
        .map_err(|e| Failure::input(format!("case '{}': {e}", case.case.name)))?;
    let mut backend = CpuBackend::new(&problem, case.backend.threads).map_err(Failure::runtime)?;
    let names = problem.variable_names();
    let mut sim = Simulation::new(stop);
    let mut next_log = 0.0;
    let outcome = sim
        .run(&mut backend, names, |p| {
            if !quiet && p.elapsed >= next_log {
                let res: Vec<String> = names
                    .iter()
                    .zip(p.relative)
                    .map(|(n, r)| format!("{n} {r:.2e}"))
                    .collect();
                eprintln!(
                    "iter {:>8}  {}  ({:.1} s)",
                    p.iteration,
                    res.join("  "),
                    p.elapsed
                );
                next_log = p.elapsed + 2.0;
            }
            Flow::Continue
        })
        .map_err(Failure::runtime)?;
    let mut fields = backend.download().map_err(Failure::runtime)?;
    problem.reference_pressure(&mut fields);
    Ok(Solved {
        problem,
        fields,
        sim,
        outcome,
        backend: backend.name(),
    })
}

/// Deviations of the centreline profiles from published data for this Reynolds number.
pub fn deviations<R: Real>(case: &Case, s: &Solved<R>) -> Vec<Deviation> {
    let re = case.physics.reynolds;
    let data = if re.fract() != 0.0 {
        None
    } else if case.grid.dim == 2 {
        reference::ghia(re as u32)
    } else {
        reference::albensoeder_kuhlmann(re as u32)
    };
    let Some((ref_u, ref_v)) = data else {
        return Vec::new();
    };
    let (u, v) = cavity::centrelines(&s.problem, &s.fields);
    [
        ("u(y) at x = 0.5", &u, ref_u),
        ("v(x) at y = 0.5", &v, ref_v),
    ]
    .into_iter()
    .map(|(name, computed, r)| {
        let (dev, at) = cavity::max_deviation(computed, &r);
        Deviation {
            profile: name.into(),
            source: r.source.into(),
            max_abs_deviation: dev,
            at,
        }
    })
    .collect()
}

pub fn run(args: RunArgs) -> Result<(), Failure> {
    let mut case = load_case(&args.case)?;
    if let Some(p) = args.precision {
        case.backend.precision = p;
    }
    if let Some(t) = args.threads {
        case.backend.threads = t;
    }
    let out = args
        .out
        .unwrap_or_else(|| Path::new("ferroflow-out").join(&case.case.name));
    match case.backend.precision.as_str() {
        "f64" => run_in::<f64>(&case, &out, args.quiet),
        "f32" => run_in::<f32>(&case, &out, args.quiet),
        other => Err(Failure::input(format!(
            "backend.precision = '{other}': expected 'f64' or 'f32'"
        ))),
    }
}

fn run_in<R: Real>(case: &Case, out: &Path, quiet: bool) -> Result<(), Failure> {
    let s = solve::<R>(case, quiet)?;
    let write_err = |e: std::io::Error| Failure::runtime(format!("{}: {e}", out.display()));
    std::fs::create_dir_all(out).map_err(write_err)?;
    let names = s.problem.variable_names();
    let last = s
        .sim
        .history
        .last()
        .map(|h| h.relative.clone())
        .unwrap_or_default();
    let nodes = s.problem.layout.interior_nodes() as f64;
    let reference = deviations(case, &s);
    let summary = Summary {
        case: case.case.name.clone(),
        dim: case.grid.dim,
        grid: case.grid.nodes.clone(),
        precision: R::NAME.into(),
        backend: s.backend.into(),
        iterations: s.sim.iteration,
        converged: s.outcome.converged,
        residuals: names
            .iter()
            .zip(&last)
            .map(|(n, r)| (n.to_string(), (*r).into()))
            .collect(),
        wall_seconds: s.outcome.wall_seconds,
        node_updates_per_second: nodes * s.sim.iteration as f64 / s.outcome.wall_seconds,
        reference,
    };
    output::write_summary(&out.join("summary.json"), &summary).map_err(write_err)?;
    output::write_residuals(&out.join("residuals.csv"), names, &s.sim.history)
        .map_err(write_err)?;
    let (u, v) = cavity::centrelines(&s.problem, &s.fields);
    output::write_profile(&out.join("centerline_u.csv"), ["y", "u"], &u).map_err(write_err)?;
    output::write_profile(&out.join("centerline_v.csv"), ["x", "v"], &v).map_err(write_err)?;
    if !quiet {
        eprintln!(
            "{} after {} iterations ({:.2} s, {:.1} M node updates/s); results in {}",
            if s.outcome.converged {
                "converged"
            } else {
                "NOT converged"
            },
            s.sim.iteration,
            s.outcome.wall_seconds,
            summary.node_updates_per_second / 1e6,
            out.display()
        );
        for d in &summary.reference {
            eprintln!(
                "  {}: max |deviation| {:.4} at {:.4} from {}",
                d.profile, d.max_abs_deviation, d.at, d.source
            );
        }
    }
    Ok(())
}
