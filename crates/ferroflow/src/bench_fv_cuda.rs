//! `ferroflow bench --fv-cuda N`: the finite-volume solver on a GPU against the copy bandwidth
//! and against the optimised CPU loops on all cores, in one run. Per mesh: the GPU's loops
//! timed apart for a few block sizes (the face loop's traffic by
//! [`ferroflow_fv::bench::counts`]' model), one residual and one whole four-stage steady
//! iteration; the CPU's residual by the fastest loops of the ablation and its whole steady
//! iteration by the solver the integrators call; whether one GPU residual has the CPU's bits.
use crate::bench::{cpu_copy_bandwidth, median_seconds};
use crate::Failure;
use ferroflow_fv::bench::{counts, flow};
use ferroflow_fv::cuda::bench::time;
use ferroflow_fv::cuda::{CudaOptions, CudaSolver, FaceLoop};
use ferroflow_fv::fast::{Loops, Options};
use ferroflow_fv::gas::Cons;
use ferroflow_fv::time::{steady, FOUR_STAGE};
use ferroflow_mesh::generate::{box_mesh, BoxCells};
use std::time::Instant;

/// Threads per block the GPU's loops are timed with.
const BLOCK_SIZES: [u32; 3] = [64, 128, 256];

/// Courant number of the timed iterations.
const CFL: f64 = 1.5;

/// Numbers of `a` whose bits differ from `b`'s.
fn differing(a: &[Cons], b: &[Cons]) -> usize {
    (a.iter().flatten())
        .zip(b.iter().flatten())
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
}

/// `--fv-cuda N` on device `device`, the CPU on `threads` threads (0: all cores), medians of
/// `repeats`: N³ hexahedra, then (N / 6^⅓)³ hexahedra of six tetrahedra each.
pub fn finite_volume_cuda(
    device: usize,
    threads: usize,
    repeats: usize,
    n: usize,
) -> Result<(), Failure> {
    if n < 4 {
        return Err(Failure::input(format!(
            "--fv-cuda {n}: at least 4 cells per axis"
        )));
    }
    let copy = ferroflow_cuda::copy_bandwidth(device, 1 << 30, 20).map_err(Failure::runtime)?;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(Failure::runtime)?;
    let cpu_copy = cpu_copy_bandwidth(&pool, repeats);
    println!(
        "gpu copy bandwidth {:.1} GB/s; cpu: {} threads, copy bandwidth {:.1} GB/s (bytes read \
         + written)",
        copy / 1e9,
        pool.current_num_threads(),
        cpu_copy / 1e9
    );
    let side = ((n as f64) / 6f64.cbrt()).round() as usize;
    for (name, fill, side) in [
        ("hexahedra", BoxCells::Hex, n),
        ("tetrahedra", BoxCells::Tet6, side),
    ] {
        let start = Instant::now();
        let mesh = box_mesh(fill, [side; 3], [1.0; 3]).map_err(Failure::input)?;
        let (mut solver, u) = pool
            .install(|| flow(&mesh, None))
            .map_err(Failure::runtime)?;
        drop(mesh);
        let setup = start.elapsed().as_secs_f64();
        let g = &solver.geometry;
        let (cells, faces) = (g.cells, g.faces());
        let face_bytes = counts(g)[1].bytes;
        let options = CudaOptions {
            device,
            face_loop: FaceLoop::Coloured,
            ..CudaOptions::default()
        };
        let mut gpu = CudaSolver::new(&solver, &u, &options).map_err(Failure::runtime)?;
        let got = gpu.residual(FaceLoop::Stored).map_err(Failure::runtime)?;
        let mut loops = pool.install(|| Loops::new(&solver, Options::DEFAULT));
        let mut r = vec![[0.0; 5]; cells];
        pool.install(|| loops.residual(&solver, &u, 0.0, &mut r));
        let unequal = differing(&got, &r);
        let cpu_residual = median_seconds(repeats, || {
            pool.install(|| loops.residual(&solver, &u, 0.0, &mut r));
            Ok(())
        })?;
        drop(loops);
        let mut state = u.clone();
        let cpu_iteration = median_seconds(repeats.min(3), || {
            pool.install(|| steady(&mut solver, &mut state, CFL, &FOUR_STAGE, (0.0, 1)));
            Ok(())
        })?;
        println!(
            "\n{name}: {cells} cells, {faces} faces (set up in {setup:.1} s) on {}; face loop \
             {:.0} bytes per face by the model; one residual: {unequal} of {} numbers differ \
             from the CPU's bits\n",
            gpu.device_name(),
            face_bytes / faces as f64,
            5 * cells
        );
        println!("| threads/block | prepare ms | face ms | face G faces/s | face GB/s | % of copy | atomic face ms | coloured face ms | gather ms | residual ms | iteration ms | × residual | × iteration |");
        println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for threads in BLOCK_SIZES {
            gpu.set_threads(threads);
            gpu.upload(&u).map_err(Failure::runtime)?;
            let t = time(&mut gpu, CFL, &FOUR_STAGE, repeats).map_err(Failure::runtime)?;
            let rate = face_bytes / t.faces;
            println!(
                "| {threads} | {:.2} | {:.2} | {:.2} | {:.0} | {:.1} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {:.1} |",
                1e3 * t.prepare,
                1e3 * t.faces,
                faces as f64 / t.faces / 1e9,
                rate / 1e9,
                100.0 * rate / copy,
                1e3 * t.faces_atomic,
                1e3 * t.faces_coloured,
                1e3 * t.gather,
                1e3 * t.residual,
                1e3 * t.iteration,
                cpu_residual / t.residual,
                cpu_iteration / t.iteration
            );
        }
        println!(
            "\ncpu, {} threads: residual by the optimised loops {:.1} ms; steady iteration (four \
             stages, through the same loops) {:.1} ms. × residual: the CPU's residual over the \
             GPU's; × iteration: the CPU's steady iteration over the GPU's",
            pool.current_num_threads(),
            1e3 * cpu_residual,
            1e3 * cpu_iteration
        );
    }
    Ok(())
}
