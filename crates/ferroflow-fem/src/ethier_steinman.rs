//! The Ethier–Steinman exact unsteady solution of the 3D Navier–Stokes equations (Ethier &
//! Steinman 1994, a = π/4, d = π/2, on [−1, 1]³), and the grid-convergence study of the
//! fractional-step solver against it ([`study`]): Dirichlet velocity from the exact solution
//! on the whole boundary, the pressure fixed at one node, errors at the end time in the
//! lumped-mass L2 norm (pressure less its mean), computed in f64 from the state widened
//! whatever the working precision `R` of the run.
use crate::fractional::{Controls, Fluid, FractionalStep, StepReport};
use crate::sum::sums;
use ferroflow_core::Real;
use ferroflow_mesh::generate::{box_mesh, BoxCells};
use ferroflow_mesh::MeshError;
use std::f64::consts::PI;

/// a of the solution.
pub const A: f64 = PI / 4.0;
/// d of the solution.
pub const D: f64 = PI / 2.0;

/// Velocity at `x`, time `t`, viscosity `nu`.
pub fn velocity(x: [f64; 3], t: f64, nu: f64) -> [f64; 3] {
    let [x, y, z] = x;
    let decay = (-nu * D * D * t).exp();
    [
        -A * ((A * x).exp() * (A * y + D * z).sin() + (A * z).exp() * (A * x + D * y).cos()),
        -A * ((A * y).exp() * (A * z + D * x).sin() + (A * x).exp() * (A * y + D * z).cos()),
        -A * ((A * z).exp() * (A * x + D * y).sin() + (A * y).exp() * (A * z + D * x).cos()),
    ]
    .map(|v| v * decay)
}

/// Pressure (density 1) at `x`, time `t`, viscosity `nu`; note the leading minus sign.
pub fn pressure(x: [f64; 3], t: f64, nu: f64) -> f64 {
    let [x, y, z] = x;
    let decay = (-2.0 * nu * D * D * t).exp();
    -A * A / 2.0
        * ((2.0 * A * x).exp()
            + (2.0 * A * y).exp()
            + (2.0 * A * z).exp()
            + 2.0 * (A * x + D * y).sin() * (A * z + D * x).cos() * (A * (y + z)).exp()
            + 2.0 * (A * y + D * z).sin() * (A * x + D * y).cos() * (A * (z + x)).exp()
            + 2.0 * (A * z + D * x).sin() * (A * y + D * z).cos() * (A * (x + y)).exp())
        * decay
}

/// One grid's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LevelResult {
    /// Cells per axis of the hexahedra split into six tetrahedra.
    pub cells: usize,
    /// Nodes.
    pub nodes: usize,
    /// Time steps taken.
    pub steps: usize,
    /// L2 error of the velocity at the end time.
    pub velocity: f64,
    /// L2 error of the pressure (each less its mean).
    pub pressure: f64,
    /// Mean CG iterations per step.
    pub cg_iterations: f64,
    /// Largest RMS discrete divergence after a step.
    pub divergence: f64,
    /// Largest RMS residual of the stabilised continuity equation after a step
    /// ([`StepReport::continuity`]).
    pub continuity: f64,
}

/// The solver at t = 0 (viscosity `nu`) on the Kuhn-split cube of `cells` cells per axis,
/// velocity held at the whole boundary, the pressure's level at the first boundary node; the
/// nodes' coordinates.
pub fn solver<R: Real>(
    cells: usize,
    nu: f64,
    controls: Controls,
) -> Result<(FractionalStep<R>, Vec<[f64; 3]>), MeshError> {
    let mut mesh = box_mesh(BoxCells::Tet6, [cells; 3], [2.0; 3])?;
    mesh.nodes
        .iter_mut()
        .for_each(|x| x.iter_mut().for_each(|c| *c -= 1.0));
    let n = mesh.nodes.len();
    let mut fixed = vec![false; n];
    for (_, nodes) in mesh.faces.iter() {
        nodes.iter().for_each(|&i| fixed[i as usize] = true);
    }
    // The pressure's level: held at the first boundary node.
    let mut fixed_p = vec![false; n];
    fixed_p[fixed.iter().position(|&f| f).unwrap_or(0)] = true;
    let u = (mesh.nodes.iter())
        .map(|&x| velocity(x, 0.0, nu).map(R::of))
        .collect();
    let p = (mesh.nodes.iter())
        .map(|&x| R::of(pressure(x, 0.0, nu)))
        .collect();
    let fluid = Fluid {
        viscosity: nu,
        density: 1.0,
    };
    let solver = FractionalStep::new(&mesh, fluid, controls, fixed, fixed_p, u, p)?;
    Ok((solver, mesh.nodes))
}

/// Runs the solution from t = 0 to `end` (viscosity `nu`) on the Kuhn-split cube of `cells`
/// cells per axis, in precision `R`.
pub fn run<R: Real>(
    cells: usize,
    nu: f64,
    end: f64,
    controls: Controls,
) -> Result<LevelResult, MeshError> {
    let (mut solver, nodes) = solver::<R>(cells, nu, controls)?;
    let n = nodes.len();
    let boundary = |i: usize, t: f64| velocity(nodes[i], t, nu);
    let (mut t, mut steps, mut cg) = (0.0, 0, 0);
    let (mut divergence, mut continuity) = (0.0f64, 0.0f64);
    // Equal steps that end at `end`, none above the stability estimate of the start.
    let count = (end / solver.time_step()).ceil().max(1.0) as usize;
    let dt = end / count as f64;
    while steps < count {
        let StepReport {
            pressure,
            divergence: d,
            continuity: c,
        } = solver.step(dt, t, &boundary);
        t += dt;
        steps += 1;
        cg += pressure.iterations;
        divergence = divergence.max(d);
        continuity = continuity.max(c);
    }
    let [eu, ep] = errors(&nodes, &solver, end, nu);
    Ok(LevelResult {
        cells,
        nodes: n,
        steps,
        velocity: eu,
        pressure: ep,
        cg_iterations: cg as f64 / steps as f64,
        divergence,
        continuity,
    })
}

/// The lumped-mass L2 errors of the velocity and the pressure (each less its mean) of
/// `solver`'s state on the nodes at `x` against the solution at time `t`, viscosity `nu`.
pub fn errors<R: Real>(x: &[[f64; 3]], solver: &FractionalStep<R>, t: f64, nu: f64) -> [f64; 2] {
    let m: Vec<f64> = solver.operators().lumped.iter().map(|m| m.f64()).collect();
    let (u, p) = (&solver.u, &solver.p);
    let exact_p: Vec<f64> = x.iter().map(|&x| pressure(x, t, nu)).collect();
    let n = x.len();
    let [volume, mean_p, mean_e] = sums(n, |i| [m[i], m[i] * p[i].f64(), m[i] * exact_p[i]]);
    let [eu, ep] = sums(n, |i| {
        let e = velocity(x[i], t, nu);
        let du: f64 = (0..3).map(|c| (u[i][c].f64() - e[c]).powi(2)).sum();
        let dp = (p[i].f64() - mean_p / volume) - (exact_p[i] - mean_e / volume);
        [m[i] * du, m[i] * dp * dp]
    });
    [eu.sqrt(), ep.sqrt()]
}

/// [`run`] in precision `R` on each of `levels` (cells per axis), with `controls`.
pub fn study<R: Real>(
    levels: &[usize],
    nu: f64,
    end: f64,
    controls: Controls,
) -> Result<Vec<LevelResult>, MeshError> {
    levels
        .iter()
        .map(|&c| run::<R>(c, nu, end, controls))
        .collect()
}

/// Observed order of `error` between two grids of `coarse` and `fine` cells per axis.
pub fn order(coarse: (usize, f64), fine: (usize, f64)) -> f64 {
    (coarse.1 / fine.1).ln() / (fine.0 as f64 / coarse.0 as f64).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_solution_is_divergence_free_and_solves_the_momentum_equation() {
        // Central differences of the exact fields at a point.
        let (nu, t, x, h) = (0.7, 0.05, [0.3, -0.4, 0.2], 1e-4);
        let at = |dx: [f64; 3]| [x[0] + dx[0], x[1] + dx[1], x[2] + dx[2]];
        let e = |a: usize| {
            let mut v = [0.0; 3];
            v[a] = h;
            v
        };
        let du = |a: usize| {
            let (p, m) = (
                velocity(at(e(a)), t, nu),
                velocity(at(e(a).map(|c| -c)), t, nu),
            );
            [0, 1, 2].map(|c| (p[c] - m[c]) / (2.0 * h))
        };
        let div: f64 = (0..3).map(|a| du(a)[a]).sum();
        assert!(div.abs() < 1e-7, "{div}");
        let u = velocity(x, t, nu);
        let dudt = {
            let (p, m) = (velocity(x, t + h, nu), velocity(x, t - h, nu));
            [0, 1, 2].map(|c| (p[c] - m[c]) / (2.0 * h))
        };
        for c in 0..3 {
            let conv: f64 = (0..3).map(|a| u[a] * du(a)[c]).sum();
            let lap: f64 = (0..3)
                .map(|a| {
                    let (p, m) = (
                        velocity(at(e(a)), t, nu),
                        velocity(at(e(a).map(|c| -c)), t, nu),
                    );
                    (p[c] - 2.0 * u[c] + m[c]) / (h * h)
                })
                .sum();
            let dp =
                (pressure(at(e(c)), t, nu) - pressure(at(e(c).map(|v| -v)), t, nu)) / (2.0 * h);
            let residual = dudt[c] + conv + dp - nu * lap;
            assert!(residual.abs() < 1e-5, "component {c}: {residual}");
        }
    }

    #[test]
    fn errors_fall_at_second_order_for_velocity_and_first_for_pressure() {
        // Four grids in a second; `ferroflow verify ethier-steinman` runs finer ones.
        let r = study::<f64>(&[4, 8, 12, 16], 1.0, 0.1, Controls::default()).unwrap();
        for l in &r {
            println!("{l:?}");
        }
        let ou = order((r[2].cells, r[2].velocity), (r[3].cells, r[3].velocity));
        let op = order((r[2].cells, r[2].pressure), (r[3].cells, r[3].pressure));
        println!("orders: velocity {ou:.2}, pressure {op:.2}");
        assert!(ou >= 1.8, "velocity order {ou}");
        assert!(op >= 1.0, "pressure order {op}");
    }

    #[test]
    fn the_continuity_residual_after_the_projection_tracks_the_cg_tolerance() {
        // Each two decades of tolerance take the residual of the stabilised continuity
        // equation down by at least one; the nodal divergence M⁻¹ D u stays at the
        // approximate projection's level, which the mesh sets.
        let at = |cg_tolerance: f64| {
            let controls = Controls {
                cg_tolerance,
                ..Controls::default()
            };
            run::<f64>(6, 1.0, 0.02, controls).unwrap()
        };
        let runs: Vec<LevelResult> = [1e-2, 1e-4, 1e-6, 1e-8].into_iter().map(at).collect();
        for pair in runs.windows(2) {
            let [loose, tight] = [pair[0], pair[1]];
            assert!(
                tight.continuity < 0.1 * loose.continuity,
                "{loose:?} then {tight:?}"
            );
            assert!(tight.cg_iterations > loose.cg_iterations);
        }
        let divergence = runs.iter().map(|r| r.divergence);
        let (lo, hi) = divergence.fold((f64::INFINITY, 0.0f64), |(a, b), d| (a.min(d), b.max(d)));
        assert!(hi < 1.5 * lo, "{runs:?}");
    }

    /// A run in precision `R` with `controls` on 1 and 3 threads: the same bits. 14³ cells:
    /// 3,375 nodes, more than one task's rows (`MIN_ROWS`) and four blocks of a sum.
    fn same_bits_on_any_thread_count<R: Real>(controls: Controls) {
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| run::<R>(14, 1.0, 0.02, controls).unwrap())
        };
        let (one, three) = (on(1), on(3));
        assert_eq!(one.velocity.to_bits(), three.velocity.to_bits());
        assert_eq!(one.pressure.to_bits(), three.pressure.to_bits());
        assert_eq!(one.cg_iterations, three.cg_iterations);
    }

    #[test]
    fn a_run_has_the_same_bits_on_any_thread_count() {
        same_bits_on_any_thread_count::<f64>(Controls::default());
        same_bits_on_any_thread_count::<f32>(f32_controls());
    }

    /// An f32 run's controls: the CG tolerance above f32's round-off.
    fn f32_controls() -> Controls {
        Controls {
            cg_tolerance: 1e-5,
            ..Controls::default()
        }
    }

    #[test]
    fn f32_errors_are_the_f64_ones_down_to_its_round_off() {
        // On these grids the discretisation error (1e-2 and up) dwarfs f32's round-off: the
        // errors agree to 1e-4 and the orders hold. Round-off shows in the continuity
        // residual, which stops near 1e-6 in f32 (1e-12 in f64).
        let levels = [4, 8, 12, 16];
        let single = study::<f32>(&levels, 1.0, 0.1, f32_controls()).unwrap();
        let double = study::<f64>(&levels, 1.0, 0.1, Controls::default()).unwrap();
        for (s, d) in single.iter().zip(&double) {
            println!("f32 {s:?}\nf64 {d:?}");
            assert!(s.continuity < 1e-5 && s.continuity > 1e-8, "{s:?}");
            // 4³: steps of dt_max, 0.01, which rounds down in f32: 11 steps instead of 10.
            if s.cells == 4 {
                assert_eq!((s.steps, d.steps), (11, 10));
                continue;
            }
            assert_eq!(s.steps, d.steps);
            for (a, b) in [(s.velocity, d.velocity), (s.pressure, d.pressure)] {
                assert!((a - b).abs() < 1e-4 * b, "{s:?} against {d:?}");
            }
        }
        let [_, _, c, f] = [0, 1, 2, 3].map(|k| single[k]);
        let ou = order((c.cells, c.velocity), (f.cells, f.velocity));
        let op = order((c.cells, c.pressure), (f.cells, f.pressure));
        assert!(ou >= 1.8 && op >= 1.0, "orders {ou} {op}");
    }
}
