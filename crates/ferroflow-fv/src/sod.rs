//! Sod's shock tube on a slab of n × 2 × 2 hexahedra (or their prisms or tetrahedra): left
//! (ρ, u, p) = (1, 0, 1), right (0.125, 0, 0.1), γ = 1.4, diaphragm at x = 0.5, slip walls
//! all round, marched to t = 0.2; the L1 error in density against the exact solution and
//! how well mass, momentum and energy are conserved.
use crate::boundary::Boundary;
use crate::flux::Limiter;
use crate::gas::{Cons, Gas};
use crate::residual::Solver;
use crate::riemann::Riemann;
use crate::time::unsteady;
use ferroflow_mesh::generate::{box_mesh, BoxCells, SIDES};
use ferroflow_mesh::MeshError;

/// End time.
pub const END: f64 = 0.2;

/// CFL number of the time step CFL Ω / Σ_f λ_f A_f (a cube's six faces make it about a
/// sixth of the 1D Courant number: 0.3 here).
pub const CFL: f64 = 1.8;

/// What a run gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Sod {
    /// Cells of the mesh.
    pub cells: usize,
    /// Time steps.
    pub steps: usize,
    /// Σ Ω |ρ − ρ_exact(x_c)| / Σ Ω at t = 0.2.
    pub l1: f64,
    /// For mass, the three momenta and energy: |change of the total + what left through
    /// the walls|, over the initial total (mass, energy) or the final Σ Ω |ρV| (momenta).
    pub conservation: [f64; 5],
}

/// Sod's problem on `n` × 2 × 2 hexahedra filled as `cells`.
pub fn run(cells: BoxCells, n: usize) -> Result<Sod, MeshError> {
    let h = 1.0 / n as f64;
    let mesh = box_mesh(cells, [n, 2, 2], [1.0, 2.0 * h, 2.0 * h])?;
    let walls = SIDES.map(|s| (s, Boundary::SlipWall));
    let gas = Gas::AIR;
    let mut s = Solver::new(&mesh, gas, Limiter::VanAlbada, &walls)?;
    let (left, right) = ([1.0, 0.0, 1.0], [0.125, 0.0, 0.1]);
    let mut u = s.sample(|x| {
        let [rho, v, p] = if x[0] < 0.5 { left } else { right };
        [rho, v, 0.0, 0.0, p]
    });
    let before = s.totals(&u);
    let run = unsteady(&mut s, &mut u, (0.0, END), CFL);
    let after = s.totals(&u);
    let exact = Riemann::new(gas.gamma, left, right);
    let g = &s.geometry;
    let momentum: f64 = (u.iter().zip(&g.volume))
        .map(|(u, v)| v * (u[1].abs() + u[2].abs() + u[3].abs()))
        .sum();
    let conservation = std::array::from_fn(|v| {
        let scale = if v == 0 || v == 4 {
            before[v]
        } else {
            momentum
        };
        (after[v] - before[v] + run.outflow[v]).abs() / scale
    });
    Ok(Sod {
        cells: g.cells,
        steps: run.steps,
        l1: l1_density(&s, &u, &exact, (0.5, END)),
        conservation,
    })
}

/// Σ Ω |ρ − ρ_exact(x_c)| / Σ Ω of the state `u` of `s`: the L1 error in density against the
/// shock tube `exact` whose diaphragm at x = `at` opened `t` > 0 ago.
pub fn l1_density(s: &Solver, u: &[Cons], exact: &Riemann, (at, t): (f64, f64)) -> f64 {
    let g = &s.geometry;
    let mut l1 = 0.0;
    for (c, u) in u.iter().enumerate() {
        let x = g.centroid[c][0];
        l1 += g.volume[c] * (u[0] - exact.sample((x - at) / t)[0]).abs();
    }
    let volume: f64 = g.volume.iter().sum();
    l1 / volume
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Acceptance at n = 100 on each kind of cell (the n = 200 meshes in `ferroflow verify
    /// sod`).
    #[test]
    fn sod_at_100_cells_meets_its_l1_bounds_and_conserves() {
        for (cells, bound) in [
            (BoxCells::Hex, 0.0062),
            (BoxCells::Prism, 0.0089),
            (BoxCells::Tet6, 0.0089),
        ] {
            let r = run(cells, 100).unwrap();
            assert!(r.l1 <= bound, "{cells:?}: L1 {} above {bound}", r.l1);
            assert!(
                r.conservation.iter().all(|&e| e < 1e-12),
                "{cells:?}: {:?}",
                r.conservation
            );
        }
    }
}
