//! `ferroflow bench --implicit`: the CPU's implicit iteration phase by phase on the bench's
//! grids (the lid-driven cavity, or the buoyant one with `--energy`), relaxed as a case that
//! leaves the relaxation to the CPU (symmetric Gauss–Seidel, 4 sweeps, `implicit_cfl` inf),
//! the operator in the precision given. Each phase's time, and the bytes per node it must move
//! at least against the copy bandwidth measured in the same run:
//! - residual: R(Q) and the frozen operator, then the gauge's projection (reads the state, the
//!   continuity residual and the weights; writes the right side, the operator, the zeroed
//!   increments, the continuity residual and the weights);
//! - sweep: a forward and a backward pass, each reading the right side, the operator data it
//!   uses and the increments, and writing the increments;
//! - update: the increments added to the state, the walls filled.
use super::{median_seconds, problem, BenchArgs};
use crate::Failure;
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::implicit::ImplicitBlock;
use ferroflow_ac::{Implicit, Method, Relaxation};
use ferroflow_cases::case::Precision;
use ferroflow_core::Real;
use std::time::Instant;

/// Seconds of one iteration's phases: residual (with the projection), all sweeps, update.
type Phases = [f64; 3];

/// The table of every grid and precision of `args`, the operator in `operator`.
pub(super) fn implicit_phases(args: &BenchArgs, operator: Precision) -> Result<(), Failure> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads)
        .build()
        .map_err(Failure::runtime)?;
    let copy = super::cpu_copy_bandwidth(&pool, args.repeats);
    println!(
        "cpu: {} threads; copy bandwidth {:.2} GB/s (bytes read + written); operator {}, \
         symmetric Gauss-Seidel\n",
        pool.current_num_threads(),
        copy / 1e9,
        operator.name()
    );
    println!(
        "| grid | state | sweeps | ms/iteration | G nodes/s | residual ms | B/node | of copy \
         | one sweep ms | B/node | of copy | update ms | B/node | of copy |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (dim, sizes) in [(2, &args.n2d), (3, &args.n3d)] {
        for &n in sizes.iter() {
            for p in &args.precision {
                match p {
                    Precision::F64 => row::<f64>(args, dim, n, operator, copy)?,
                    Precision::F32 => row::<f32>(args, dim, n, operator, copy)?,
                }
            }
        }
    }
    Ok(())
}

/// One grid in state precision `R`: its table row.
fn row<R: Real>(
    args: &BenchArgs,
    dim: usize,
    n: usize,
    operator: Precision,
    copy: f64,
) -> Result<(), Failure> {
    let mut problem = problem::<R>(args, dim, n)?;
    let imp = Implicit {
        single: operator == Precision::F32,
        ..Implicit::default()
    };
    problem.numerics.method = Method::Implicit(imp);
    let relax = imp.on(false);
    debug_assert_eq!(relax.relaxation, Relaxation::Sgs);
    let mut b = CpuBackend::new(&problem, args.threads).map_err(Failure::runtime)?;
    let p_ref = problem.pressure_ref_offset();
    let nodes = problem.layout.interior_nodes() as f64;
    let run = |b: &mut CpuBackend<R>, iters: usize| -> Result<Phases, Failure> {
        let mut t = [0.0; 3];
        let fail = Failure::runtime;
        for _ in 0..iters {
            let start = Instant::now();
            let gauge = b.residual().map_err(fail)?;
            b.project(gauge.gauge()).map_err(fail)?;
            let relaxed = Instant::now();
            for s in 0..b.sweeps() {
                b.sweep(s).map_err(fail)?;
            }
            let updated = Instant::now();
            let shift = b.reference_after(p_ref).map_err(fail)?;
            b.update(shift).map_err(fail)?;
            t[0] += (relaxed - start).as_secs_f64();
            t[1] += (updated - relaxed).as_secs_f64();
            t[2] += updated.elapsed().as_secs_f64();
        }
        Ok(t)
    };
    // Warm up, then size the repetitions from a timed chunk.
    let warm = run(&mut b, 2)?;
    let iters = ((args.seconds / warm.iter().sum::<f64>() * 2.0) as usize).clamp(2, 100_000);
    let mut runs = Vec::new();
    median_seconds(args.repeats, || {
        runs.push(run(&mut b, iters)?);
        Ok(())
    })?;
    // Each phase's median over the repetitions.
    let phase = |i: usize| {
        let mut t: Vec<f64> = runs.iter().map(|r| r[i] / iters as f64).collect();
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    };
    let [residual, sweeps, update] = [phase(0), phase(1), phase(2)];
    let sweep = sweeps / relax.sweeps as f64;
    let total = residual + sweeps + update;
    let (r, s) = (R::BYTES as f64, if imp.single { 4.0 } else { 8.0 });
    let (eq, energy) = (problem.equations() as f64, problem.temperature().is_some());
    let d = dim as f64;
    // λ and u per axis, β², the three inverse diagonals (written whether T is solved or not).
    let frozen_written = 2.0 * d + 4.0;
    let frozen_read = 2.0 * d + 3.0 + energy as u8 as f64;
    let bytes = [
        r * (eq + 4.0) + s * (2.0 * eq + frozen_written + 1.0),
        2.0 * s * (3.0 * eq + frozen_read),
        r * 2.0 * eq + s * eq,
    ];
    let cell = |secs: f64, b: f64| {
        format!(
            "{:.3} | {b:.0} | {:.0} %",
            1e3 * secs,
            100.0 * b * nodes / secs / copy
        )
    };
    println!(
        "| {dim}D {:?} | {} | {} | {:.3} | {:.4} | {} | {} | {} |",
        &problem.layout.n[..dim],
        R::NAME,
        relax.sweeps,
        1e3 * total,
        nodes / total / 1e9,
        cell(residual, bytes[0]),
        cell(sweep, bytes[1]),
        cell(update, bytes[2]),
    );
    Ok(())
}
