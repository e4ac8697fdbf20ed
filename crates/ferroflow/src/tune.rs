//! `ferroflow tune`: time every CUDA launch shape for a case's grid and precision, print the
//! table and cache the fastest.
use crate::backends::cuda_options;
use crate::input::{LoadedCase, Override, DEFAULT_CASE};
use crate::run::value_name;
use crate::Failure;
use clap::Args;
use ferroflow_ac::cuda::{CudaBackend, TuneMode, DEFAULT_SHAPE};
use ferroflow_cases::case::{MethodKind, Precision};
use ferroflow_core::Real;

/// Arguments of `ferroflow tune`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow tune cavity3d-re1000 --set 'mesh.nodes=[257,257,257]'
  ferroflow tune my-case.toml --precision f32")]
pub struct TuneArgs {
    /// Case file (TOML) or built-in case name.
    #[arg(value_name = "CASE", default_value = DEFAULT_CASE)]
    case: String,
    /// Floating-point precision, overriding the case.
    #[arg(long, value_enum)]
    precision: Option<Precision>,
    /// Set any key of the case (dotted path, TOML value).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<Override>,
}

pub fn tune(args: TuneArgs) -> Result<(), Failure> {
    let mut overrides = args.set;
    if let Some(p) = args.precision {
        overrides.push(Override {
            key: "backend.precision".into(),
            value: value_name(p),
        });
    }
    let mut loaded = LoadedCase::load(&args.case, &overrides)?;
    // The launch shapes are the explicit pass's, whatever method the case runs.
    loaded.case.numerics.method = MethodKind::Explicit;
    match loaded.case.backend.precision {
        Precision::F64 => tune_in::<f64>(&loaded),
        Precision::F32 => tune_in::<f32>(&loaded),
    }
}

fn tune_in<R: Real>(loaded: &LoadedCase) -> Result<(), Failure> {
    let case = &loaded.case;
    let problem = case.problem::<R>().map_err(|e| loaded.invalid(&e))?;
    let mut spec = case.backend.clone();
    spec.tune = true;
    let backend = CudaBackend::new(&problem, &cuda_options(&spec, TuneMode::Always))
        .map_err(Failure::input)?;
    let report = backend.tuning();
    println!(
        "{} on {}: grid {:?}, {}",
        case.case.name,
        backend.device_name(),
        case.mesh.nodes,
        R::NAME
    );
    print!("{report}");
    let time_of = |shape| {
        report
            .rows
            .iter()
            .find(|r| r.shape == shape)
            .map(|r| r.seconds)
    };
    if let (Some(default), Some(best)) = (time_of(DEFAULT_SHAPE), time_of(report.chosen)) {
        println!(
            "tuned {} over default {}: {:.1}% faster ({:.2} -> {:.2} us per pass)",
            report.chosen,
            DEFAULT_SHAPE,
            100.0 * (default / best - 1.0),
            default * 1e6,
            best * 1e6
        );
    }
    Ok(())
}
