//! `ferroflow bench`: node updates per second of the whole iteration (interior pass, boundary
//! fill, norms), against the memory-bandwidth roofline measured in the same run.
use crate::backends::{cuda_probe, halo_route, make_backend};
use crate::run::value_name;
use crate::world::World;
use crate::Failure;
use clap::Args;
use ferroflow_ac::{Numerics, Problem};
use ferroflow_cases::case::{builtin, BackendKind, BackendSpec, Exchange, ParallelSpec, Precision};
use ferroflow_cases::cavity;
use ferroflow_core::decomposition::{Decomposition, Face};
use ferroflow_core::Side;
use ferroflow_core::{Backend, Real};
use rayon::prelude::*;
use std::time::Instant;

/// Arguments of `ferroflow bench`.
#[derive(Args)]
#[command(after_help = "\
Examples:
  ferroflow bench                                   # CPU: 2049^2 and 193^3, f64 and f32
  ferroflow bench --backend cuda --n2d 4097,8193 --n3d 257,513
  ferroflow bench --backend cuda --energy --n2d 4097 --n3d 257,513
  ferroflow bench --backend cuda --energy --n2d --n3d 513 --blocks 1,1,2 --devices 0,1
  ferroflow bench --backend cuda --energy --n2d --n3d 257 --blocks 2,1,1 --devices 0,1 --weak")]
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
}

/// Median of `repeats` timings of `f`, seconds.
fn median_seconds(
    repeats: usize,
    mut f: impl FnMut() -> Result<(), Failure>,
) -> Result<f64, Failure> {
    let mut t = Vec::new();
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Copy bandwidth (bytes read + written per second) of a parallel copy of 2 × 256 MiB.
fn cpu_copy_bandwidth(pool: &rayon::ThreadPool, repeats: usize) -> f64 {
    let n = 32 << 20;
    let src = vec![1.0f64; n];
    let mut dst = vec![0.0f64; n];
    let chunk = 1 << 16;
    // One untimed copy first: it maps the destination's pages.
    let mut t: Vec<f64> = (0..=repeats.max(1))
        .map(|_| {
            let start = Instant::now();
            pool.install(|| {
                dst.par_chunks_mut(chunk)
                    .zip(src.par_chunks(chunk))
                    .for_each(|(d, s)| d.copy_from_slice(s))
            });
            start.elapsed().as_secs_f64()
        })
        .collect();
    let mut t = t.split_off(1);
    t.sort_by(f64::total_cmp);
    let secs = t[t.len() / 2];
    std::hint::black_box(&dst);
    (2 * n * 8) as f64 / secs
}

/// The benchmark problem on `n` nodes per axis: the lid-driven cavity, or with `--energy` the
/// built-in buoyancy-driven cavity (one more variable).
fn problem<R: Real>(args: &BenchArgs, dim: usize, n: usize) -> Result<Problem<R>, Failure> {
    let blocks = block_counts(args, dim);
    // Weak scaling: every block owns n - 2 nodes per axis, as one block of n nodes does.
    let nodes = blocks.map(|p| if args.weak { p * (n - 2) + 2 } else { n });
    if !args.energy {
        return cavity::lid_driven::<R>(dim, nodes, 1000.0, 1.0, Numerics::default())
            .map_err(Failure::input);
    }
    let mut case = builtin(if dim == 2 { "bdc2d" } else { "bdc3d" }).expect("built-in case");
    case.mesh.nodes = nodes[..dim].to_vec();
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

/// Sets up the backend for `problem` (through the program's one factory); returns it with a
/// description.
fn backend<R: Real>(
    args: &BenchArgs,
    problem: &Problem<R>,
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
    make_backend(problem, &spec, &parallel, decomposition, &World::alone())
}

fn bench_case<R: Real>(
    args: &BenchArgs,
    dim: usize,
    n: usize,
    bandwidth: f64,
) -> Result<(), Failure> {
    let problem = problem::<R>(args, dim, n)?;
    let (mut backend, what) = backend(args, &problem)?;
    let nodes = problem.layout.interior_nodes() as f64;
    // Warm up (graph capture, caches), then size the repetitions from a timed chunk.
    let mut iters = 10;
    let secs = median_seconds(1, || {
        backend.advance(iters).map(|_| ()).map_err(Failure::runtime)
    })?;
    iters = ((args.seconds / secs * iters as f64) as usize).clamp(2, 1_000_000);
    let secs = median_seconds(args.repeats, || {
        backend.advance(iters).map(|_| ()).map_err(Failure::runtime)
    })?;
    let rate = nodes * iters as f64 / secs;
    let halo = halo_bytes::<R>(&problem, args);
    let bytes = (2 * problem.equations() * R::BYTES) as f64;
    let roofline = bandwidth / bytes;
    println!(
        "{:<4} {dim}D {:>15} {:>4} {:>9.3} G node-updates/s {:>6.1}% of roofline {:>9.3} ms/iteration  ({:.0} B/node; halo {:.2} MB/iteration; {iters} iterations x {}; {what})",
        value_name(args.backend),
        format!("{:?}", &problem.layout.n[..dim]),
        R::NAME,
        rate / 1e9,
        100.0 * rate / roofline,
        1e3 * secs / iters as f64,
        bytes,
        halo / 1e6,
        args.repeats
    );
    Ok(())
}

/// Bytes all blocks send per iteration (every interface face, both directions).
fn halo_bytes<R: Real>(problem: &Problem<R>, args: &BenchArgs) -> f64 {
    let l = problem.layout;
    let Ok(d) = Decomposition::new(l.dim, l.n, block_counts(args, l.dim)) else {
        return 0.0;
    };
    let vars = problem.equations();
    let values: usize = d
        .extents()
        .iter()
        .map(|e| {
            let layout = e.layout(l.dim);
            Side::ALL
                .into_iter()
                .filter(|s| e.neighbours[*s as usize].is_some())
                .map(|side| Face { side, vars }.len(&layout))
                .sum::<usize>()
        })
        .sum();
    (values * R::BYTES) as f64
}

pub fn bench(mut args: BenchArgs) -> Result<(), Failure> {
    if args.backend == BackendKind::Auto {
        args.backend = match cuda_probe() {
            Ok(_) => BackendKind::Cuda,
            Err(_) => BackendKind::Cpu,
        };
    }
    let bandwidth = if args.backend == BackendKind::Cpu {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(args.threads)
            .build()
            .map_err(Failure::runtime)?;
        let bw = cpu_copy_bandwidth(&pool, args.repeats);
        println!(
            "cpu: {} threads; copy bandwidth {:.2} GB/s (bytes read + written)",
            pool.current_num_threads(),
            bw / 1e9
        );
        bw
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
        bw
    };
    for (dim, sizes) in [(2, &args.n2d), (3, &args.n3d)] {
        for &n in sizes.iter() {
            for p in &args.precision {
                match p {
                    Precision::F64 => bench_case::<f64>(&args, dim, n, bandwidth)?,
                    Precision::F32 => bench_case::<f32>(&args, dim, n, bandwidth)?,
                }
            }
        }
    }
    Ok(())
}
