//! `ferroflow check`: the dry run of `ferroflow run`. It resolves and validates the case as a
//! run would, sizes the memory the state needs, says which backend it would get and what the
//! output directory holds, and iterates nothing, allocates no grid and writes nothing.
use crate::backends::{cores, cpu_threads, cuda_probe};
use crate::memory::{self, StateSize};
use crate::run::{job, Job, RunArgs};
use crate::world::World;
use crate::Failure;
use ferroflow_cases::case::{BackendKind, Precision};
use ferroflow_cases::fem::SolverKind;
use ferroflow_cases::resolvable::check_resolvable;
use ferroflow_cases::Case;
use ferroflow_core::{Layout, ProblemError, Real, MIN_NODES};
use std::path::Path;

pub fn check(args: RunArgs) -> Result<(), Failure> {
    match crate::mesh_job::solver_of_args(&args)? {
        SolverKind::FiniteElement => return crate::fem_run::check(args),
        SolverKind::FiniteVolume => return crate::fv_run::check(args),
        SolverKind::Structured => {}
    }
    let world = World::alone();
    let job = job(args, &world)?;
    let (loaded, case) = (&job.loaded, &job.loaded.case);
    let invalid = |e| loaded.invalid(&e);
    let stop = case.stop().map_err(invalid)?;
    let decomposition = case.decomposition(1).map_err(invalid)?;
    let equations = match case.backend.precision {
        Precision::F64 => validate::<f64>(case),
        Precision::F32 => validate::<f32>(case),
    }
    .map_err(invalid)?;
    let size = StateSize::of(case, equations, decomposition.count()).map_err(invalid)?;
    let layout = Layout::new(case.mesh.dim, case.nodes().map_err(invalid)?);
    println!(
        "case {} ({}), {}D {:?}, {}: {} interior nodes, {} equations",
        case.case.name,
        case.setup_name(),
        case.mesh.dim,
        case.mesh.nodes,
        case.backend.precision.name(),
        layout.interior_nodes(),
        equations
    );
    println!(
        "stop: residuals below {:e}, at most {} iterations, checked every {}",
        stop.tolerance, stop.max_iterations, stop.check_interval
    );
    println!("method: {}", case.numerics.method.name());
    println!(
        "blocks: {} {:?}",
        decomposition.count(),
        &decomposition.blocks[..decomposition.dim]
    );
    if case.backend.kind != BackendKind::Cuda {
        let threads = cpu_threads(&case.backend, &world).map_err(invalid)?;
        println!("cpu: {threads} threads ({} cores)", cores());
    }
    let available = memory::available();
    println!(
        "host memory: {:.3} GiB at the peak ({} copies of the state, {} values per variable){}",
        size.gib(),
        size.copies,
        size.values,
        available.map_or(String::new(), |a| format!(
            "; {:.1} GiB available to this process",
            a as f64 / memory::GIB
        ))
    );
    size.fits(&case.case.name, available)?;
    if case.backend.kind != BackendKind::Cpu {
        match cuda_probe() {
            Ok(device) => println!("cuda: {device}"),
            Err(why) if case.backend.kind == BackendKind::Cuda => {
                return Err(Failure::input(format!(
                    "backend.kind = \"cuda\": {why}; use --backend cpu or auto"
                )))
            }
            Err(why) => println!("cuda: not usable ({why}); auto takes the CPU"),
        }
    }
    println!("output: {}", output_state(&job));
    println!("ok: nothing was run or written");
    Ok(())
}

/// What the output directory holds now.
fn output_state(job: &Job) -> String {
    output_state_of(&job.out, job.restart.is_some())
}

/// What output directory `out` holds now, for a run continued from a checkpoint if `restart`.
pub fn output_state_of(out: &Path, restart: bool) -> String {
    let dir = out.display();
    if !out.exists() {
        return format!("{dir} (will be created)");
    }
    match (restart, out.join("summary.json").exists()) {
        (true, _) => format!("{dir} (continued by this run, its results replaced when it ends)"),
        (false, true) => format!("{dir} (holds results, replaced when this run ends)"),
        (false, false) => format!("{dir} (exists, holds no results)"),
    }
}

/// Validates the physics of `case` in precision `R` as building its problem does, on a
/// stand-in grid with the real grid's spacing (on which whether the scheme resolves the case
/// depends); returns the number of equations.
fn validate<R: Real>(case: &Case) -> Result<usize, ProblemError> {
    let mut problem = memory::stand_in::<R>(case)?;
    let nodes = case.nodes()?;
    for d in 0..case.mesh.dim {
        problem.spacing[d] *= (MIN_NODES - 1) as f64 / (nodes[d] - 1) as f64;
    }
    check_resolvable(case, &problem)?;
    Ok(problem.equations())
}
