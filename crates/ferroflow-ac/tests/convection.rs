//! The forms of the convective terms (`Numerics::convection`) and the orders of the
//! differences (`Numerics::differences`), each converged by multigrid: the skew-symmetric form
//! is second order on a manufactured solution with energy, fourth-order differences at least
//! second order there, and the 2D cavity centrelines at Re = 1000 of both are closer to the
//! grid-converged ones than seed 000's scheme's (advective, second order).
use ferroflow_ac::multigrid::Fas;
use ferroflow_ac::{Convection, Differences, Implicit, Method, Multigrid, Numerics, Problem};
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

/// Fourth-order differences (advective convection) with their default dissipation, 0.01.
fn fourth() -> Numerics {
    Numerics {
        differences: Differences::Fourth,
        c4: 0.01,
        ..numerics(Convection::Advective)
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

/// The observed orders of every variable of the manufactured solution with energy (`dim`D)
/// between the last two of `sizes`, converged with `numerics`.
fn orders(dim: usize, sizes: &[usize], numerics: Numerics) -> Vec<f64> {
    let mms = Manufactured::with_energy(dim);
    let mut previous: Option<(f64, Vec<(f64, f64)>)> = None;
    let mut orders = Vec::new();
    for &n in sizes {
        let problem = mms.problem::<f64>(n, numerics).unwrap();
        let errors = mms.errors(&problem, &converge(&problem, 1e-12));
        let h = 1.0 / (n - 1) as f64;
        if let Some((hc, coarse)) = &previous {
            orders.clear();
            for (v, ((fine, _), (coarse, _))) in errors.iter().zip(coarse).enumerate() {
                let order = observed_order(*coarse, *fine, *hc, h);
                println!("{dim}D n = {n}, variable {v}: L2 {fine:e}, order {order:.3}");
                orders.push(order);
            }
        }
        previous = Some((h, errors));
    }
    orders
}

#[test]
fn skew_symmetric_convection_is_second_order_with_energy() {
    for (v, order) in orders(2, &[17, 33, 65], numerics(Convection::SkewSymmetric))
        .into_iter()
        .enumerate()
    {
        assert!((order - 2.0).abs() <= 0.1, "variable {v}: order {order}");
    }
}

/// Fourth-order differences keep (at least) second order, 2D and 3D with energy: the walls'
/// closures (quadratic wall pressure, cubic ghosts) and the pressure dissipation are of lower
/// order than the interior differences.
#[test]
fn fourth_order_differences_are_at_least_second_order_with_energy() {
    for (dim, sizes) in [(2, &[17, 33, 65][..]), (3, &[9, 17, 33][..])] {
        for (v, order) in orders(dim, sizes, fourth()).into_iter().enumerate() {
            assert!(order >= 1.9, "{dim}D variable {v}: order {order}");
        }
    }
}

/// Centrelines of the Re = 1000 cavity on `n`² nodes.
fn cavity(n: usize, numerics: Numerics) -> (Line, Line) {
    let problem = lid_driven::<f64>(2, [n, n, 1], 1000.0, 1.0, numerics).unwrap();
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
/// 0.109 (u) and 0.125 (v) from it, the skew-symmetric ones 0.057 and 0.067 (2026-11-24), the
/// fourth-order ones 0.060 and 0.071 (2026-11-27: 65² is too coarse for their order to show;
/// 2.9x closer on 129², 14–18x on 257²); the full study, against 1025² and 2049², is in
/// BENCHMARKS.md.
#[test]
fn skew_symmetric_and_fourth_order_centrelines_are_closer_to_the_grid_converged_ones() {
    let (fine, finer) = (
        cavity(129, numerics(Convection::Advective)),
        cavity(257, numerics(Convection::Advective)),
    );
    let deviation = |numerics| {
        let (u, v) = cavity(65, numerics);
        [
            from_extrapolated(&u, &fine.0, &finer.0),
            from_extrapolated(&v, &fine.1, &finer.1),
        ]
    };
    let (advective, skew, fourth) = (
        deviation(numerics(Convection::Advective)),
        deviation(numerics(Convection::SkewSymmetric)),
        deviation(fourth()),
    );
    println!(
        "65², largest deviation of u and v: advective {advective:?}, skew {skew:?}, fourth \
         order {fourth:?}"
    );
    for p in 0..2 {
        assert!(
            skew[p] < 0.7 * advective[p],
            "profile {p}: skew-symmetric {} against advective {}",
            skew[p],
            advective[p]
        );
        assert!(
            fourth[p] < 0.6 * advective[p],
            "profile {p}: fourth order {} against advective {}",
            fourth[p],
            advective[p]
        );
    }
}
