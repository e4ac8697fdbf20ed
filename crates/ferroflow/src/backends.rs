//! Backend selection: the one place that maps `[backend] kind` and `[parallel]` to an
//! implementation.
use crate::world::World;
use crate::Failure;
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::cuda::{CudaBackend, CudaOptions, MultiGpu, MultiGpuOptions, TuneMode};
use ferroflow_ac::multigrid::{Fas, Level};
use ferroflow_ac::Decomposed;
use ferroflow_ac::{Method, Problem};
use ferroflow_cases::case::{BackendKind, BackendSpec, Exchange, ParallelSpec};
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::{Backend, BackendError, ProblemError, Real};
use ferroflow_parallel::{InProcess, Transport};
use std::sync::Arc;

/// The most CPU threads a run may ask for per core. The iteration is bound by memory
/// bandwidth: threads beyond the cores only add switching, and a count far beyond them (a
/// typo, a case from a larger machine) spends minutes starting threads before anything runs.
pub const THREADS_PER_CORE: usize = 4;

/// The cores this process may use.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The CPU threads of this process: `backend.threads`, or for 0 its share of the cores among
/// the processes on this machine. More than [`THREADS_PER_CORE`] per core are refused.
pub fn cpu_threads(spec: &BackendSpec, world: &World) -> Result<usize, ProblemError> {
    let cores = cores();
    match spec.threads {
        0 => Ok((cores / world.here()).max(1)),
        t if t <= THREADS_PER_CORE * cores => Ok(t),
        t => Err(ProblemError::OutOfRange {
            name: "backend.threads",
            value: t as f64,
            allowed: "0 (one per core) or at most 4 threads per core of this machine",
        }),
    }
}

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
        fmad: spec.fmad,
        ..CudaOptions::default()
    }
}

/// How the CUDA backend routes halos for a case's `parallel.exchange`.
pub fn halo_route(exchange: Exchange) -> ferroflow_cuda::HaloRoute {
    match exchange {
        Exchange::Peer => ferroflow_cuda::HaloRoute::Peer,
        Exchange::Host => ferroflow_cuda::HaloRoute::Host,
    }
}

/// A backend and the line saying what it is.
type Chosen<R> = (Box<dyn Backend<Real = R>>, String);

/// How the grid is cut, for the line saying what was chosen: `KIND, N blocks [PX, PY], DETAIL`
/// and the number of MPI processes, if more than one.
fn cut_line(kind: &str, decomposition: &Decomposition, detail: &str, processes: usize) -> String {
    let blocks = &decomposition.blocks[..decomposition.dim];
    let mut line = format!(
        "{kind}, {} blocks {blocks:?}, {detail}",
        decomposition.count()
    );
    if processes > 1 {
        line += &format!(", over {processes} MPI processes");
    }
    line
}

/// The CUDA backend for `problem` and a line saying where it runs (and with one block, with
/// which launch shape). Blocks take the devices of `parallel.devices` in turn; without them,
/// the processes of an MPI job on one machine (`local_rank`: this one's number there) take
/// its GPUs in turn.
fn cuda<R: Real, T: Transport<R> + 'static>(
    problem: &Problem<R>,
    (spec, parallel): (&BackendSpec, &ParallelSpec),
    decomposition: Decomposition,
    transport: T,
    local_rank: usize,
) -> Result<Chosen<R>, BackendError> {
    let options = cuda_options(spec, TuneMode::Cached);
    if problem.numerics.multigrid.levels > 1 {
        multigrid_suits(problem, &decomposition, "cuda")?;
        let mut b = ferroflow_ac::cuda::multigrid(problem, &options)?;
        let head = format!("cuda on {}", b.finest().device_name());
        let line = multigrid_line(problem, &b, &head, true);
        return Ok((Box::new(b), line));
    }
    if decomposition.count() == 1 {
        let b = CudaBackend::new(problem, &options)?;
        let t = b.tuning();
        let line = format!(
            "cuda on {}, launch shape {} ({:?}, {:.2} s){}",
            b.device_name(),
            t.chosen,
            t.source,
            t.seconds,
            relaxation_note(problem, true)
        );
        return Ok((Box::new(b), line));
    }
    let processes = transport.rank_size().1;
    let devices = match parallel.devices.as_slice() {
        // Processes of one machine take its GPUs in turn.
        [] if processes > 1 => vec![local_rank % ferroflow_cuda::device_count()?],
        [] => vec![spec.device],
        d => d.to_vec(),
    };
    let implicit = matches!(problem.numerics.method, Method::Implicit(_));
    if !implicit {
        // The blocks stay on their devices and exchange halos there (between processes as
        // the remote routes say).
        let multi = MultiGpuOptions {
            devices: devices.clone(),
            exchange: halo_route(parallel.exchange),
            packing: parallel.packing,
            overlap: parallel.overlap,
            cuda: options,
        };
        let b = MultiGpu::over(problem, decomposition, &multi, transport)?;
        let mut detail = format!(
            "on devices {devices:?}, {:?} exchange{}, packing {}, overlap {}, launch shape {}",
            multi.exchange,
            if b.peer_access() {
                " (peer access)"
            } else {
                ""
            },
            multi.packing,
            multi.overlap,
            b.tuning()[0].chosen
        );
        if processes > 1 {
            detail += &format!(", between processes {:?}", b.remote_routes());
        }
        let line = cut_line("cuda", b.decomposition(), &detail, processes);
        return Ok((Box::new(b), line));
    }
    let b = Decomposed::new(problem, decomposition, transport, |p, e| {
        let device = devices[e.id % devices.len()];
        CudaBackend::new(p, &CudaOptions { device, ..options })
    })?;
    // The implicit method (whose blocks the multi-GPU driver cannot couple yet): every block
    // on its own, its halos through the host.
    let detail = format!(
        "on devices {devices:?}, staged through the host{}",
        relaxation_note(problem, true)
    );
    let line = cut_line("cuda", b.decomposition(), &detail, processes);
    Ok((Box::new(b), line))
}

/// The CPU backend: one block, or this process's blocks one after the other, on one pool of
/// this process's threads.
fn cpu<R: Real, T: Transport<R> + Clone + 'static>(
    problem: &Problem<R>,
    spec: &BackendSpec,
    decomposition: Decomposition,
    transport: T,
    world: &World,
) -> Result<Chosen<R>, BackendError> {
    let threads = cpu_threads(spec, world).map_err(|e| BackendError::NotSuitable {
        backend: "cpu",
        what: e.to_string(),
    })?;
    if problem.numerics.multigrid.levels > 1 {
        return multigrid(problem, decomposition, transport, threads);
    }
    if decomposition.count() == 1 {
        let b = CpuBackend::new(problem, threads)?;
        let line = format!(
            "cpu, {} threads{}",
            b.threads(),
            relaxation_note(problem, false)
        );
        return Ok((Box::new(b), line));
    }
    let pool = Arc::new(ferroflow_cpu::pool(threads)?);
    let processes = transport.rank_size().1;
    let b = Decomposed::new(problem, decomposition, transport, |p, _| {
        CpuBackend::on(p, Arc::clone(&pool))
    })?;
    let detail = format!(
        "{threads} thread{} shared",
        if threads == 1 { "" } else { "s" }
    );
    let line = cut_line("cpu", b.decomposition(), &detail, processes);
    Ok((Box::new(b), line))
}

/// Refuses what the multigrid cycle cannot run: GPU blocks, the explicit method.
fn multigrid_suits<R: Real>(
    problem: &Problem<R>,
    decomposition: &Decomposition,
    backend: &'static str,
) -> Result<(), BackendError> {
    let refuse = |what: &str| {
        Err(BackendError::NotSuitable {
            backend,
            what: format!("numerics.multigrid > 1 {what}"),
        })
    };
    if decomposition.count() > 1 && backend == "cuda" {
        return refuse("on a grid cut into blocks on GPUs (one GPU block only, for now)");
    }
    if problem.numerics.method == Method::Explicit {
        return refuse(
            "with numerics.method = \"explicit\" (the explicit step does not smooth \
             enough: use \"implicit\")",
        );
    }
    Ok(())
}

/// The line of a multigrid backend: `head` (where it runs), the relaxation, the cycle and
/// its levels.
fn multigrid_line<R: Real, L: Level<Real = R>>(
    problem: &Problem<R>,
    b: &Fas<L>,
    head: &str,
    gpu: bool,
) -> String {
    let mg = problem.numerics.multigrid;
    let grids: Vec<String> = (b.grids().iter())
        .map(|n| format!("{:?}", &n[..problem.layout.dim]))
        .collect();
    format!(
        "{head}{}; multigrid {}{:?}({}, {}), {} on the coarsest, {} levels {} \
         (work of a cycle: {:.2} iterations of the finest grid{})",
        relaxation_note(problem, gpu),
        if mg.fmg { "full-multigrid start, " } else { "" },
        mg.shape,
        mg.pre,
        mg.post,
        mg.coarsest,
        grids.len(),
        grids.join(" "),
        b.work(),
        match mg.fmg {
            true => format!("; of the full-multigrid start: {:.2}", b.start_work()),
            false => String::new(),
        }
    )
}

/// The multigrid cycle of the implicit method on the CPU, on one block or on every level cut
/// into the decomposition's blocks; the line names the levels.
fn multigrid<R: Real, T: Transport<R> + Clone + 'static>(
    problem: &Problem<R>,
    decomposition: Decomposition,
    transport: T,
    threads: usize,
) -> Result<Chosen<R>, BackendError> {
    multigrid_suits(problem, &decomposition, "cpu")?;
    let pool = Arc::new(ferroflow_cpu::pool(threads)?);
    let threads = format!("{threads} thread{}", if threads == 1 { "" } else { "s" });
    if decomposition.count() == 1 {
        let b = Fas::new(problem, pool)?;
        let line = multigrid_line(problem, &b, &format!("cpu, {threads}"), false);
        return Ok((Box::new(b), line));
    }
    let processes = transport.rank_size().1;
    let mut b = Fas::blocks(problem, decomposition.blocks, transport, pool)?;
    // Output pieces, checkpoints and samples follow the case's cut (`Case::decomposition`,
    // which cuts for the levels too): the finest level must be cut the same.
    if *b.finest().decomposition() != decomposition {
        return Err(BackendError::Failed {
            backend: "multigrid",
            message: format!(
                "the finest level's blocks start at {:?}, the run's at {:?}",
                b.finest().decomposition().starts,
                decomposition.starts
            ),
        });
    }
    let head = cut_line(
        "cpu",
        &decomposition,
        &format!("{threads} shared"),
        processes,
    );
    let line = multigrid_line(problem, &b, &head, false);
    Ok((Box::new(b), line))
}

/// A CPU backend's failure to start: what it cannot run is bad input (exit code 2).
fn refused(e: BackendError) -> Failure {
    match e {
        BackendError::NotSuitable { .. } => Failure::input(e.to_string()),
        e => Failure::runtime(e),
    }
}

/// What the implicit method runs on a GPU (`gpu`) or the CPU, for the backend line; nothing
/// for the explicit method.
fn relaxation_note<R: Real>(problem: &Problem<R>, gpu: bool) -> String {
    match problem.numerics.method {
        Method::Explicit => String::new(),
        Method::Implicit(imp) => {
            let r = imp.on(gpu);
            format!(
                "; implicit: {:?}, {} sweeps, implicit_cfl {}, operator {}",
                r.relaxation,
                r.sweeps,
                r.cfl,
                if r.single { "f32" } else { "f64" }
            )
        }
    }
}

/// The backend `spec` asks for, set up for `problem` cut as `decomposition` says (at least one
/// block per process), and a line saying what was chosen. An unavailable backend that was
/// asked for by name is bad input (exit code 2).
pub fn make_backend<R: Real>(
    problem: &Problem<R>,
    spec: &BackendSpec,
    parallel: &ParallelSpec,
    decomposition: Decomposition,
    world: &World,
) -> Result<Chosen<R>, Failure> {
    #[cfg(feature = "mpi")]
    if let Some(mpi) = world.mpi() {
        return choose(problem, spec, parallel, decomposition, mpi.clone(), world);
    }
    choose(problem, spec, parallel, decomposition, InProcess, world)
}

/// [`make_backend`] with `transport` to the blocks of the other processes.
fn choose<R: Real, T: Transport<R> + Clone + 'static>(
    problem: &Problem<R>,
    spec: &BackendSpec,
    parallel: &ParallelSpec,
    decomposition: Decomposition,
    transport: T,
    world: &World,
) -> Result<Chosen<R>, Failure> {
    // The CUDA backends refuse what they cannot run (the implicit method on blocks, other
    // relaxations than Jacobi): auto then falls back to the CPU and says why.
    match spec.kind {
        BackendKind::Cpu => cpu(problem, spec, decomposition, transport, world).map_err(refused),
        // Asking for a GPU where there is none is bad input; a GPU failing is not.
        BackendKind::Cuda => {
            let specs = (spec, parallel);
            let local = world.local_rank();
            cuda(problem, specs, decomposition, transport, local).map_err(|e| match e {
                BackendError::Unavailable { .. } | BackendError::NotSuitable { .. } => {
                    Failure::input(format!(
                        "backend.kind = \"cuda\": {e}; use --backend cpu or auto"
                    ))
                }
                e => Failure::runtime(e),
            })
        }
        BackendKind::Auto => {
            let specs = (spec, parallel);
            let local = world.local_rank();
            match cuda(
                problem,
                specs,
                decomposition.clone(),
                transport.clone(),
                local,
            ) {
                Ok((b, line)) => Ok((b, format!("{line} (auto)"))),
                Err(why) => {
                    let (b, line) =
                        cpu(problem, spec, decomposition, transport, world).map_err(refused)?;
                    Ok((b, format!("{line} (auto: {why})")))
                }
            }
        }
    }
}
