//! A decomposed grid gives the one-block result bit for bit: 1D, 2D and 3D cuts of 2D and 3D
//! cases (lid-driven cavity, buoyancy-driven cavity with adiabatic walls, manufactured
//! solution with sources), even and uneven block sizes.
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::Decomposed;
use ferroflow_ac::{Numerics, Problem};
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
