//! Subsonic flow over a smooth bump in a channel, the inviscid case C1.1 of the High-Order
//! CFD workshops: x ∈ [−1.5, 1.5], a lower wall y = 0.0625 exp(−25 x²), an upper wall at
//! y = 0.8, inflow of total pressure and temperature (1, 1) along x, outflow at the static
//! pressure of Mach 0.5, slip walls. The flow is isentropic, so the entropy error
//! (s − s₀)/s₀ with s = p/ρ^γ measures the discretisation error alone; one layer of
//! n × n/3 hexahedra whose columns follow the bump, slip walls in z.
use crate::boundary::channel;
use crate::flux::Limiter;
use crate::gas::{Cons, Gas};
use crate::implicit::{steady_implicit, Implicit};
use crate::residual::Solver;
use crate::time::{steady, FOUR_STAGE};
use ferroflow_mesh::generate::{box_mesh, BoxCells};
use ferroflow_mesh::{Mesh, MeshError};
use std::time::Instant;

/// Length of the channel.
pub const LENGTH: f64 = 3.0;
/// Height of the channel.
pub const HEIGHT: f64 = 0.8;
/// Mach number of the free stream.
pub const MACH: f64 = 0.5;
/// Residual drop that counts as converged.
pub const DROP: f64 = 1e-10;
/// Courant number of the four-stage explicit scheme.
pub const EXPLICIT_CFL: f64 = 3.0;
/// Iterations after which a study's run stops unconverged.
pub const MAX_ITERATIONS: usize = 200_000;
/// How the implicit iteration runs.
pub const IMPLICIT: Implicit = Implicit {
    cfl: 1000.0,
    sweeps: 32,
};

/// The lower wall's height at `x`.
pub fn wall(x: f64) -> f64 {
    0.0625 * (-25.0 * x * x).exp()
}

/// Static pressure of the free stream (p0 = 1): p0/p = (1 + (γ − 1)/2 M²)^(γ/(γ − 1)).
pub fn pressure(gas: Gas) -> f64 {
    let g = gas.gamma;
    (1.0 + 0.5 * (g - 1.0) * MACH * MACH).powf(-g / (g - 1.0))
}

/// The channel's mesh: `n` hexahedra along x, n/3 across, one layer as thick as a cell is
/// long; patches as [`channel`] names them.
pub fn mesh(n: usize) -> Result<Mesh, MeshError> {
    mesh_of(BoxCells::Hex, n)
}

/// The channel's mesh of [`mesh`] with its hexahedra filled as `cells`.
pub fn mesh_of(cells: BoxCells, n: usize) -> Result<Mesh, MeshError> {
    let (nx, ny) = (n, (n / 3).max(1));
    let dx = LENGTH / nx as f64;
    let mut mesh = box_mesh(cells, [nx, ny, 1], [LENGTH, HEIGHT, dx])?;
    for x in &mut mesh.nodes {
        x[0] -= 0.5 * LENGTH;
        let floor = wall(x[0]);
        x[1] = floor + x[1] * (HEIGHT - floor) / HEIGHT;
    }
    Ok(mesh)
}

/// The channel with `n` cells along x and n/3 across, and the free stream in every cell.
pub fn setup(n: usize, limiter: Limiter) -> Result<(Solver, Vec<Cons>), MeshError> {
    solver(&mesh(n)?, limiter)
}

/// The channel's conditions on `mesh` (one of [`mesh_of`]'s), and the free stream in every
/// cell.
pub fn solver(mesh: &Mesh, limiter: Limiter) -> Result<(Solver, Vec<Cons>), MeshError> {
    let gas = Gas::AIR;
    let p = pressure(gas);
    let s = Solver::new(mesh, gas, limiter, &channel(p))?;
    let t = 1.0 / (1.0 + 0.5 * (gas.gamma - 1.0) * MACH * MACH);
    let speed = MACH * (gas.gamma * t).sqrt();
    let u = s.sample(|_| [p / t, speed, 0.0, 0.0, p]);
    Ok((s, u))
}

/// (Σ Ω ((s − s₀)/s₀)² / Σ Ω)^½ of the state `u`, s₀ = p0/ρ0^γ = 1.
pub fn entropy_error(s: &Solver, u: &[Cons]) -> f64 {
    let g = &s.geometry;
    let sum: f64 = (u.iter().zip(&g.volume))
        .map(|(u, v)| {
            let w = s.gas.prim(u);
            v * (w[4] / w[0].powf(s.gas.gamma) - 1.0).powi(2)
        })
        .sum();
    (sum / g.volume.iter().sum::<f64>()).sqrt()
}

/// What a run gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Bump {
    /// Cells along x.
    pub n: usize,
    /// Cells of the mesh.
    pub cells: usize,
    /// Iterations to a [`DROP`] of the implicit iteration, and its seconds.
    pub implicit: (usize, f64),
    /// Iterations to a [`DROP`] of the explicit scheme and its seconds, where it ran.
    pub explicit: Option<(usize, f64)>,
    /// Entropy error of the implicit iteration's state.
    pub entropy: f64,
}

/// The bump on `n` cells along x, converged by the implicit iteration and, where `explicit`,
/// by the four-stage scheme too; at most `max` iterations each.
pub fn run(n: usize, limiter: Limiter, explicit: bool, max: usize) -> Result<Bump, MeshError> {
    let (mut s, start) = setup(n, limiter)?;
    let mut u = start.clone();
    let clock = Instant::now();
    let implicit = steady_implicit(&mut s, &mut u, IMPLICIT, (DROP, max)).iterations;
    let implicit = (implicit, clock.elapsed().as_secs_f64());
    let explicit = explicit.then(|| {
        let (mut v, clock) = (start, Instant::now());
        let e = steady(&mut s, &mut v, EXPLICIT_CFL, &FOUR_STAGE, (DROP, max)).iterations;
        (e, clock.elapsed().as_secs_f64())
    });
    Ok(Bump {
        n,
        cells: s.geometry.cells,
        implicit,
        explicit,
        entropy: entropy_error(&s, &u),
    })
}

/// The order the entropy errors of two runs show, log(e₁/e₂) / log(n₂/n₁).
pub fn order(coarse: &Bump, fine: &Bump) -> f64 {
    (coarse.entropy / fine.entropy).ln() / (fine.n as f64 / coarse.n as f64).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mesh_follows_the_bump_and_the_free_stream_has_its_totals() {
        let (s, u) = setup(12, Limiter::None).unwrap();
        let volume: f64 = s.geometry.volume.iter().sum();
        // ∫ exp(−25 x²) over [−1.5, 1.5] is √π/5 to 1e-16; the walls are piecewise linear.
        let area = LENGTH * HEIGHT - 0.0625 * std::f64::consts::PI.sqrt() / 5.0;
        assert!(
            (volume / 0.25 - area).abs() < 2e-3,
            "{volume} against {area}"
        );
        let w = s.gas.prim(&u[0]);
        let factor = 1.0 + 0.2 * MACH * MACH;
        assert!((w[4] * factor.powf(3.5) - 1.0).abs() < 1e-14);
        assert!((w[4] / w[0] * factor - 1.0).abs() < 1e-14);
        assert!(entropy_error(&s, &u) < 1e-14);
    }

    /// The coarsest mesh of the study: 263 implicit iterations and an entropy error of
    /// 2.395e-3 when written.
    #[test]
    fn the_coarse_bump_converges_implicitly() {
        let b = run(24, Limiter::None, false, 400).unwrap();
        assert!(b.implicit.0 < 400 && b.entropy < 2.5e-3, "{b:?}");
    }

    /// `ferroflow verify bump`'s study on three small meshes, 12, 24 and 48 cells along: the
    /// implicit iteration in a tenth of the explicit scheme's iterations or fewer on 24 (263
    /// against 8,514 when written; on 12 it is 238 against 1,309), and the order still
    /// rising towards 2 (0.83, then 1.51): at least 1.4 on the finer pair, a looser bound
    /// than the 1.8 that `bump_study` asserts from 48 to 192.
    #[test]
    fn a_small_study() {
        let runs: Vec<Bump> = (([12, 24, 48].into_iter()).zip([false, true, false]))
            .map(|(n, explicit)| run(n, Limiter::None, explicit, 20_000).unwrap())
            .collect();
        for b in &runs {
            assert!(b.implicit.0 < 20_000, "{b:?}");
            if let Some((e, _)) = b.explicit {
                assert!(e < 20_000 && 10 * b.implicit.0 <= e, "{b:?}");
            }
        }
        let orders = [order(&runs[0], &runs[1]), order(&runs[1], &runs[2])];
        assert!(orders[0] < orders[1] && orders[1] >= 1.4, "{orders:?}");
    }

    /// The study of issue 21: entropy errors on four meshes, the order from 48 to 192 cells
    /// along x (three meshes) at least 1.8; iterations of the implicit iteration against the
    /// explicit scheme's on the two coarser ones, a tenth or fewer.
    #[test]
    #[ignore = "minutes in release: the explicit scheme needs tens of thousands of iterations"]
    fn bump_study() {
        let mut runs: Vec<Bump> = Vec::new();
        for (n, explicit) in [(24, true), (48, true), (96, false), (192, false)] {
            let b = run(n, Limiter::None, explicit, MAX_ITERATIONS).unwrap();
            let p = runs.last().map(|a| order(a, &b));
            println!(
                "n {:3} cells {:5} entropy {:.3e} order {p:?} implicit {:?} explicit {:?}",
                b.n, b.cells, b.entropy, b.implicit, b.explicit
            );
            assert!(b.implicit.0 < MAX_ITERATIONS, "{b:?}");
            if let Some((e, _)) = b.explicit {
                assert!(e < MAX_ITERATIONS && 10 * b.implicit.0 <= e, "{b:?}");
            }
            runs.push(b);
        }
        let p = order(&runs[1], &runs[3]);
        assert!(p >= 1.8, "order {p} from 48 to 192 cells");
    }
}
