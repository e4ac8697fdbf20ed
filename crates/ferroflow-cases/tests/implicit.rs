//! The implicit relaxation (seed 003) against the explicit scheme whose residual it relaxes:
//! the same converged answer and manufactured-solution errors, in far fewer iterations;
//! results independent of the thread count; the implicit side's precision steering the path
//! only.
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::{Implicit, Method, Numerics, Problem, Relaxation};
use ferroflow_cases::case::builtin;
use ferroflow_cases::mms::{study, Manufactured};
use ferroflow_core::{Backend, Fields};
use ferroflow_solver::{Simulation, StopCriteria};

fn implicit(relaxation: Relaxation, sweeps: usize, cfl: f64, single: bool) -> Method {
    Method::Implicit(Implicit {
        relaxation: Some(relaxation),
        sweeps: Some(sweeps),
        cfl: Some(cfl),
        single,
    })
}

/// Symmetric Gauss–Seidel, 4 sweeps, no pseudo-time term, f32 operator.
fn sgs4() -> Method {
    implicit(Relaxation::Sgs, 4, f64::INFINITY, true)
}

/// Built-in case `name` on `nodes` per axis, iterated by `method`.
fn case_problem(name: &str, nodes: usize, method: Method) -> Problem<f64> {
    let mut case = builtin(name).unwrap();
    case.mesh.nodes = vec![nodes; case.mesh.dim];
    let mut problem = case.problem::<f64>().unwrap();
    problem.numerics.method = method;
    problem
}

/// Iterates to `tolerance` on `threads` threads (or stops after `limit` iterations); returns
/// the referenced fields and the iterations.
fn run(
    problem: &Problem<f64>,
    tolerance: f64,
    limit: usize,
    threads: usize,
) -> (Fields<f64>, usize) {
    let mut backend = CpuBackend::new(problem, threads).unwrap();
    let mut sim = Simulation::new(StopCriteria {
        tolerance,
        max_iterations: limit,
        check_interval: 50,
        stall_checks: ferroflow_solver::STALL_CHECKS,
    });
    let outcome = sim
        .run_plain(&mut backend, problem.variable_names())
        .unwrap();
    assert!(
        outcome.converged || sim.iteration == limit,
        "{:?} stopped after {} iterations: {outcome:?}",
        problem.numerics.method,
        sim.iteration
    );
    let mut f = backend.download().unwrap();
    problem.reference_pressure(&mut f);
    (f, sim.iteration)
}

/// Largest difference of variable `var` over the nodes.
fn max_difference(a: &Fields<f64>, b: &Fields<f64>, var: usize) -> f64 {
    let mut worst: f64 = 0.0;
    a.layout.for_each_node(|_, _, _, o| {
        worst = worst.max((a.vars[var][o] - b.vars[var][o]).abs());
    });
    worst
}

/// Runs case `name` on `nodes` per axis (its own grid if None) explicitly and with SGS to
/// 1e-10; asserts that both give the same answer within 1e-6 (velocities in the problem's
/// velocity scale, T in the span of the wall temperatures) and that the implicit method needs
/// less than a third of the iterations (measured: 60x fewer for the 33^2 Re = 100 cavity,
/// 3.7x for bdc2d on 33^2, where cell Péclet numbers above 2 slow it down).
fn same_answer(name: &str, nodes: Option<usize>) {
    let problem = |method| match nodes {
        Some(n) => case_problem(name, n, method),
        None => {
            let mut p = builtin(name).unwrap().problem::<f64>().unwrap();
            p.numerics.method = method;
            p
        }
    };
    let explicit = problem(Method::Explicit);
    let (e, e_iterations) = run(&explicit, 1e-10, 5_000_000, 0);
    let (i, i_iterations) = run(&problem(sgs4()), 1e-10, 1_000_000, 0);
    let u = explicit.numerics.u_ref;
    for v in 1..=explicit.layout.dim {
        let d = max_difference(&e, &i, v) / u;
        assert!(d < 1e-6, "{name}: velocity {v} differs by {d:e} U");
    }
    if let Some(t) = explicit.temperature() {
        let span = e.vars[t].iter().fold(0.0f64, |m, x| m.max(x.abs())) * 2.0;
        let d = max_difference(&e, &i, t) / span;
        assert!(d < 1e-6, "{name}: T differs by {d:e} ΔT");
    }
    eprintln!("{name} {nodes:?}: explicit {e_iterations}, implicit {i_iterations} iterations");
    assert!(
        3 * i_iterations < e_iterations,
        "{name}: {i_iterations} implicit vs {e_iterations} explicit iterations"
    );
}

#[test]
fn implicit_and_explicit_converge_to_the_same_answer() {
    // Coarse grids where the explicit scheme converges to 1e-10 (the 33^2 Re = 1000 cavity
    // does not: its explicit iteration ends in a cycle).
    for (name, nodes) in [
        ("cavity2d-re100", 33),
        ("bdc2d", 33),
        ("cavity3d-re100", 17),
        ("bdc3d", 17),
    ] {
        same_answer(name, Some(nodes));
    }
}

#[test]
#[ignore = "heavy: the built-in cases on their own grids, explicitly to 1e-10 (tens of minutes)"]
fn built_in_cases_give_the_explicit_answer() {
    for name in [
        "cavity2d-re100",
        "cavity2d-re1000",
        "bdc2d",
        "cavity3d-re100",
        "bdc3d",
    ] {
        same_answer(name, None);
    }
}

#[test]
fn every_relaxation_converges_to_the_explicit_answer() {
    let (e, _) = run(
        &case_problem("cavity2d-re100", 33, Method::Explicit),
        1e-10,
        1_000_000,
        0,
    );
    for method in [
        implicit(Relaxation::Sgs, 1, f64::INFINITY, false),
        implicit(Relaxation::RedBlack, 4, 100.0, true),
        implicit(Relaxation::Line, 4, f64::INFINITY, true),
        implicit(Relaxation::Jacobi, 16, 100.0, true),
    ] {
        let (i, _) = run(
            &case_problem("cavity2d-re100", 33, method),
            1e-10,
            100_000,
            0,
        );
        for v in 1..=2 {
            let d = max_difference(&e, &i, v);
            assert!(d < 1e-6, "{method:?}: velocity {v} differs by {d:e}");
        }
    }
}

#[test]
fn manufactured_errors_are_the_explicit_ones() {
    // The implicit answer is the explicit one: the same errors on every grid, so the same
    // observed orders (second, checked in verification.rs).
    for (mms, sizes) in [
        (Manufactured::new(2), &[17, 33][..]),
        (Manufactured::with_energy(3), &[9, 17][..]),
    ] {
        let rows = |method: Method| {
            let numerics = Numerics {
                cfl: 1.0,
                method,
                ..Numerics::default()
            };
            study::<f64>(&mms, sizes, numerics, |p| Ok(run(p, 1e-11, 2_000_000, 0).0)).unwrap()
        };
        let (explicit, implicit) = (rows(Method::Explicit), rows(sgs4()));
        assert_eq!(explicit.len(), implicit.len());
        for (e, i) in explicit.iter().zip(&implicit) {
            assert_eq!((e.n, e.variable), (i.n, i.variable));
            for (a, b) in [(e.l2_error, i.l2_error), (e.linf_error, i.linf_error)] {
                assert!((a - b).abs() <= 1e-6 * a, "{e:?} vs {i:?}");
            }
        }
    }
}

#[test]
fn results_do_not_depend_on_the_thread_count() {
    for (name, nodes) in [("bdc2d", 65), ("bdc3d", 17)] {
        for method in [
            sgs4(),
            implicit(Relaxation::Jacobi, 3, 100.0, false),
            implicit(Relaxation::RedBlack, 2, 100.0, true),
            implicit(Relaxation::Line, 3, f64::INFINITY, false),
        ] {
            let problem = case_problem(name, nodes, method);
            let (one, _) = run(&problem, 1e-30, 100, 1);
            for threads in [2, 3] {
                let (many, _) = run(&problem, 1e-30, 100, threads);
                assert!(one == many, "{name} {method:?}: {threads} threads differ");
            }
        }
    }
}

#[test]
fn the_implicit_precision_steers_the_path_only() {
    let count = |single| {
        let method = implicit(Relaxation::Sgs, 4, f64::INFINITY, single);
        run(
            &case_problem("cavity2d-re1000", 65, method),
            1e-7,
            100_000,
            0,
        )
    };
    let ((f32_fields, f32_count), (f64_fields, f64_count)) = (count(true), count(false));
    let change = f32_count.abs_diff(f64_count) as f64 / f64_count as f64;
    assert!(
        change <= 0.02,
        "f32 {f32_count} vs f64 {f64_count} iterations"
    );
    assert!(max_difference(&f32_fields, &f64_fields, 1) < 1e-5);
}
