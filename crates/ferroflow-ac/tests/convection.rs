//! The forms of the convective terms (`Numerics::convection`), each converged by multigrid:
//! the skew-symmetric form is second order on a manufactured solution with energy, and its 2D
//! cavity centrelines at Re = 1000 are closer to the grid-converged ones than the advective
//! form's (seed 000's).
use ferroflow_ac::multigrid::Fas;
use ferroflow_ac::{Convection, Implicit, Method, Multigrid, Numerics, Problem};
use ferroflow_cases::cavity::{centrelines, lid_driven, Line};
use ferroflow_cases::mms::{observed_order, Manufactured};
use ferroflow_core::{Backend, Fields};
use std::sync::Arc;

fn numerics(convection: Convection) -> Numerics {
    Numerics {
        convection,
        method: Method::Implicit(Implicit::default()),
        multigrid: Multigrid {
            levels: 20,
            ..Multigrid::default()
        },
        ..Numerics::default()
    }
}

/// `problem` converged by multigrid until every residual is `tolerance` of its first (or of
/// the largest first, where that is zero), pressure referenced.
fn converge(problem: &Problem<f64>, tolerance: f64) -> Fields<f64> {
    let pool = Arc::new(ferroflow_cpu::pool(2).unwrap());
    let mut mg = Fas::new(problem, pool).unwrap();
    let mut first = mg.advance(1).unwrap().l2();
    let most = first.iter().copied().fold(0.0, f64::max);
    first
        .iter_mut()
        .filter(|f| **f == 0.0)
        .for_each(|f| *f = most);
    for _ in 0..400 {
        let r = mg.advance(1).unwrap().l2();
        if r.iter().zip(&first).all(|(r, f)| *r <= tolerance * f) {
            let mut state = mg.download().unwrap();
            problem.reference_pressure(&mut state);
            return state;
        }
    }
    panic!("not converged in 400 cycles");
}

#[test]
fn skew_symmetric_convection_is_second_order_with_energy() {
    let mms = Manufactured::with_energy(2);
    let mut previous: Option<(f64, Vec<(f64, f64)>)> = None;
    for n in [17, 33, 65] {
        let problem = mms
            .problem::<f64>(n, numerics(Convection::SkewSymmetric))
            .unwrap();
        let errors = mms.errors(&problem, &converge(&problem, 1e-12));
        let h = 1.0 / (n - 1) as f64;
        if let Some((hc, coarse)) = &previous {
            for (v, ((fine, _), (coarse, _))) in errors.iter().zip(coarse).enumerate() {
                let order = observed_order(*coarse, *fine, *hc, h);
                println!("n = {n}, variable {v}: L2 {fine:e}, order {order:.3}");
                if n == 65 {
                    assert!((order - 2.0).abs() <= 0.1, "variable {v}: order {order}");
                }
            }
        }
        previous = Some((h, errors));
    }
}

/// Centrelines of the Re = 1000 cavity on `n`² nodes.
fn cavity(n: usize, convection: Convection) -> (Line, Line) {
    let problem = lid_driven::<f64>(2, [n, n, 1], 1000.0, 1.0, numerics(convection)).unwrap();
    centrelines(&problem, &converge(&problem, 1e-10))
}

/// The largest difference between `coarse` and the Richardson extrapolation (order 2) of
/// `fine` and `finer`, at the coarse nodes (each grid has every other node of the next).
fn from_extrapolated(coarse: &Line, fine: &Line, finer: &Line) -> f64 {
    let (s, t) = (
        (fine.len() - 1) / (coarse.len() - 1),
        (finer.len() - 1) / (coarse.len() - 1),
    );
    (coarse.iter().enumerate())
        .map(|(i, (_, c))| {
            let (f, g) = (fine[i * s].1, finer[i * t].1);
            (c - (g + (g - f) / 3.0)).abs()
        })
        .fold(0.0, f64::max)
}

/// Against the extrapolation of the advective form's 129² and 257² answers (its own error
/// about 1e-3, a fiftieth of the differences measured): on 65² the advective centrelines are
/// 0.109 (u) and 0.125 (v) from it, the skew-symmetric ones 0.057 and 0.067 (2026-11-24); the
/// full study, against 1025² and 2049², is in BENCHMARKS.md.
#[test]
fn skew_symmetric_centrelines_are_closer_to_the_grid_converged_ones() {
    let (fine, finer) = (
        cavity(129, Convection::Advective),
        cavity(257, Convection::Advective),
    );
    let deviation = |convection| {
        let (u, v) = cavity(65, convection);
        [
            from_extrapolated(&u, &fine.0, &finer.0),
            from_extrapolated(&v, &fine.1, &finer.1),
        ]
    };
    let (advective, skew) = (
        deviation(Convection::Advective),
        deviation(Convection::SkewSymmetric),
    );
    println!("65², largest deviation of u and v: advective {advective:?}, skew {skew:?}");
    for p in 0..2 {
        assert!(
            skew[p] < 0.7 * advective[p],
            "profile {p}: skew-symmetric {} against advective {}",
            skew[p],
            advective[p]
        );
    }
}
