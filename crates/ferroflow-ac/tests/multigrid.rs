//! The FAS multigrid cycle with the implicit smoother on the lid-driven cavity (Re = 100):
//! it keeps a converged state, converges to the single grid's answer, and needs far less work
//! than the single grid.
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::multigrid::Fas;
use ferroflow_ac::{CycleShape, Implicit, Method, Multigrid, Numerics, Problem};
use ferroflow_cases::cavity::lid_driven;
use ferroflow_core::{Backend, Fields};
use std::sync::Arc;

fn cavity(n: usize) -> Problem<f64> {
    let numerics = Numerics {
        method: Method::Implicit(Implicit::default()),
        // (1, 1) cycles over every level down to 9 nodes per axis, 8 iterations on the
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

fn fas(problem: &Problem<f64>, pool: &Arc<rayon::ThreadPool>) -> Fas<CpuBackend<f64>> {
    Fas::new(problem, Arc::clone(pool)).unwrap()
}

/// V- and W-cycles, from the initial state and from a full-multigrid start.
const SHAPES: [(CycleShape, bool); 2] = [(CycleShape::V, false), (CycleShape::W, true)];

fn shaped(mut problem: Problem<f64>, shape: CycleShape, fmg: bool) -> Problem<f64> {
    problem.numerics.multigrid.shape = shape;
    problem.numerics.multigrid.fmg = fmg;
    problem
}

#[test]
fn a_cycle_keeps_a_converged_state_and_converges_to_the_single_grid_answer() {
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let mut single = CpuBackend::on(&cavity(33), Arc::clone(&pool)).unwrap();
    let mut last = f64::INFINITY;
    for _ in 0..60 {
        last = largest(&single.advance(100).unwrap().l2());
        if last < 1e-14 {
            break;
        }
    }
    assert!(last < 1e-14, "the single grid did not converge: {last:e}");
    let converged = single.download().unwrap();
    for (shape, fmg) in SHAPES {
        let problem = shaped(cavity(33), shape, fmg);
        let mut mg = fas(&problem, &pool);
        assert_eq!(mg.depth(), 3);
        // A given state: no full-multigrid start over it.
        mg.upload(&converged).unwrap();
        mg.advance(1).unwrap();
        let after = largest(&mg.advance(1).unwrap().l2());
        assert!(
            after < 1e-14,
            "{shape:?}: a cycle moved a converged state: residual {after:e}"
        );
        // From the start: the same answer.
        let mut mg = fas(&problem, &pool);
        for _ in 0..200 {
            if largest(&mg.advance(1).unwrap().l2()) < 1e-14 {
                break;
            }
        }
        let answer = mg.download().unwrap();
        let mut diff = 0.0f64;
        converged.layout.for_each_node(|_, _, _, o| {
            for (a, b) in answer.vars.iter().zip(&converged.vars) {
                diff = diff.max((a[o] - b[o]).abs());
            }
        });
        assert!(
            diff < 1e-10,
            "{shape:?} (fmg {fmg}): multigrid and single grid differ by {diff:e}"
        );
    }
}

/// The root-mean-square difference in velocity between two states.
fn velocity_apart(a: &Fields<f64>, b: &Fields<f64>) -> f64 {
    let (mut sum, mut count) = (0.0, 0);
    a.layout.for_each_node(|_, _, _, o| {
        for v in 1..a.vars.len() {
            sum += (a.vars[v][o] - b.vars[v][o]).powi(2);
            count += 1;
        }
    });
    (sum / count as f64).sqrt()
}

/// A full-multigrid start leaves the finest grid closer to its answer after the first cycle
/// than a cycle from rest (RMS velocity error 2.4e-3 against 6.7e-3 at 129², Re = 100,
/// 2026-11-24), for less than two cycles' work.
#[test]
fn a_full_multigrid_start_begins_near_the_answer() {
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let run = |fmg: bool, cycles: usize| {
        let mut mg = fas(&shaped(cavity(129), CycleShape::W, fmg), &pool);
        mg.advance(cycles).unwrap();
        (mg.download().unwrap(), mg.start_work() / mg.work())
    };
    let (answer, _) = run(false, 120);
    let (plain, _) = run(false, 1);
    let (full, cost) = run(true, 1);
    let (a, b) = (
        velocity_apart(&plain, &answer),
        velocity_apart(&full, &answer),
    );
    println!("velocity error after one cycle: {a:e} from rest, {b:e} after the start");
    assert!(b < 0.5 * a, "{b:e} after the start, {a:e} without");
    assert!(cost < 2.0, "the start cost {cost} cycles");
}

#[test]
fn multigrid_converges_with_a_fraction_of_the_single_grid_work() {
    let problem = cavity(65);
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let mut mg = fas(&problem, &pool);
    assert_eq!(mg.depth(), 4);
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

/// Cycles from the start until every residual is `tolerance` of its first iteration's, or of
/// the largest first one where that is zero (the run's own criterion).
fn cycles_to(mg: &mut Fas<CpuBackend<f64>>, tolerance: f64) -> usize {
    let mut first = mg.finest().advance(1).unwrap().l2();
    let most = largest(&first);
    first
        .iter_mut()
        .filter(|f| **f == 0.0)
        .for_each(|f| *f = most);
    for cycle in 1..=400 {
        let r = mg.cycle().unwrap().l2();
        if r.iter().zip(&first).all(|(r, f)| *r <= tolerance * f) {
            return cycle;
        }
    }
    panic!("not converged in 400 cycles");
}

/// At Re = 100 the pressure's high frequencies are stiff only through viscosity: with the
/// pressure row of the implicit operator split by the full λ, 36 and 57 cycles here (the
/// built-in case: 49, 83, 144 from 129² to 513²); with λ_p 32 and 27 (acceptance: growth at
/// most 1.3x per doubling).
#[test]
fn cycles_do_not_grow_with_the_grid_at_re_100() {
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let cycles = [129, 257].map(|n| cycles_to(&mut fas(&cavity(n), &pool), 1e-7));
    println!("cycles to 1e-7 at 129², 257²: {cycles:?}");
    assert!(
        cycles[1] as f64 <= 1.3 * cycles[0] as f64,
        "cycles at 129², 257²: {cycles:?}"
    );
}

/// The buoyancy-driven cavity (Ra = 1e5) by V- and W-cycles after the full-multigrid start:
/// with coarse levels down to 5 nodes per axis the W-cycles diverged within two cycles on
/// 65²; down to 9 both converge in 56–57.
#[test]
fn the_buoyancy_driven_cavity_converges_by_v_and_w_cycles() {
    let mut case = ferroflow_cases::case::builtin("bdc2d").unwrap();
    case.mesh.nodes = vec![65, 65];
    case.numerics.multigrid = 20;
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    for shape in [CycleShape::V, CycleShape::W] {
        let problem = shaped(case.problem::<f64>().unwrap(), shape, true);
        let cycles = cycles_to(&mut fas(&problem, &pool), 1e-7);
        assert!(cycles <= 80, "{shape:?}: {cycles} cycles");
    }
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

/// Converges `mg` by cycles to `tolerance` of the first residual; its state and the cycles.
fn converged<L: ferroflow_ac::multigrid::Level<Real = f64>>(
    mg: &mut Fas<L>,
    tolerance: f64,
) -> (Fields<f64>, usize) {
    let first = largest(&mg.advance(1).unwrap().l2());
    for cycle in 2..=300 {
        if largest(&mg.advance(1).unwrap().l2()) < tolerance * first {
            return (mg.download().unwrap(), cycle);
        }
    }
    panic!("not converged in 300 cycles");
}

/// Every level cut into the same blocks (the blocks relax as any decomposed grid does:
/// Jacobi across their interfaces) converges to the one-block answer, in about as many
/// cycles: the lid-driven cavity, the heated cube (energy, 3D) and a manufactured solution
/// (the source term cut to the blocks, its errors unchanged).
#[test]
fn levels_cut_into_blocks_converge_to_the_answer_of_one_block() {
    use ferroflow_cases::mms::Manufactured;
    use ferroflow_parallel::InProcess;
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let mut heated = ferroflow_cases::case::builtin("bdc3d").unwrap();
    heated.mesh.nodes = vec![33, 33, 33];
    heated.numerics.multigrid = 20;
    let heated = heated.problem::<f64>().unwrap();
    let mms = Manufactured::new(2);
    let mms_problem = mms.problem::<f64>(33, cavity(5).numerics).unwrap();
    for (name, problem, blocks, depth) in [
        ("cavity 65²", cavity(65), [2, 2, 1], 4),
        ("cavity 65², 3 blocks", cavity(65), [3, 1, 1], 3),
        ("heated 33³", heated, [1, 2, 2], 3),
        ("manufactured 33²", mms_problem, [1, 2, 1], 3),
    ] {
        let mut one = fas(&problem, &pool);
        let (answer, cycles) = converged(&mut one, 1e-12);
        let mut mg = Fas::blocks(&problem, blocks, InProcess, Arc::clone(&pool)).unwrap();
        assert_eq!(mg.depth(), depth, "{name}: levels");
        let (cut, cut_cycles) = converged(&mut mg, 1e-12);
        println!("{name}: {cycles} cycles on one block, {cut_cycles} on {blocks:?}");
        assert!(
            cut_cycles <= cycles + cycles / 5 + 2,
            "{name}: {cut_cycles} cycles on blocks against {cycles}"
        );
        let mut diff = 0.0f64;
        answer.layout.for_each_node(|_, _, _, o| {
            for (a, b) in answer.vars.iter().zip(&cut.vars) {
                diff = diff.max((a[o] - b[o]).abs());
            }
        });
        assert!(
            diff < 1e-9,
            "{name}: blocks and one block differ by {diff:e}"
        );
        if name.starts_with("manufactured") {
            let (a, b) = (mms.errors(&problem, &answer), mms.errors(&problem, &cut));
            for ((a, _), (b, _)) in a.iter().zip(&b) {
                assert!(
                    (a - b).abs() <= 1e-8 * a,
                    "{name}: L2 error {b:e} against {a:e}"
                );
            }
        }
    }
}
