//! Backend selection: the one place that maps `[backend] kind` to an implementation.
use crate::Failure;
use ferroflow_core::{Backend, BackendError, Problem, Real};
use ferroflow_cpu::CpuBackend;
use ferroflow_cuda::{CudaBackend, CudaOptions, TuneMode};
use ferroflow_solver::case::{BackendKind, BackendSpec};

/// What the CUDA backend would run on here, or exactly why it cannot run (no driver, no
/// device, no NVRTC).
pub fn cuda_probe() -> Result<String, String> {
    ferroflow_cuda::probe()
}

/// CUDA options from the case: `tune = false` forces the default launch shape.
pub fn cuda_options(spec: &BackendSpec, tune: TuneMode) -> CudaOptions {
    CudaOptions {
        device: spec.device,
        tune: if spec.tune { tune } else { TuneMode::Off },
        ..CudaOptions::default()
    }
}

/// The CUDA backend for `problem` and a line saying where it runs and with which launch shape.
fn cuda<R: Real>(
    problem: &Problem<R>,
    spec: &BackendSpec,
) -> Result<(Box<dyn Backend<Real = R>>, String), BackendError> {
    let b = CudaBackend::new(problem, &cuda_options(spec, TuneMode::Cached))?;
    let t = b.tuning();
    let line = format!(
        "cuda on {}, launch shape {} ({:?}, {:.2} s)",
        b.device_name(),
        t.chosen,
        t.source,
        t.seconds
    );
    Ok((Box::new(b), line))
}

/// The backend `spec` asks for, set up for `problem`, and a line saying what was chosen.
/// An unavailable backend that was asked for by name is bad input (exit code 2).
pub fn make_backend<R: Real>(
    problem: &Problem<R>,
    spec: &BackendSpec,
) -> Result<(Box<dyn Backend<Real = R>>, String), Failure> {
    let cpu = |why: &str| -> Result<(Box<dyn Backend<Real = R>>, String), Failure> {
        let b = CpuBackend::new(problem, spec.threads).map_err(Failure::runtime)?;
        let line = format!("cpu, {} threads{why}", b.threads());
        Ok((Box::new(b), line))
    };
    match spec.kind {
        BackendKind::Cpu => cpu(""),
        // Asking for a GPU where there is none is bad input; a GPU failing is not.
        BackendKind::Cuda => cuda(problem, spec).map_err(|e| match e {
            BackendError::Unavailable { .. } => Failure::input(format!(
                "backend.kind = \"cuda\": {e}; use --backend cpu or auto"
            )),
            e => Failure::runtime(e),
        }),
        BackendKind::Auto => match cuda(problem, spec) {
            Ok((b, line)) => Ok((b, format!("{line} (auto)"))),
            Err(why) => cpu(&format!(" (auto: {why})")),
        },
    }
}
