//! `ferroflow bench`: node updates per second of the whole iteration (interior pass, boundary
//! fill, norms), against the memory-bandwidth roofline measured in the same run; with
//! `--solve`, time to solution of the built-in cases, explicit against implicit; with `--fem`,
//! the edge-based finite elements' momentum pass and pressure matrix–vector product against
//! the same roofline, and their time per step; with `--fv`, the finite-volume solver's face and
//! cell loops; with `--implicit`, the CPU's implicit iteration phase by phase.
mod copy;
mod implicit;

pub(crate) use copy::cpu_copy_bandwidth;
use copy::{interleaved, paired_shares, Copies, Spread};

use crate::backends::{cuda_probe, halo_route, make_backend};
use crate::run::value_name;
use crate::scaling;
use crate::world::World;
use crate::Failure;
use clap::Args;
use ferroflow_ac::{Numerics, Problem};
use ferroflow_cases::case::{
    builtin, BackendKind, BackendSpec, ConvectionKind, DifferencesKind, Exchange, MethodKind,
    ParallelSpec, Precision, BUILTIN,
};
use ferroflow_cases::cavity;
use ferroflow_cases::fem::finest_cg_tolerance;
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::{Backend, Real};
use ferroflow_fem::cuda::DeviceReal;
use ferroflow_fem::fractional::Controls;
use ferroflow_fem::lid_cube::cube;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

/// A state smaller than this many times the last-level cache is iterated partly from cache, so
/// the memory roofline does not bound its throughput.
const CACHE_FACTOR: f64 = 4.0;

/// The CPU's last-level cache where sysfs does not give it: large, so that a doubtful grid is
/// flagged rather than not.
const DEFAULT_CACHE_BYTES: u64 = 256 << 20;

/// Arguments of `ferroflow bench`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow bench                                   # CPU: 2049^2 and 193^3, f64 and f32
  ferroflow bench --backend cuda --n2d 4097,8193 --n3d 257,513
  ferroflow bench --backend cuda --energy --n2d 4097 --n3d 257,513
  ferroflow bench --backend cuda --energy --n2d --n3d 513 --blocks 1,1,2 --devices 0,1
  ferroflow bench --backend cuda --energy --n2d --n3d 257 --blocks 2,1,1 --devices 0,1 --weak
  ferroflow bench --solve                           # time to solution: every built-in case
  ferroflow bench --solve cavity2d-re1000,bdc3d --backend cuda
  ferroflow bench --implicit --n2d 1025 --n3d 129   # CPU implicit iteration, phase by phase
  ferroflow bench --fem                             # finite elements: the seed's three levels
  ferroflow bench --fem 28 --threads 1 --precision f64
  ferroflow bench --fem 14,28,56,112 --backend cuda  # GPU: product variants, CG iteration, step
  ferroflow bench --fv 64                           # finite-volume face and cell loops
  ferroflow bench --fv-ablation 100 --repeats 3     # seed 004's ablation, ~1M cells
  ferroflow bench --fv-cuda 200                     # finite volumes on a GPU, 8M cells")]
pub struct BenchArgs {
    /// Backend to measure.
    #[arg(long, value_enum, default_value = "cpu")]
    backend: BackendKind,
    /// CPU threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// CUDA device ordinal.
    #[arg(long, default_value_t = 0)]
    device: usize,
    /// Use the default CUDA launch shape instead of the tuned one.
    #[arg(long)]
    no_tune: bool,
    /// CUDA: fuse multiplies and adds (`backend.fmad`; rounding differs from the CPU backend).
    #[arg(long)]
    fmad: bool,
    /// 2D grids (nodes per axis), comma-separated; none after the flag: no 2D grid.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "2049")]
    n2d: Vec<usize>,
    /// 3D grids (nodes per axis), comma-separated; none after the flag: no 3D grid.
    #[arg(long, value_delimiter = ',', num_args = 0.., default_value = "193")]
    n3d: Vec<usize>,
    /// Precisions, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "f64,f32")]
    precision: Vec<Precision>,
    /// Benchmark the buoyancy-driven cavity (energy equation on) instead of the lid-driven one.
    #[arg(long)]
    energy: bool,
    /// Form of the convective terms (`numerics.convection`).
    #[arg(long, value_enum, default_value = "advective")]
    convection: ConvectionKind,
    /// Order of the differences (`numerics.differences`; fourth order on the CPU only).
    #[arg(long, value_enum, default_value = "second-order")]
    differences: DifferencesKind,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Wall time of one repetition, seconds (sets the iterations per repetition).
    #[arg(long, default_value_t = 0.3)]
    seconds: f64,
    /// Decompose into PX,PY[,PZ] blocks (one block per GPU of `--devices`, in turn).
    #[arg(long, value_delimiter = ',')]
    blocks: Option<Vec<usize>>,
    /// GPUs the blocks are spread over, comma-separated (default: `--device`).
    #[arg(long, value_delimiter = ',')]
    devices: Vec<usize>,
    /// How GPU halos travel: device to device, or staged through pinned host memory.
    #[arg(long, value_enum, default_value = "peer")]
    exchange: Exchange,
    /// Pack GPU faces into contiguous buffers (default: copy them as strided boxes).
    #[arg(long)]
    packing: bool,
    /// Do not compute interior nodes while GPU halos travel.
    #[arg(long)]
    no_overlap: bool,
    /// Weak scaling: the grid sizes are per block (each block owns n - 2 nodes per axis).
    #[arg(long)]
    weak: bool,
    /// Time to solution instead: these built-in cases (none after the flag: all) on their own
    /// grids, to their tolerance, explicitly and with the implicit method (the backend's
    /// relaxation), f64, one block; a Markdown table.
    #[arg(long, value_delimiter = ',', num_args = 0.., value_name = "CASES")]
    solve: Option<Vec<String>>,
    /// The CPU's implicit iteration instead, phase by phase (residual pass, sweeps, update),
    /// on the grids and state precisions given, the operator in this precision (none after
    /// the flag: f32); a Markdown table against the copy bandwidth.
    #[arg(long, value_enum, value_name = "OPERATOR", num_args = 0..=1, default_missing_value = "f32")]
    implicit: Option<Precision>,
    /// Edge-based finite elements instead (CPU or CUDA, each precision of `--precision`): the
    /// lid-driven cube (Re = 100) of n³ hexahedra of six tetrahedra for each n (none after the
    /// flag: 14, 28, 56, about the nodes of the seed's three levels, 3,347, 24,202 and
    /// 184,755), the CG to 1e-10 or, with f32 among the precisions, to f32's 32 ε (3.8e-6)
    /// in every precision; a Markdown table.
    #[arg(long, value_delimiter = ',', num_args = 0.., value_name = "CELLS")]
    fem: Option<Vec<usize>>,
    /// With `--fem --backend cuda`: also run each cube from rest to this time (the seed's
    /// level-2 run: `--fem 56 --fem-end 1`), steps of the stability estimate; its wall time.
    #[arg(long, value_name = "T")]
    fem_end: Option<f64>,
    /// The finite-volume solver's loops instead (CPU): face loop, cell loops before and after
    /// it, on N³ hexahedra and on (N/2)³ hexahedra split into six tetrahedra each; a Markdown
    /// table against the copy bandwidth.
    #[arg(long, value_name = "N")]
    fv: Option<usize>,
    /// Seed 004's ablation of the finite-volume loops instead (CPU): each optimisation in
    /// turn, on a randomly numbered box of about N³ tetrahedra and on an ordered one of N³
    /// hexahedra, on 1 and 2 threads (`--threads` for one count); the residual's loops best
    /// of `--repeats`, the explicit steady integrator's iteration the mean of `--repeats`;
    /// Markdown tables against the copy bandwidth.
    #[arg(long, value_name = "N", num_args = 0..=1, default_missing_value = "100")]
    fv_ablation: Option<usize>,
    /// The finite-volume solver on a GPU instead: its loops and whole steady iteration on N³
    /// hexahedra and on about N³ tetrahedra (six per hexahedron), with the copy bandwidth
    /// and the optimised CPU loops on all cores (`--threads`) in the same run; Markdown
    /// tables.
    #[arg(long, value_name = "N")]
    fv_cuda: Option<usize>,
    /// With `--solve`: this many nodes per axis instead of each case's own.
    #[arg(long, value_name = "N")]
    nodes: Option<usize>,
    /// After each one-device measurement, project strong and weak scaling to these rank
    /// counts (one device per rank) over the network of `--network-gbs` and `--latency-us`.
    #[arg(long, value_delimiter = ',', value_name = "RANKS")]
    project: Vec<usize>,
    /// The projection's bandwidth per rank, GB/s one way (50: 400 Gb/s InfiniBand NDR).
    #[arg(long, default_value_t = 50.0)]
    network_gbs: f64,
    /// The projection's latency per message, µs.
    #[arg(long, default_value_t = 1.5)]
    latency_us: f64,
}

/// `--solve`: each case run to its tolerance by each method, timed by the driver (set-up not
/// included), with the explicit time over the implicit one.
fn time_to_solution(args: &BenchArgs, names: &[String], world: &World) -> Result<(), Failure> {
    let all: Vec<String> = BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
    let names = if names.is_empty() { &all[..] } else { names };
    if let Some(bad) = names.iter().find(|n| builtin(n).is_none()) {
        return Err(Failure::input(format!(
            "--solve: no built-in case {bad:?} (one of {})",
            all.join(", ")
        )));
    }
    println!("| case | grid | backend | method | iterations | s | status | explicit / implicit |");
    println!("|---|---|---|---|---:|---:|---|---:|");
    for name in names {
        let mut case = builtin(name).expect("checked above");
        if let Some(n) = args.nodes {
            case.mesh.nodes = vec![n; case.mesh.dim];
        }
        let mut seconds = Vec::new();
        for (method, label) in [
            (MethodKind::Explicit, "explicit"),
            (MethodKind::Implicit, "implicit"),
        ] {
            case.numerics.method = method;
            let bad = |e: ferroflow_core::ProblemError| Failure::input(format!("{name}: {e}"));
            let problem = case.problem::<f64>().map_err(bad)?;
            let stop = case.stop().map_err(bad)?;
            let (mut b, line) = backend(args, &problem, world)?;
            let mut sim = ferroflow_solver::Simulation::new(stop);
            let outcome = sim
                .run_plain(b.as_mut(), problem.variable_names())
                .map_err(|e| Failure::runtime(format!("{name}: {e}")))?;
            let status = match (&outcome.stalled, outcome.converged) {
                (_, true) => "converged",
                (Some(_), _) => "stalled",
                _ => "max-iterations",
            };
            seconds.push(outcome.wall_seconds);
            let ratio = match seconds[..] {
                [e, i] => format!("{:.2}", e / i),
                _ => String::new(),
            };
            println!(
                "| {name} | {:?} | {line} | {} | {} | {:.2} | {status} | {ratio} |",
                case.mesh.nodes, label, sim.iteration, outcome.wall_seconds,
            );
        }
    }
    Ok(())
}

/// Time steps `--fem` times after as many untimed ones from rest.
const FEM_STEPS: usize = 10;

/// The CG tolerance of every `--fem` row: the solver's default, or where a precision of
/// `precisions` cannot reach it, that precision's finest (32 ε): one tolerance, so that the
/// precisions' times per step compare.
fn fem_cg_tolerance(precisions: &[Precision]) -> f64 {
    let finest = precisions.iter().map(|&p| finest_cg_tolerance(p));
    finest.fold(Controls::default().cg_tolerance, f64::max)
}

/// Bytes the momentum's pass must move at least in precision `R` (`--fem`): per directed edge
/// its 16 terms and 4-byte column; per node its offset and the vectors read and written once
/// (u, ξ, p, τ and the result: 11 values).
fn momentum_bytes<R: Real>(nodes: usize, edges: usize) -> f64 {
    let terms = std::mem::size_of::<ferroflow_fem::edges::EdgeTerms<R>>();
    (edges * (terms + 4) + nodes * (std::mem::size_of::<usize>() + 11 * R::BYTES)) as f64
}

/// Bytes the pressure matrix–vector product must move at least in precision `R`, its rows'
/// offsets `offset` bytes each: per entry its value and 4-byte column; per row its offset,
/// diagonal, scaling, x and the result.
fn product_bytes<R: Real>(nodes: usize, edges: usize, offset: usize) -> f64 {
    (edges * (R::BYTES + 4) + nodes * (offset + 4 * R::BYTES)) as f64
}

/// `--fem`: per mesh and precision, the momentum's right-hand side (one Runge–Kutta stage's
/// pass over the directed edges) in edges per second and the pressure matrix–vector product
/// (the CG's, of the last step's matrix) in GB/s, each against the copy bandwidth measured
/// here, then the time per step. Bytes counted are those each pass must move at least, in the
/// working precision ([`momentum_bytes`], [`product_bytes`]).
fn fem_throughput(args: &BenchArgs, cells: &[usize]) -> Result<(), Failure> {
    let cells = if cells.is_empty() {
        &[14, 28, 56][..]
    } else {
        cells
    };
    let controls = Controls {
        cg_tolerance: fem_cg_tolerance(&args.precision),
        ..Controls::default()
    };
    match args.backend {
        BackendKind::Cpu => {}
        BackendKind::Cuda => return fem_cuda(args, cells, controls),
        _ => {
            return Err(Failure::input(
                "--fem: the CPU or CUDA backend (--backend cpu | cuda)",
            ))
        }
    }
    if args.fem_end.is_some() {
        return Err(Failure::input("--fem-end: with --backend cuda"));
    }
    let (pool, copy) = unstructured_pool(args)?;
    println!("CG tolerance {:e}\n", controls.cg_tolerance);
    println!(
        "| cells | precision | nodes | directed edges | momentum G edges/s | GB/s | of copy \
         | mat-vec GB/s | of copy | s/step | CG/step |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    pool.install(|| {
        for &n in cells {
            for p in &args.precision {
                let row = match p {
                    Precision::F64 => fem_cpu_row::<f64>(args, n, controls, copy)?,
                    Precision::F32 => fem_cpu_row::<f32>(args, n, controls, copy)?,
                };
                println!("{row}");
            }
        }
        Ok(())
    })
}

/// `--fem`'s row of the cube of `n`³ cells in precision `R` (`copy`: the copy bandwidth).
fn fem_cpu_row<R: Real>(
    args: &BenchArgs,
    n: usize,
    controls: Controls,
    copy: f64,
) -> Result<String, Failure> {
    let (_, mut s, held) = cube::<R>(n, 100.0, controls).map_err(Failure::input)?;
    let boundary = |i: usize, _: f64| held[i];
    let (nodes, edges) = (s.operators().nodes(), s.operators().columns.len());
    let mut t = 0.0;
    for _ in 0..FEM_STEPS {
        let dt = s.time_step();
        s.step(dt, t, &boundary);
        t += dt;
    }
    let frozen = s.freeze();
    let momentum = per_call(args, || {
        std::hint::black_box(s.momentum(&frozen, &s.u));
    })?;
    let h = s.pressure_matrix();
    let scale = vec![R::one(); nodes];
    let x: Vec<R> = (0..nodes).map(|i| R::of(i as f64)).collect();
    let mut out = vec![R::zero(); nodes];
    let product = per_call(args, || {
        h.scaled_product(&scale, &x, &mut out);
        std::hint::black_box(&out);
    })?;
    let start = Instant::now();
    let mut cg = 0;
    for _ in 0..FEM_STEPS {
        let dt = s.time_step();
        cg += s.step(dt, t, &boundary).pressure.iterations;
        t += dt;
    }
    let per_step = start.elapsed().as_secs_f64() / FEM_STEPS as f64;
    let moved = momentum_bytes::<R>(nodes, edges) / momentum;
    let product_rate = product_bytes::<R>(nodes, edges, std::mem::size_of::<usize>()) / product;
    Ok(format!(
        "| {n} | {} | {nodes} | {edges} | {:.3} | {:.2} | {:.0} % | {:.2} | {:.0} % | {:.4} | {:.1} |",
        R::NAME,
        edges as f64 / momentum / 1e9,
        moved / 1e9,
        100.0 * moved / copy,
        product_rate / 1e9,
        100.0 * product_rate / copy,
        per_step,
        cg as f64 / FEM_STEPS as f64
    ))
}

/// Products per timed sample of `--fem --backend cuda`.
const FEM_PRODUCTS: usize = 200;

/// `--fem --backend cuda`: per mesh and precision, after `FEM_STEPS` steps from rest (the
/// first chooses the product's variant: its table), the product in µs (cuSPARSE's SpMV of the
/// same matrix in the same precision beside it) and in GB/s against the copy bandwidth, one CG
/// iteration (product, fused reduction, update, replayed from the graph) in µs, the time per
/// step over `FEM_STEPS` more; with `--fem-end T`, the run from rest to time T. Bytes counted
/// per product: [`product_bytes`], the rows' offsets 4 bytes each.
fn fem_cuda(args: &BenchArgs, cells: &[usize], controls: Controls) -> Result<(), Failure> {
    use ferroflow_fem::cuda::{CudaOptions, TuneMode};
    let copy =
        ferroflow_cuda::copy_bandwidth(args.device, 1 << 30, 20).map_err(Failure::runtime)?;
    let options = CudaOptions {
        device: args.device,
        tune: if args.no_tune {
            TuneMode::Off
        } else {
            TuneMode::Cached
        },
        ..CudaOptions::default()
    };
    println!(
        "copy bandwidth {:.1} GB/s (bytes read + written)\nCG tolerance {:e}\n",
        copy / 1e9,
        controls.cg_tolerance
    );
    let mut rows = Vec::new();
    for &n in cells {
        for p in &args.precision {
            rows.push(match p {
                Precision::F64 => fem_cuda_row::<f64>(args, n, (&options, controls), copy)?,
                Precision::F32 => fem_cuda_row::<f32>(args, n, (&options, controls), copy)?,
            });
        }
    }
    println!(
        "| cells | precision | nodes | directed edges | product | µs | cuSPARSE µs | mat-vec GB/s \
         | of copy | CG iteration µs | s/step | CG/step | device B/node | host setup s |"
    );
    println!("|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    rows.iter().for_each(|r| println!("{r}"));
    Ok(())
}

/// `--fem --backend cuda`'s row of the cube of `n`³ cells in precision `R` (`copy`: the copy
/// bandwidth); its tuning, memory and `--fem-end` lines printed.
fn fem_cuda_row<R: DeviceReal>(
    args: &BenchArgs,
    n: usize,
    (options, controls): (&ferroflow_fem::cuda::CudaOptions, Controls),
    copy: f64,
) -> Result<String, Failure> {
    use ferroflow_fem::cuda::CudaFractional;
    let start = Instant::now();
    let (_, cpu, held) = cube::<R>(n, 100.0, controls).map_err(Failure::input)?;
    let boundary = |i: usize, _: f64| held[i];
    let setup = start.elapsed().as_secs_f64();
    let (nodes, edges) = (cpu.operators().nodes(), cpu.operators().columns.len());
    let mut s = CudaFractional::new(&cpu, options).map_err(Failure::runtime)?;
    drop(cpu);
    let mut t = 0.0;
    let step = |s: &mut CudaFractional<R>, t: &mut f64| -> Result<usize, Failure> {
        let dt = s.time_step().map_err(Failure::runtime)?;
        let r = s.step(dt, *t, &boundary).map_err(Failure::runtime)?;
        *t += dt;
        Ok(r.pressure.iterations)
    };
    for _ in 0..FEM_STEPS {
        step(&mut s, &mut t)?;
    }
    let what = format!("{n}³ {}", R::NAME);
    if let Some(report) = s.tuning() {
        println!("{what}, {nodes} nodes: {report}");
    }
    let product = s.time_spmv(FEM_PRODUCTS).map_err(Failure::runtime)?;
    let cusparse = match s.time_cusparse(FEM_PRODUCTS) {
        Ok(t) => format!("{:.1}", t * 1e6),
        Err(e) => {
            println!("{what}: cuSPARSE not measured: {e}");
            "-".into()
        }
    };
    let timed = Instant::now();
    let mut cg = 0;
    for _ in 0..FEM_STEPS {
        cg += step(&mut s, &mut t)?;
    }
    let per_step = timed.elapsed().as_secs_f64() / FEM_STEPS as f64;
    let iteration = s.time_cg_iteration(8).map_err(Failure::runtime)?;
    let [bytes, free, _] = s.memory().map_err(Failure::runtime)?;
    let bytes_per_product = product_bytes::<R>(nodes, edges, 4);
    let row = format!(
        "| {n} | {} | {nodes} | {edges} | {} | {:.1} | {cusparse} | {:.0} | {:.0} % | {} | {:.4} | {:.1} | {:.0} | {:.1} |",
        R::NAME,
        s.spmv().map_or("-".into(), |v| v.to_string()),
        product * 1e6,
        bytes_per_product / product / 1e9,
        100.0 * bytes_per_product / product / copy,
        iteration.map_or("broke down".into(), |i| format!("{:.1}", i * 1e6)),
        per_step,
        cg as f64 / FEM_STEPS as f64,
        bytes as f64 / nodes as f64,
        setup
    );
    // The largest cube whose arrays fit what is free beside this one's.
    let per_node = bytes as f64 / nodes as f64;
    let fits = ((free + bytes) as f64 / per_node).cbrt() as usize - 1;
    println!("{what}: device bytes per node {per_node:.0}; the largest cube that fits: about {fits}³ cells ({} nodes), by that estimate\n", (fits + 1).pow(3));
    if let Some(end) = args.fem_end {
        drop(s);
        let (_, cpu, _) = cube::<R>(n, 100.0, controls).map_err(Failure::input)?;
        let mut s = CudaFractional::new(&cpu, options).map_err(Failure::runtime)?;
        let (mut t, mut steps, mut cg) = (0.0, 0, 0);
        let run = Instant::now();
        while t < end {
            cg += step(&mut s, &mut t)?;
            steps += 1;
        }
        println!(
            "{what} from rest to t = {t:.4}: {steps} steps, {:.1} CG iterations per step, {:.2} s\n",
            cg as f64 / steps as f64,
            run.elapsed().as_secs_f64()
        );
    }
    Ok(row)
}

/// Seconds per call of `f`: calls enough for `--seconds` per repetition, the median of
/// `--repeats` repetitions.
fn per_call(args: &BenchArgs, mut f: impl FnMut()) -> Result<f64, Failure> {
    let start = Instant::now();
    f();
    let once = start.elapsed().as_secs_f64().max(1e-9);
    let calls = ((args.seconds / once).ceil() as usize).max(1);
    let total = median_seconds(args.repeats, || {
        (0..calls).for_each(|_| f());
        Ok(())
    })?;
    Ok(total / calls as f64)
}

/// `--fv N`: the finite-volume loops timed apart (median of the repetitions after one pass
/// each), against the copy bandwidth measured in the same run.
fn finite_volume_loops(args: &BenchArgs, n: usize) -> Result<(), Failure> {
    use ferroflow_fv::bench::Bench;
    use ferroflow_mesh::generate::{box_mesh, BoxCells};
    if args.backend != BackendKind::Cpu || n < 2 {
        return Err(Failure::input(format!(
            "--fv {n}: the CPU backend and at least 2 cells per axis"
        )));
    }
    let (pool, bw) = unstructured_pool(args)?;
    println!("| mesh | cells | faces | loop | M items/s | bytes / item | GB/s | % of copy | GFLOP/s | flop / byte |");
    println!("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|");
    for (name, fill, side) in [("hex", BoxCells::Hex, n), ("tet", BoxCells::Tet6, n / 2)] {
        let mesh = box_mesh(fill, [side; 3], [1.0; 3]).map_err(Failure::input)?;
        let mut b = pool
            .install(|| Bench::new(&mesh))
            .map_err(Failure::runtime)?;
        let (cells, faces) = (b.geometry().cells, b.geometry().faces());
        let [prepare, face, gather] = b.counts();
        let timed = [
            ("cells: states, gradients", cells, prepare),
            ("faces: fluxes", faces, face),
            ("cells: gather", cells, gather),
        ];
        for (k, (label, items, counts)) in timed.into_iter().enumerate() {
            let seconds = median_seconds(args.repeats, || {
                pool.install(|| match k {
                    0 => b.prepare(),
                    1 => b.face_loop(),
                    _ => b.gather(),
                });
                Ok(())
            })?;
            let rate = counts.bytes / seconds;
            println!(
                "| {name} | {cells} | {faces} | {label} | {:.2} | {:.0} | {:.2} | {:.1} | {:.2} | {:.2} |",
                items as f64 / seconds / 1e6,
                counts.bytes / items as f64,
                rate / 1e9,
                100.0 * rate / bw,
                counts.flops / seconds / 1e9,
                counts.flops / counts.bytes
            );
        }
    }
    Ok(())
}

/// `--fv-ablation N`: [`ferroflow_fv::ablation`]'s steps on a shuffled box of six-tetrahedra
/// hexahedra (about N³ cells) and on the generator's ordered box of N³ hexahedra.
fn finite_volume_ablation(args: &BenchArgs, n: usize) -> Result<(), Failure> {
    use ferroflow_fv::ablation::{steps, time, Meshes};
    use ferroflow_fv::bench::counts;
    use ferroflow_mesh::generate::{box_mesh, shuffle, BoxCells};
    if args.backend != BackendKind::Cpu || n < 4 {
        return Err(Failure::input(format!(
            "--fv-ablation {n}: the CPU backend and at least 4 cells per axis"
        )));
    }
    println!(
        "simd: {}",
        if ferroflow_fv::lanes::avx2() {
            "AVX2"
        } else {
            "none (scalar fallback)"
        }
    );
    // Six tetrahedra per hexahedron: (N / 6^⅓)³ hexahedra give about N³ cells.
    let side = ((n as f64) / 6f64.cbrt()).round() as usize;
    let mut tets = box_mesh(BoxCells::Tet6, [side; 3], [1.0; 3]).map_err(Failure::input)?;
    shuffle(&mut tets, 1);
    let hexes = box_mesh(BoxCells::Hex, [n; 3], [1.0; 3]).map_err(Failure::input)?;
    let threads = if args.threads == 0 {
        vec![1, 2]
    } else {
        vec![args.threads]
    };
    for (name, mesh) in [
        ("tetrahedra, random numbering", tets),
        ("hexahedra, ordered", hexes),
    ] {
        let mut meshes = Meshes::new(&mesh).map_err(Failure::runtime)?;
        drop(mesh);
        let g = &meshes.given.0.geometry;
        let (cells, faces, bandwidth) = (g.cells, g.faces(), meshes.bandwidth);
        let [prepare, face, gather] = counts(g);
        let per_face = [
            face.bytes / faces as f64,
            (prepare.bytes + face.bytes + gather.bytes) / faces as f64,
        ];
        let faces = faces as f64;
        for &count in &threads {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(count)
                .build()
                .map_err(Failure::runtime)?;
            let bw = cpu_copy_bandwidth(&pool, args.repeats);
            println!(
                "\n{name}: {cells} cells, {faces} faces; cell-graph bandwidth {} -> {} by RCM; \
                 {count} thread(s); copy {:.2} GB/s; compulsory bytes per face {:.0} (face \
                 loop), {:.0} (residual)\n",
                bandwidth[0],
                bandwidth[1],
                bw / 1e9,
                per_face[0],
                per_face[1]
            );
            println!("| step | face ms | cell ms | residual ms | steps ms | iteration ms | updates ms | iteration / residual | × face | × cell | × residual | × iteration | M faces/s | residual GB/s | % of copy |");
            println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            let mut base = None;
            let mut best = (f64::INFINITY, "");
            for step in steps() {
                let t = pool.install(|| time(&mut meshes, &step, args.repeats));
                let b = *base.get_or_insert(t);
                if t.iteration < best.0 {
                    best = (t.iteration, step.label);
                }
                let rate = per_face[1] * faces / t.residual;
                println!(
                    "| {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.2} | {:.1} |",
                    step.label,
                    1e3 * t.face,
                    1e3 * t.cells(),
                    1e3 * t.residual,
                    1e3 * t.steps,
                    1e3 * t.iteration,
                    1e3 * t.updates,
                    t.iteration / t.residual,
                    b.face / t.face,
                    b.cells() / t.cells(),
                    b.residual / t.residual,
                    b.iteration / t.iteration,
                    faces / t.face / 1e6,
                    rate / 1e9,
                    100.0 * rate / bw
                );
            }
            let base = base.map_or(f64::NAN, |b| b.iteration);
            println!(
                "\nfastest iteration: {} ({:.2}x the baseline)",
                best.1,
                base / best.0
            );
        }
    }
    Ok(())
}

/// Median of `repeats` timings of `f`, seconds.
pub(crate) fn median_seconds(
    repeats: usize,
    mut f: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    let t: Vec<f64> = (0..repeats.max(1))
        .map(|_| seconds_of(&mut f))
        .collect::<Result<_, _>>()?;
    Ok(Spread::of(&t).median)
}

/// Seconds one call of `f` takes.
fn seconds_of(f: impl FnOnce() -> Result<(), Failure>) -> Result<f64, Failure> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64())
}

/// The pool `--fem` and `--fv` time their loops on and its copy bandwidth, printed.
fn unstructured_pool(args: &BenchArgs) -> Result<(rayon::ThreadPool, f64), Failure> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(Failure::runtime)?;
    let bw = cpu_copy_bandwidth(&pool, args.repeats);
    println!(
        "cpu: {} threads; copy bandwidth {:.2} GB/s (bytes read + written)\n",
        pool.current_num_threads(),
        bw / 1e9
    );
    Ok((pool, bw))
}

/// The benchmark problem on `n` nodes per axis: the lid-driven cavity, or with `--energy` the
/// built-in buoyancy-driven cavity (one more variable).
fn problem<R: Real>(args: &BenchArgs, dim: usize, n: usize) -> Result<Problem<R>, Failure> {
    let blocks = block_counts(args, dim);
    // Weak scaling: every block owns n - 2 nodes per axis, as one block of n nodes does.
    let nodes = blocks.map(|p| if args.weak { p * (n - 2) + 2 } else { n });
    if !args.energy {
        let numerics = Numerics {
            convection: args.convection.form(),
            differences: args.differences.order(),
            c4: args.differences.c4(),
            ..Numerics::default()
        };
        return cavity::lid_driven::<R>(dim, nodes, 1000.0, 1.0, numerics).map_err(Failure::input);
    }
    let mut case = builtin(if dim == 2 { "bdc2d" } else { "bdc3d" }).expect("built-in case");
    case.mesh.nodes = nodes[..dim].to_vec();
    case.numerics.convection = args.convection;
    case.numerics.differences = args.differences;
    // The explicit pass, whose bytes per node the roofline counts.
    case.numerics.method = MethodKind::Explicit;
    case.problem::<R>().map_err(Failure::input)
}

/// Blocks per axis of `--blocks` (1 each without it).
fn block_counts(args: &BenchArgs, dim: usize) -> [usize; 3] {
    let mut b = [1; 3];
    if let Some(given) = &args.blocks {
        for (d, p) in given.iter().take(dim).enumerate() {
            b[d] = *p;
        }
    }
    b
}

/// The backend and parallel settings of the benchmark, as a case would give them.
fn specs(args: &BenchArgs, precision: Precision) -> (BackendSpec, ParallelSpec) {
    let backend = BackendSpec {
        kind: args.backend,
        precision,
        threads: args.threads,
        device: args.device,
        tune: !args.no_tune,
        fmad: args.fmad,
    };
    let parallel = ParallelSpec {
        devices: args.devices.clone(),
        exchange: args.exchange,
        packing: args.packing,
        overlap: !args.no_overlap,
        ..ParallelSpec::default()
    };
    (backend, parallel)
}

/// Sets up the backend for `problem` (through the program's one factory; under MPI this
/// process's blocks); returns it with a description.
fn backend<R: Real>(
    args: &BenchArgs,
    problem: &Problem<R>,
    world: &World,
) -> Result<(Box<dyn Backend<Real = R>>, String), Failure> {
    let l = problem.layout;
    let decomposition =
        Decomposition::new(l.dim, l.n, block_counts(args, l.dim)).map_err(Failure::input)?;
    let precision = if R::NAME == "f32" {
        Precision::F32
    } else {
        Precision::F64
    };
    let (spec, parallel) = specs(args, precision);
    make_backend(problem, &spec, &parallel, decomposition, world)
}

/// Bytes of the CPU's last-level cache from sysfs (`root`: /sys/devices/system/cpu): the
/// highest level any CPU has, summed over its instances (one per die or socket, told apart by
/// the CPUs that share them). `None` where sysfs does not say.
fn cpu_last_level_cache(root: &Path) -> Option<u64> {
    let read = |path: &Path| Some(fs::read_to_string(path).ok()?.trim().to_string());
    // (level, CPUs sharing it) -> size of each cache.
    let mut caches = BTreeMap::new();
    for cpu in fs::read_dir(root).ok()?.flatten() {
        let name = cpu.file_name();
        let number = name.to_str().and_then(|n| n.strip_prefix("cpu"));
        if !number.is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())) {
            continue;
        }
        for index in fs::read_dir(cpu.path().join("cache"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let dir = index.path();
            let level = read(&dir.join("level")).and_then(|l| l.parse::<u32>().ok());
            let size = read(&dir.join("size")).and_then(|s| cache_size(&s));
            if let (Some(level), Some(size), Some(shared)) =
                (level, size, read(&dir.join("shared_cpu_list")))
            {
                caches.insert((level, shared), size);
            }
        }
    }
    let last = caches.keys().map(|(level, _)| *level).max()?;
    Some(
        caches
            .iter()
            .filter(|((level, _), _)| *level == last)
            .map(|(_, size)| size)
            .sum(),
    )
}

/// A cache size as sysfs writes it (`48K`, `32768K`, `16M`), in bytes.
fn cache_size(text: &str) -> Option<u64> {
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let shift = match &text[digits..] {
        "" => 0,
        "K" => 10,
        "M" => 20,
        "G" => 30,
        _ => return None,
    };
    text[..digits].parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// One grid in precision `R`: the repetitions timed with `copies` sampled before the first and
/// after each, each repetition's share of the roofline from the copies beside it; one line.
fn bench_case<R: Real>(
    args: &BenchArgs,
    dim: usize,
    n: usize,
    (copies, cache_bytes): (&mut Copies, f64),
    world: &World,
) -> Result<(), Failure> {
    let problem = problem::<R>(args, dim, n)?;
    let (mut backend, what) = backend(args, &problem, world)?;
    let nodes = problem.layout.interior_nodes() as f64;
    // Warm up (graph capture, caches), then size the repetitions from a timed chunk (the
    // slowest process's, so that all run as many).
    let mut iters = 10;
    let secs = median_seconds(1, || {
        backend.advance(iters).map(|_| ()).map_err(Failure::runtime)
    })?;
    let secs = world.each(secs).into_iter().fold(0.0, f64::max);
    iters = ((args.seconds / secs * iters as f64) as usize).clamp(2, 1_000_000);
    let (seconds, copied) = interleaved(
        args.repeats.max(1),
        || copies.sample(),
        || seconds_of(|| backend.advance(iters).map(|_| ()).map_err(Failure::runtime)),
    )?;
    if !world.is_root() {
        return Ok(());
    }
    let rates: Vec<f64> = seconds.iter().map(|s| nodes * iters as f64 / s).collect();
    let rate = Spread::of(&rates).median;
    let halo = halo_bytes::<R>(&problem, args);
    let bytes = (2 * problem.equations() * R::BYTES) as f64;
    let share = Spread::of(&paired_shares(&rates, &copied, bytes));
    let copy = Spread::of(&copied);
    let copy = match copies {
        Copies::Beside { .. } => format!(
            "; copy {:.2} GB/s, {:.2}-{:.2}",
            copy.median / 1e9,
            copy.min / 1e9,
            copy.max / 1e9
        ),
        Copies::Once(_) => String::new(),
    };
    let state = bytes * problem.layout.len as f64;
    let caveat = if state < CACHE_FACTOR * cache_bytes {
        format!(
            " [cache-resident: {:.3} MB of state < {CACHE_FACTOR} x {:.1} MB of cache; the roofline does not bound it]",
            state / 1e6,
            cache_bytes / 1e6
        )
    } else {
        String::new()
    };
    println!(
        "{:<4} {dim}D {:>15} {:>4} {:>9.3} G node-updates/s {:>6.1}% of roofline{caveat} (repetitions {:.1}-{:.1} %{copy}) {:>9.3} ms/iteration  ({:.0} B/node; halo {:.2} MB/iteration; {iters} iterations x {}; {what})",
        value_name(args.backend),
        format!("{:?}", &problem.layout.n[..dim]),
        R::NAME,
        rate / 1e9,
        100.0 * share.median,
        100.0 * share.min,
        100.0 * share.max,
        1e3 * nodes / rate,
        bytes,
        halo / 1e6,
        args.repeats
    );
    if !args.project.is_empty() {
        print_projection(&problem, args, rate);
    }
    Ok(())
}

/// Bytes all blocks send per iteration (every interface face, both directions).
fn halo_bytes<R: Real>(problem: &Problem<R>, args: &BenchArgs) -> f64 {
    let l = problem.layout;
    let Ok(d) = Decomposition::new(l.dim, l.n, block_counts(args, l.dim)) else {
        return 0.0;
    };
    let values: usize = scaling::traffic(&d, problem.equations())
        .iter()
        .map(|t| t.values)
        .sum();
    (values * R::BYTES) as f64
}

/// The projection of `--project` from the measured `rate` (node updates per second on one
/// device) of `problem`'s grid: a Markdown table.
fn print_projection<R: Real>(problem: &Problem<R>, args: &BenchArgs, rate: f64) {
    let l = problem.layout;
    let model = scaling::Model {
        vars: problem.equations(),
        value_bytes: R::BYTES,
        rate,
        net: scaling::Network {
            bandwidth: args.network_gbs * 1e9,
            latency: args.latency_us * 1e-6,
        },
    };
    println!(
        "\nprojection from {:.3} G node-updates/s per device, {} GB/s and {} µs per message \
         between every pair of ranks:\n",
        rate / 1e9,
        args.network_gbs,
        args.latency_us
    );
    println!("| ranks | scaling | blocks | nodes / rank | halo MB / rank | messages | compute ms | communicate ms | efficiency | overlapped |");
    println!("|---:|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for &ranks in &args.project {
        let runs = [
            ("strong", model.strong(l.dim, l.n, ranks)),
            ("weak", model.weak(l.dim, l.n[0], ranks)),
        ];
        for (kind, p) in runs {
            match p {
                Ok(p) => println!(
                    "| {ranks} | {kind} | {:?} | {} | {:.3} | {} | {:.4} | {:.4} | {:.1} % | {:.1} % |",
                    &p.blocks[..l.dim],
                    p.busiest.nodes,
                    (p.busiest.values * R::BYTES) as f64 / 1e6,
                    p.busiest.messages,
                    1e3 * p.compute,
                    1e3 * p.communicate,
                    100.0 * p.serial,
                    100.0 * p.overlapped
                ),
                Err(e) => println!("| {ranks} | {kind} | cannot be cut: {e} | | | | | | | |"),
            }
        }
    }
}

pub fn bench(mut args: BenchArgs) -> Result<(), Failure> {
    let world = World::join();
    if world.rank_size().1 > 1 && (args.solve.is_some() || !args.project.is_empty()) {
        return Err(Failure::input(
            "under MPI bench measures throughput only: leave out --solve and --project",
        ));
    }
    if args.backend == BackendKind::Auto {
        args.backend = match cuda_probe() {
            Ok(_) => BackendKind::Cuda,
            Err(_) => BackendKind::Cpu,
        };
    }
    if let Some(names) = &args.solve {
        return time_to_solution(&args, names, &world);
    }
    if let Some(operator) = args.implicit {
        if args.backend != BackendKind::Cpu || args.blocks.is_some() {
            return Err(Failure::input(
                "--implicit: one block on the CPU (--backend cpu, no --blocks)",
            ));
        }
        return implicit::implicit_phases(&args, operator);
    }
    if let Some(cells) = &args.fem {
        return fem_throughput(&args, cells);
    }
    if let Some(n) = args.fv {
        return finite_volume_loops(&args, n);
    }
    if let Some(n) = args.fv_ablation {
        return finite_volume_ablation(&args, n);
    }
    if let Some(n) = args.fv_cuda {
        return crate::bench_fv_cuda::finite_volume_cuda(
            args.device,
            args.threads,
            args.repeats,
            n,
        );
    }
    if !args.project.is_empty() {
        if args.blocks.is_some() {
            return Err(Failure::input(
                "--project projects from one device's rate: leave out --blocks",
            ));
        }
        if args.project.contains(&0) || args.network_gbs <= 0.0 || args.latency_us < 0.0 {
            return Err(Failure::input(format!(
                "--project {:?}, --network-gbs {}, --latency-us {}: ranks and bandwidth must be \
                 positive, the latency at least 0",
                args.project, args.network_gbs, args.latency_us
            )));
        }
    }
    // Under MPI the first process measures the machine and speaks; the others only iterate.
    let (mut copies, cache) = if !world.is_root() {
        (Copies::Once(0.0), 0.0)
    } else if args.backend == BackendKind::Cpu {
        let pool = ferroflow_cpu::pool(args.threads).map_err(Failure::runtime)?;
        let threads = pool.current_num_threads();
        let mut copies = Copies::cpu(pool);
        let bandwidth = copies.sample();
        // Between an MPI run's repetitions the other processes wait in their exchanges, on
        // cores a copy would share: there the copy is measured once, here.
        let beside = world.rank_size().1 == 1;
        if !beside {
            copies = Copies::Once(bandwidth);
        }
        let known = cpu_last_level_cache(Path::new("/sys/devices/system/cpu"));
        let cache = known.unwrap_or(DEFAULT_CACHE_BYTES) as f64;
        println!(
            "cpu: {threads} threads; copy bandwidth {:.2} GB/s (ordinary stores, bytes read + \
             written{}); last-level cache {:.1} MB{}",
            bandwidth / 1e9,
            match beside {
                true =>
                    "; sampled again before the first repetition of each grid and after \
                         every one, each share divided by the two beside it",
                false => "; measured once, as the other processes would wait beside a copy",
            },
            cache / 1e6,
            if known.is_none() {
                " (assumed: sysfs does not say)"
            } else {
                ""
            }
        );
        (copies, cache)
    } else {
        let device = ferroflow_cuda::probe().map_err(Failure::input)?;
        let bw =
            ferroflow_cuda::copy_bandwidth(args.device, 1 << 30, 20).map_err(Failure::runtime)?;
        println!(
            "cuda: {device}\ncopy bandwidth {:.1} GB/s (bytes read + written, device to device)",
            bw / 1e9
        );
        if let [first, second, ..] = args.devices[..] {
            let route = halo_route(args.exchange);
            let link = ferroflow_cuda::link_bandwidth(first, second, route, 64 << 20, 10)
                .map_err(Failure::runtime)?;
            println!(
                "link GPU {first} -> GPU {second} ({}): {:.1} GB/s one way (64 MiB copies)",
                value_name(args.exchange),
                link / 1e9
            );
        }
        let l2 = ferroflow_cuda::l2_cache_bytes(args.device).map_err(Failure::runtime)?;
        println!("L2 cache {:.1} MB", l2 as f64 / 1e6);
        (Copies::Once(bw), l2 as f64)
    };
    for (dim, sizes) in [(2, &args.n2d), (3, &args.n3d)] {
        for &n in sizes.iter() {
            for p in &args.precision {
                match p {
                    Precision::F64 => {
                        bench_case::<f64>(&args, dim, n, (&mut copies, cache), &world)?
                    }
                    Precision::F32 => {
                        bench_case::<f32>(&args, dim, n, (&mut copies, cache), &world)?
                    }
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_sizes_read_as_sysfs_writes_them() {
        assert_eq!(cache_size("48K"), Some(48 << 10));
        assert_eq!(cache_size("32768K"), Some(32 << 20));
        assert_eq!(cache_size("16M"), Some(16 << 20));
        assert_eq!(cache_size("1024"), Some(1024));
        assert_eq!(cache_size("12Q"), None);
        assert_eq!(cache_size(""), None);
    }

    /// Two dies of two CPUs, each die with its own L3 and each CPU its own L1 and L2.
    #[test]
    fn the_last_level_cache_is_summed_over_its_instances() {
        let root = tempfile::TempDir::new().unwrap();
        let cache = |cpu: usize, index: usize, level: u32, size: &str, shared: &str| {
            let dir = root.path().join(format!("cpu{cpu}/cache/index{index}"));
            fs::create_dir_all(&dir).unwrap();
            fs::write(dir.join("level"), format!("{level}\n")).unwrap();
            fs::write(dir.join("size"), format!("{size}\n")).unwrap();
            fs::write(dir.join("shared_cpu_list"), format!("{shared}\n")).unwrap();
        };
        for cpu in 0..4 {
            cache(cpu, 0, 1, "48K", &cpu.to_string());
            cache(cpu, 2, 2, "1024K", &cpu.to_string());
            cache(cpu, 3, 3, "32768K", if cpu < 2 { "0-1" } else { "2-3" });
        }
        // Not CPUs: ignored.
        fs::create_dir_all(root.path().join("cpufreq/cache/index3")).unwrap();
        fs::write(root.path().join("online"), "0-3\n").unwrap();
        assert_eq!(cpu_last_level_cache(root.path()), Some(64 << 20));
        assert_eq!(cpu_last_level_cache(&root.path().join("none")), None);
    }
}
