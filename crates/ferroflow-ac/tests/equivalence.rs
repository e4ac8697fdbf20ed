//! A decomposed grid gives the one-block result bit for bit: 1D, 2D and 3D cuts of 2D and 3D
//! cases (lid-driven cavity, buoyancy-driven cavity with adiabatic walls, manufactured
//! solution with sources), even and uneven block sizes.
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::Decomposed;
use ferroflow_ac::{Implicit, Method, Numerics, Problem, Relaxation};
use ferroflow_cases::cavity::lid_driven;
use ferroflow_cases::convection::HeatedCavity;
use ferroflow_cases::mms::Manufactured;
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::Backend;
use ferroflow_parallel::InProcess;

/// Runs `iterations` on one block and on `blocks`; asserts every node of every variable is
/// identical and the residuals agree to rounding.
fn check(problem: &Problem<f64>, blocks: [usize; 3], iterations: usize) {
    let mut one = CpuBackend::new(problem, 1).unwrap();
    let r1 = one.advance(iterations).unwrap();
    let d = Decomposition::new(problem.layout.dim, problem.layout.n, blocks).unwrap();
    let mut many = Decomposed::new(problem, d, InProcess, |p, _| CpuBackend::new(p, 1)).unwrap();
    let rn = many.advance(iterations).unwrap();
    let (a, b) = (one.download().unwrap(), many.download().unwrap());
    let mut worst = 0.0f64;
    for v in 0..a.vars.len() {
        a.layout.for_each_node(|i, j, k, o| {
            let (x, y) = (a.vars[v][o], b.vars[v][o]);
            assert!(
                x.is_finite(),
                "variable {v} at ({i}, {j}, {k}) is not finite"
            );
            worst = worst.max((x - y).abs() / x.abs().max(1e-300));
        });
    }
    assert_eq!(
        worst, 0.0,
        "blocks {blocks:?}: max relative difference {worst:e}"
    );
    for (x, y) in r1.l2().iter().zip(rn.l2()) {
        assert!((x - y).abs() <= 1e-12 * x.abs(), "residuals {x:e} vs {y:e}");
    }
}

#[test]
fn lid_driven_cavity_2d() {
    let p = lid_driven::<f64>(2, [33, 31, 1], 100.0, 1.0, Numerics::default()).unwrap();
    for blocks in [[2, 1, 1], [1, 3, 1], [3, 2, 1]] {
        check(&p, blocks, 1000);
    }
}

#[test]
fn lid_driven_cavity_3d() {
    let p = lid_driven::<f64>(3, [15, 17, 13], 100.0, 1.0, Numerics::default()).unwrap();
    for blocks in [[1, 1, 2], [2, 1, 1], [1, 3, 2], [2, 2, 2]] {
        check(&p, blocks, 1000);
    }
}

#[test]
fn buoyancy_driven_cavity() {
    let bdc = HeatedCavity::nondimensional(1e4, 0.71, [0.0, -1.0, 0.0]).unwrap();
    let p2 = bdc
        .problem::<f64>(2, [25, 25, 1], Numerics::default())
        .unwrap();
    check(&p2, [2, 2, 1], 1000);
    let p3 = bdc
        .problem::<f64>(3, [13, 13, 13], Numerics::default())
        .unwrap();
    check(&p3, [2, 1, 2], 1000);
}

#[test]
fn manufactured_solution_with_sources() {
    let p = Manufactured::with_energy(3)
        .problem::<f64>(13, Numerics::default())
        .unwrap();
    check(&p, [3, 1, 1], 500);
    let p = Manufactured::new(2)
        .problem::<f64>(21, Numerics::default())
        .unwrap();
    check(&p, [1, 2, 1], 1000);
}

/// Numerics asking for the implicit method relaxed by `relaxation` with an f64 operator.
fn implicit(relaxation: Relaxation) -> Numerics {
    Numerics {
        method: Method::Implicit(Implicit {
            relaxation: Some(relaxation),
            single: false,
            ..Implicit::default()
        }),
        ..Numerics::default()
    }
}

/// The largest difference between the fields of `a` and `b`, relative to the largest value of
/// each variable.
fn largest_difference(a: &mut impl Backend<Real = f64>, b: &mut impl Backend<Real = f64>) -> f64 {
    let (a, b) = (a.download().unwrap(), b.download().unwrap());
    let mut worst = 0.0f64;
    for v in 0..a.vars.len() {
        let scale = a.vars[v].iter().fold(0.0f64, |m, x| m.max(x.abs()));
        a.layout.for_each_node(|_, _, _, o| {
            assert!(a.vars[v][o].is_finite() && b.vars[v][o].is_finite());
            worst = worst.max((a.vars[v][o] - b.vars[v][o]).abs() / scale);
        });
    }
    worst
}

/// With Jacobi sweeps, relaxing each block and exchanging the increments' halos after every
/// sweep is the one-block relaxation: the fields differ only by the rounding of the pressure
/// gauge's sums, added block by block instead of row by row.
#[test]
fn implicit_jacobi_on_blocks_is_the_one_block_relaxation() {
    let bdc = HeatedCavity::nondimensional(1e4, 0.71, [0.0, -1.0, 0.0]).unwrap();
    let numerics = implicit(Relaxation::Jacobi);
    let cases = [
        (
            lid_driven::<f64>(2, [33, 31, 1], 1000.0, 1.0, numerics).unwrap(),
            [3, 2, 1],
        ),
        (
            bdc.problem::<f64>(3, [13, 13, 13], numerics).unwrap(),
            [2, 1, 2],
        ),
        (
            Manufactured::with_energy(3)
                .problem::<f64>(13, numerics)
                .unwrap(),
            [3, 1, 1],
        ),
    ];
    for (p, blocks) in cases {
        let mut one = CpuBackend::new(&p, 1).unwrap();
        let d = Decomposition::new(p.layout.dim, p.layout.n, blocks).unwrap();
        let mut many = Decomposed::new(&p, d, InProcess, |p, _| CpuBackend::new(p, 1)).unwrap();
        let (r1, rn) = (one.advance(40).unwrap(), many.advance(40).unwrap());
        let worst = largest_difference(&mut one, &mut many);
        assert!(worst < 1e-12, "blocks {blocks:?}: {worst:e}");
        for (x, y) in r1.l2().iter().zip(rn.l2()) {
            assert!((x - y).abs() <= 1e-9 * x.abs(), "residuals {x:e} vs {y:e}");
        }
    }
}

/// Every relaxation on blocks (Gauss–Seidel within them, Jacobi across) converges to the
/// one-block answer.
#[test]
fn implicit_relaxations_on_blocks_converge_to_the_one_block_answer() {
    let converge = |b: &mut dyn Backend<Real = f64>| {
        for _ in 0..250 {
            let r = b.advance(20).unwrap();
            if r.l2().iter().all(|x| *x < 1e-11) {
                return;
            }
        }
        panic!("not converged: {:?}", b.advance(1).unwrap().l2());
    };
    for relaxation in [Relaxation::Sgs, Relaxation::RedBlack, Relaxation::Line] {
        let p = lid_driven::<f64>(2, [33, 33, 1], 100.0, 1.0, implicit(relaxation)).unwrap();
        let mut one = CpuBackend::new(&p, 1).unwrap();
        converge(&mut one);
        let d = Decomposition::new(2, p.layout.n, [2, 3, 1]).unwrap();
        let mut many = Decomposed::new(&p, d, InProcess, |p, _| CpuBackend::new(p, 2)).unwrap();
        converge(&mut many);
        let worst = largest_difference(&mut one, &mut many);
        assert!(worst < 1e-9, "{relaxation:?}: {worst:e}");
    }
}

/// A decomposed run restored from its own pieces (each block from its piece, halos by one
/// exchange) continues bit for bit, explicit and implicit, 2D and 3D with energy.
#[test]
fn blocks_restored_from_their_pieces_continue_bit_for_bit() {
    let numerics = Numerics {
        cfl: 0.5,
        method: Method::Explicit,
        ..Numerics::default()
    };
    let heated = HeatedCavity::nondimensional(1e4, 0.71, [0.0, -1.0, 0.0]).unwrap();
    let cases = [
        (
            lid_driven::<f64>(2, [25, 21, 1], 100.0, 1.0, numerics).unwrap(),
            [3, 2, 1],
        ),
        (
            lid_driven::<f64>(2, [25, 21, 1], 100.0, 1.0, implicit(Relaxation::Jacobi)).unwrap(),
            [2, 2, 1],
        ),
        (
            heated.problem::<f64>(3, [13, 11, 12], numerics).unwrap(),
            [2, 1, 2],
        ),
    ];
    for (p, blocks) in cases {
        let d = Decomposition::new(p.layout.dim, p.layout.n, blocks).unwrap();
        let make = |d: Decomposition| {
            Decomposed::new(&p, d, InProcess, |p, _| CpuBackend::new(p, 1)).unwrap()
        };
        let (mut run, mut restored) = (make(d.clone()), make(d));
        run.advance(30).unwrap();
        let pieces = run.pieces().unwrap();
        assert_eq!(pieces.len(), blocks.iter().product::<usize>());
        restored.restore_pieces(&pieces).unwrap();
        run.advance(30).unwrap();
        restored.advance(30).unwrap();
        let bits = |f: ferroflow_core::Fields<f64>| -> Vec<u64> {
            f.snapshot()
                .vars
                .iter()
                .flatten()
                .map(|x| x.to_bits())
                .collect()
        };
        assert!(
            bits(run.download().unwrap()) == bits(restored.download().unwrap()),
            "blocks {blocks:?}"
        );
        // Pieces of another cut are refused by name.
        let e = restored
            .restore_pieces(&pieces[1..])
            .unwrap_err()
            .to_string();
        assert!(e.contains("restored into blocks"), "{e}");
    }
}
