//! `ferroflow check`: the dry run of `ferroflow run`. It resolves and validates the case as a
//! run would, sizes the memory the state needs, says which backend it would get and what the
//! output directory holds, and iterates nothing, allocates no grid and writes nothing.
use crate::backends::cuda_probe;
use crate::run::{job, Job, RunArgs};
use crate::world::World;
use crate::Failure;
use ferroflow_cases::case::{BackendKind, Precision};
use ferroflow_core::{Layout, MIN_NODES};

const GIB: f64 = (1u64 << 30) as f64;

pub fn check(args: RunArgs) -> Result<(), Failure> {
    let world = World::alone();
    let job = job(args, &world)?;
    let (loaded, case) = (&job.loaded, &job.loaded.case);
    let invalid = |e| loaded.invalid(&e);
    let stop = case.stop().map_err(invalid)?;
    let decomposition = case.decomposition(1).map_err(invalid)?;
    // The physics is validated by the code that builds the problem, on the smallest grid of
    // the case's dimension: the real grid is only sized, never allocated.
    let mut small = case.clone();
    small.mesh.nodes = vec![MIN_NODES; case.mesh.dim];
    let equations = small.problem::<f64>().map_err(invalid)?.equations();
    let layout = Layout::new(case.mesh.dim, case.nodes().map_err(invalid)?);
    let bytes = match case.backend.precision {
        Precision::F64 => 8,
        Precision::F32 => 4,
    };
    // In host memory: the initial state, and the two buffers the CPU backend iterates between
    // (a GPU holds those two itself; its free memory is checked when the backend starts).
    let on_cpu = case.backend.kind == BackendKind::Cpu;
    let arrays = if on_cpu { 3 } else { 1 } * equations;
    let needed = (arrays as u128) * (layout.len as u128) * bytes;
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
    println!(
        "blocks: {} {:?}",
        decomposition.count(),
        &decomposition.blocks[..decomposition.dim]
    );
    let available = available_memory();
    println!(
        "host memory: {:.3} GiB of state ({arrays} arrays of {} values){}",
        needed as f64 / GIB,
        layout.len,
        available.map_or(String::new(), |a| format!(
            "; {:.1} GiB available on this machine",
            a as f64 / GIB
        ))
    );
    if let Some(available) = available.filter(|a| needed > *a as u128) {
        return Err(Failure::input(format!(
            "{}: the state needs {:.1} GiB, {:.1} GiB are available",
            case.case.name,
            needed as f64 / GIB,
            available as f64 / GIB
        )));
    }
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
    let dir = job.out.display();
    if !job.out.exists() {
        return format!("{dir} (will be created)");
    }
    match (job.restart.is_some(), job.out.join("summary.json").exists()) {
        (true, _) => format!("{dir} (continued by this run, its results replaced when it ends)"),
        (false, true) => format!("{dir} (holds results, replaced when this run ends)"),
        (false, false) => format!("{dir} (exists, holds no results)"),
    }
}

/// Bytes of memory available to this process: the smaller of Linux's `MemAvailable` and the
/// cgroup's limit, where they can be read.
fn available_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok();
    let available = meminfo.as_deref().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|t| t.trim().parse::<u64>().ok());
    match (available, cgroup) {
        (Some(a), Some(c)) => Some(a.min(c)),
        (a, c) => a.or(c),
    }
}
