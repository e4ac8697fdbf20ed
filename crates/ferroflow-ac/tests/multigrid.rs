//! The FAS multigrid cycle with the implicit smoother on the lid-driven cavity (Re = 100):
//! it keeps a converged state, converges to the single grid's answer, and needs far less work
//! than the single grid.
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::multigrid::Fas;
use ferroflow_ac::{Implicit, Method, Multigrid, Numerics, Problem};
use ferroflow_cases::cavity::lid_driven;
use ferroflow_core::Backend;
use std::sync::Arc;

fn cavity(n: usize) -> Problem<f64> {
    let numerics = Numerics {
        method: Method::Implicit(Implicit::default()),
        // V(1, 1) cycles over every level down to 5 nodes per axis, 8 iterations on the
        // coarsest.
        multigrid: Multigrid {
            levels: 20,
            ..Multigrid::default()
        },
        ..Numerics::default()
    };
    lid_driven::<f64>(2, [n, n, 1], 100.0, 1.0, numerics).unwrap()
}

fn largest(r: &[f64]) -> f64 {
    r.iter().copied().fold(0.0, f64::max)
}

fn fas(problem: &Problem<f64>, pool: &Arc<rayon::ThreadPool>) -> Fas<f64> {
    Fas::new(problem, Arc::clone(pool)).unwrap()
}

#[test]
fn a_cycle_keeps_a_converged_state_and_converges_to_the_single_grid_answer() {
    let problem = cavity(33);
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let mut single = CpuBackend::on(&problem, Arc::clone(&pool)).unwrap();
    let mut last = f64::INFINITY;
    for _ in 0..60 {
        last = largest(&single.advance(100).unwrap().l2());
        if last < 1e-14 {
            break;
        }
    }
    assert!(last < 1e-14, "the single grid did not converge: {last:e}");
    let converged = single.download().unwrap();
    let mut mg = fas(&problem, &pool);
    assert_eq!(mg.depth(), 4);
    mg.finest().upload(&converged).unwrap();
    let after = largest(&mg.cycle().unwrap().l2());
    assert!(
        after < 1e-14,
        "a cycle moved a converged state: residual {after:e}"
    );
    // From the start: the same answer.
    let mut mg = fas(&problem, &pool);
    for _ in 0..200 {
        if largest(&mg.cycle().unwrap().l2()) < 1e-14 {
            break;
        }
    }
    let answer = mg.finest().download().unwrap();
    let mut diff = 0.0f64;
    converged.layout.for_each_node(|_, _, _, o| {
        for (a, b) in answer.vars.iter().zip(&converged.vars) {
            diff = diff.max((a[o] - b[o]).abs());
        }
    });
    assert!(diff < 1e-10, "multigrid and single grid differ by {diff:e}");
}

#[test]
fn multigrid_converges_with_a_fraction_of_the_single_grid_work() {
    let problem = cavity(65);
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let mut mg = fas(&problem, &pool);
    assert_eq!(mg.depth(), 5);
    let start = largest(&mg.finest().advance(1).unwrap().l2());
    let mut cycles = 0;
    let mut r = start;
    while r > 1e-10 * start && cycles < 200 {
        r = largest(&mg.cycle().unwrap().l2());
        cycles += 1;
    }
    // 1e-10 in 48 V(1, 1) cycles of 2.64 fine-grid iterations each (2026-11-24).
    assert!(cycles <= 90, "{cycles} cycles: residual {r:e} of {start:e}");
    let work = (cycles as f64 * mg.work()).ceil() as usize;
    let mut single = CpuBackend::on(&problem, pool).unwrap();
    let s0 = largest(&single.advance(1).unwrap().l2());
    let s = largest(&single.advance(work).unwrap().l2());
    println!(
        "multigrid: {cycles} cycles, {work} iterations' work; single grid then at {:e}",
        s / s0
    );
    assert!(
        s > 1e-4 * s0,
        "the single grid reached {s:e} of {s0:e} in {work} iterations"
    );
}

/// The manufactured solution converged by multigrid has the one-grid errors, so the same
/// orders of accuracy (with the source term on the finest level and the forcing below).
#[test]
fn manufactured_solutions_keep_their_errors_under_multigrid() {
    use ferroflow_cases::mms::{observed_order, Manufactured};
    let mms = Manufactured::new(2);
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let numerics = cavity(5).numerics;
    let mut previous: Option<(f64, f64)> = None;
    for n in [17, 33, 65] {
        let problem = mms.problem::<f64>(n, numerics).unwrap();
        let converge = |b: &mut dyn Backend<Real = f64>, step: usize| {
            let first = largest(&b.advance(1).unwrap().l2());
            for _ in 0..400 {
                if largest(&b.advance(step).unwrap().l2()) < 1e-12 * first {
                    return b.download().unwrap();
                }
            }
            panic!("{n}: not converged");
        };
        let mut mg = fas(&problem, &pool);
        let with = mms.errors(&problem, &converge(&mut mg, 1));
        let mut one = CpuBackend::on(&problem, Arc::clone(&pool)).unwrap();
        let without = mms.errors(&problem, &converge(&mut one, 50));
        for ((a, _), (b, _)) in with.iter().zip(&without) {
            assert!(
                (a - b).abs() <= 1e-6 * b,
                "{n}: L2 error {a:e} with multigrid, {b:e} without"
            );
        }
        let (h, u) = (1.0 / (n - 1) as f64, with[1].0);
        if let Some((hc, uc)) = previous {
            let order = observed_order(uc, u, hc, h);
            assert!(order > 1.8, "{n}: order of u {order}");
        }
        previous = Some((h, u));
    }
}
