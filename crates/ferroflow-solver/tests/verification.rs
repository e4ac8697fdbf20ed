//! Verification of the CPU backend through the driver: manufactured solutions (observed order),
//! lid-driven cavity against published profiles, precision and thread-count invariance.
//! Heavy versions are `#[ignore]`d (run with `cargo test --release -- --ignored`) and exist as
//! `ferroflow verify`.
use ferroflow_core::{Backend, Fields, Numerics, Problem, ProblemError, Real};
use ferroflow_cpu::CpuBackend;
use ferroflow_solver::case::builtin;
use ferroflow_solver::cavity::{centrelines, lid_driven, max_deviation};
use ferroflow_solver::mms::{study, Manufactured, MmsRow};
use ferroflow_solver::reference::{albensoeder_kuhlmann, ghia};
use ferroflow_solver::{Flow, Simulation, StopCriteria};

const NUMERICS: Numerics = Numerics {
    cfl: 1.0,
    kappa: 1.0,
    u_ref: 1.0,
    c4: 0.02,
};

/// Iterates to `tolerance` on all cores; panics if the run does not converge.
fn converge<R: Real>(problem: &Problem<R>, tolerance: f64, threads: usize) -> Fields<R> {
    let mut backend = CpuBackend::new(problem, threads).unwrap();
    let stop = StopCriteria {
        tolerance,
        max_iterations: 1_000_000,
        check_interval: 100,
    };
    let mut sim = Simulation::new(stop);
    let outcome = sim
        .run(&mut backend, problem.variable_names(), |_| Flow::Continue)
        .unwrap();
    assert!(
        outcome.converged,
        "not converged after {} iterations",
        sim.iteration
    );
    let mut f = backend.download().unwrap();
    problem.reference_pressure(&mut f);
    f
}

fn mms_orders(dim: usize, sizes: &[usize]) -> Vec<MmsRow> {
    let mms = Manufactured::new(dim);
    let rows = study::<f64>(&mms, sizes, NUMERICS, |p| Ok(converge(p, 1e-11, 0))).unwrap();
    for r in &rows {
        eprintln!("{r:?}");
    }
    rows
}

fn assert_second_order(rows: &[MmsRow], finest: usize, tolerance: f64) {
    for r in rows.iter().filter(|r| r.n == finest) {
        for order in [r.l2_order.unwrap(), r.linf_order.unwrap()] {
            assert!(
                (order - 2.0).abs() <= tolerance,
                "{}: order {order:.3} on n = {}",
                r.variable,
                r.n
            );
        }
    }
}

#[test]
fn mms_2d_is_second_order() {
    assert_second_order(&mms_orders(2, &[17, 33, 65]), 65, 0.1);
}

#[test]
fn mms_3d_is_second_order() {
    // Coarse grids: the pressure maximum error is still pre-asymptotic (2.39 on 17 -> 33; the
    // ignored full study reaches 2.07 on 33 -> 65), so this fast check only catches a lost order.
    assert_second_order(&mms_orders(3, &[9, 17, 33]), 33, 0.4);
}

#[test]
#[ignore = "heavy: four grids up to 129^2 and 65^3"]
fn mms_full_study() {
    assert_second_order(&mms_orders(2, &[17, 33, 65, 129]), 129, 0.1);
    assert_second_order(&mms_orders(3, &[9, 17, 33, 65]), 65, 0.1);
}

/// Runs a built-in cavity case (optionally on another grid) to its tolerance and returns the
/// largest deviation of the centreline profiles from the published data.
fn cavity_deviation(name: &str, nodes: Option<usize>) -> f64 {
    let mut case = builtin(name).unwrap();
    if let Some(n) = nodes {
        case.grid.nodes = vec![n; case.grid.dim];
    }
    let problem = case.problem::<f64>().unwrap();
    let fields = converge(&problem, case.numerics.tolerance, 0);
    let (u, v) = centrelines(&problem, &fields);
    let re = case.physics.reynolds as u32;
    let (ref_u, ref_v) = if case.grid.dim == 2 {
        ghia(re).unwrap()
    } else {
        albensoeder_kuhlmann(re).unwrap()
    };
    let (du, at_u) = max_deviation(&u, &ref_u);
    let (dv, at_v) = max_deviation(&v, &ref_v);
    eprintln!("{name} on {:?}: max |u - ref| = {du:.4} at y = {at_u}, max |v - ref| = {dv:.4} at x = {at_v}", case.grid.nodes);
    du.max(dv)
}

#[test]
fn cavity_2d_re100_matches_ghia() {
    assert!(cavity_deviation("cavity2d-re100", None) < 0.01);
}

#[test]
#[ignore = "heavy: about 400k iterations on 129^2"]
fn cavity_2d_re1000_matches_ghia() {
    assert!(cavity_deviation("cavity2d-re1000", None) < 0.02);
}

#[test]
#[ignore = "heavy: 3D Re = 1000 on 49^3, about 8 minutes on one core"]
fn cavity_3d_re1000_against_albensoeder_kuhlmann() {
    // 49^3 under-resolves the Re = 1000 wall layers: measured 0.193 (v at x = 0.906), with
    // profiles of the right shape but too weak. This guards that figure; 0.02 needs >= 129^3.
    let dev = cavity_deviation("cavity3d-re1000", Some(49));
    assert!(dev < 0.2, "deviation {dev}");
}

#[test]
fn cavity_3d_re100_converges_with_spanwise_symmetry() {
    let case = builtin("cavity3d-re100").unwrap();
    let problem = case.problem::<f64>().unwrap();
    let f = converge(&problem, case.numerics.tolerance, 0);
    // The cube is symmetric about z = 0.5: u, v even and w odd in z - 0.5.
    let n = problem.layout.n;
    let mut worst = 0.0f64;
    let mut largest_w = 0.0f64;
    problem.layout.for_each_node(|i, j, k, _| {
        let m = n[2] - 1 - k;
        for (var, sign) in [(1, 1.0), (2, 1.0), (3, -1.0)] {
            worst = worst.max((f.at(var, i, j, k) - sign * f.at(var, i, j, m)).abs());
        }
        largest_w = largest_w.max(f.at(3, i, j, k).abs());
    });
    assert!(worst < 1e-6, "asymmetry {worst:e}");
    assert!(largest_w > 1e-3, "no spanwise flow at all: {largest_w:e}");
}

#[test]
fn f32_and_f64_agree_in_velocity() {
    let p64 = lid_driven::<f64>(2, [65; 3], 100.0, 1.0, NUMERICS).unwrap();
    let p32 = lid_driven::<f32>(2, [65; 3], 100.0, 1.0, NUMERICS).unwrap();
    let (f64s, f32s) = (converge(&p64, 1e-8, 0), converge(&p32, 1e-5, 0));
    let mut worst = 0.0f64;
    p64.layout.for_each_node(|i, j, k, _| {
        for var in 1..3 {
            worst = worst.max((f64s.at(var, i, j, k) - f32s.at(var, i, j, k).f64()).abs());
        }
    });
    eprintln!("max |u_f32 - u_f64| = {worst:e}");
    assert!(worst < 1e-4, "{worst:e}");
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    for dim in [2, 3] {
        let problem = lid_driven::<f64>(dim, [21, 17, 13], 400.0, 1.0, NUMERICS).unwrap();
        let run = |threads| {
            let mut b = CpuBackend::new(&problem, threads).unwrap();
            let r = b.advance(300).unwrap();
            (r, b.download().unwrap())
        };
        let (r1, f1) = run(1);
        let (r2, f2) = run(2);
        assert_eq!(r1, r2);
        assert!(f1
            .vars
            .iter()
            .zip(&f2.vars)
            .all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())));
    }
}

#[test]
fn invalid_parameters_are_errors_not_panics() {
    let bad = |numerics: Numerics, re: f64, n: usize| {
        lid_driven::<f64>(2, [n; 3], re, 1.0, numerics).unwrap_err()
    };
    assert!(matches!(
        bad(NUMERICS, -5.0, 33),
        ProblemError::OutOfRange {
            name: "physics.reynolds",
            ..
        }
    ));
    assert!(matches!(
        bad(NUMERICS, 100.0, 4),
        ProblemError::GridTooSmall { nodes: 4, .. }
    ));
    let zero_cfl = Numerics {
        cfl: 0.0,
        ..NUMERICS
    };
    assert!(matches!(
        bad(zero_cfl, 100.0, 33),
        ProblemError::OutOfRange {
            name: "numerics.cfl",
            ..
        }
    ));
    let mms = Manufactured::new(2);
    let mut p = mms.problem::<f64>(9, NUMERICS).unwrap();
    p.physics.viscosity = 0.0;
    let p2 = Problem::new(p.layout, [1.0; 3], p.physics, NUMERICS, p.initial.clone());
    assert!(matches!(
        p2.unwrap_err(),
        ProblemError::OutOfRange {
            name: "physics.viscosity",
            ..
        }
    ));
}
