//! Backend selection: the one place that maps `[backend] kind` to an implementation.
use crate::Failure;
use ferroflow_core::{Backend, Problem, Real};
use ferroflow_cpu::CpuBackend;
use ferroflow_solver::case::{BackendKind, BackendSpec};

const CUDA_NOT_BUILT: &str =
    "not built into this binary (the CUDA backend is not part of this build yet)";

/// What the CUDA backend would run on here, or exactly why it cannot run (no driver, no
/// device, no NVRTC, or not built in).
pub fn cuda_probe() -> Result<String, String> {
    // The CUDA backend plugs in here: `ferroflow_cuda::probe()`.
    Err(CUDA_NOT_BUILT.into())
}

/// The CUDA backend for `problem`, or exactly why there is none.
fn cuda<R: Real>(_problem: &Problem<R>) -> Result<Box<dyn Backend<Real = R>>, String> {
    // ... and here: `cuda_probe()?`, then the CUDA backend built for `_problem`.
    Err(CUDA_NOT_BUILT.into())
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
        BackendKind::Cuda => match cuda(problem) {
            Ok(b) => Ok((b, "cuda".into())),
            Err(why) => Err(Failure::input(format!(
                "backend.kind = \"cuda\": the CUDA backend is {why}; use --backend cpu or auto"
            ))),
        },
        BackendKind::Auto => match cuda(problem) {
            Ok(b) => Ok((b, "cuda (auto)".into())),
            Err(why) => cpu(&format!(" (auto: cuda is {why})")),
        },
    }
}
