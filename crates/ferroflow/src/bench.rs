//! `ferroflow bench`: node updates per second of the whole iteration (interior pass, boundary
//! fill, norms), against the memory-bandwidth roofline measured in the same run.
use crate::Failure;
use clap::Args;
use ferroflow_core::{Backend, Numerics, Real};
use ferroflow_cpu::CpuBackend;
use ferroflow_solver::cavity;
use rayon::prelude::*;
use std::time::Instant;

/// Arguments of `ferroflow bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// CPU threads (0 = all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// 2D grid (nodes per axis).
    #[arg(long, default_value_t = 2049)]
    n2d: usize,
    /// 3D grid (nodes per axis).
    #[arg(long, default_value_t = 193)]
    n3d: usize,
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    repeats: usize,
}

const NUMERICS: Numerics = Numerics {
    cfl: 0.8,
    kappa: 1.0,
    u_ref: 1.0,
    c4: 0.02,
};

/// Median of `repeats` timings of `f`, seconds.
fn median_seconds(repeats: usize, mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..repeats.max(1))
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// Copy bandwidth (bytes read + written per second) of a parallel copy of 2 × 256 MiB.
fn copy_bandwidth(pool: &rayon::ThreadPool, repeats: usize) -> f64 {
    let n = 32 << 20;
    let src = vec![1.0f64; n];
    let mut dst = vec![0.0f64; n];
    let chunk = 1 << 16;
    let secs = median_seconds(repeats, || {
        pool.install(|| {
            dst.par_chunks_mut(chunk)
                .zip(src.par_chunks(chunk))
                .for_each(|(d, s)| d.copy_from_slice(s))
        })
    });
    std::hint::black_box(&dst);
    (2 * n * 8) as f64 / secs
}

fn bench_case<R: Real>(
    dim: usize,
    n: usize,
    args: &BenchArgs,
    bandwidth: f64,
) -> Result<(), Failure> {
    let problem =
        cavity::lid_driven::<R>(dim, [n; 3], 1000.0, 1.0, NUMERICS).map_err(Failure::input)?;
    let mut backend = CpuBackend::new(&problem, args.threads).map_err(Failure::runtime)?;
    let nodes = problem.layout.interior_nodes() as f64;
    // About 0.3 s of work per repetition at 100 M nodes/s.
    let iters = ((3e7 / nodes) as usize).max(2);
    backend.advance(iters).map_err(Failure::runtime)?;
    let secs = median_seconds(args.repeats, || {
        backend.advance(iters).expect("benchmark iteration");
    });
    let rate = nodes * iters as f64 / secs;
    let bytes = (2 * (1 + dim) * R::BYTES) as f64;
    let roofline = bandwidth / bytes;
    println!(
        "{dim}D {n:>5}^{dim} {:>4} {:>9.3} G node-updates/s  {:>5.1}% of roofline ({:.0} B/node, {:.3} G/s)",
        R::NAME,
        rate / 1e9,
        100.0 * rate / roofline,
        bytes,
        roofline / 1e9
    );
    Ok(())
}

pub fn bench(args: BenchArgs) -> Result<(), Failure> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(Failure::runtime)?;
    let bandwidth = copy_bandwidth(&pool, args.repeats);
    println!(
        "threads {}; copy bandwidth {:.2} GB/s (bytes read + written)",
        pool.current_num_threads(),
        bandwidth / 1e9
    );
    bench_case::<f64>(2, args.n2d, &args, bandwidth)?;
    bench_case::<f32>(2, args.n2d, &args, bandwidth)?;
    bench_case::<f64>(3, args.n3d, &args, bandwidth)?;
    bench_case::<f32>(3, args.n3d, &args, bandwidth)?;
    Ok(())
}
