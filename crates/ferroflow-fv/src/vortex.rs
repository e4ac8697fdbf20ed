//! The isentropic vortex (Yee et al.; β = 5) carried by the free stream (ρ, u, v, p) =
//! (1, 1, 1, 1) across the square [0, 10]² from (4, 4) to (6, 6) at t = 2, on one layer of
//! n × n hexahedra (or their prisms or tetrahedra) between slip walls in z, the exact
//! solution in the ghosts of the four sides; the density's L2 error at t = 2.
use crate::boundary::Boundary;
use crate::flux::Limiter;
use crate::gas::{Cons, Gas, Prim, Vec3};
use crate::residual::Solver;
use crate::time::unsteady;
use ferroflow_mesh::generate::{box_mesh, BoxCells};
use ferroflow_mesh::MeshError;
use std::f64::consts::PI;

/// Vortex strength.
pub const BETA: f64 = 5.0;
/// End time.
pub const END: f64 = 2.0;
/// Side of the square.
pub const SIDE: f64 = 10.0;
/// CFL number of the time step CFL Ω / Σ_f λ_f A_f.
pub const CFL: f64 = 1.8;

/// The exact solution at `x` and time `t`.
pub fn exact(x: Vec3, t: f64) -> Prim {
    let gamma = Gas::AIR.gamma;
    let (dx, dy) = (x[0] - 4.0 - t, x[1] - 4.0 - t);
    let e = (1.0 - dx * dx - dy * dy).exp();
    let rho =
        (1.0 - (gamma - 1.0) * BETA * BETA / (8.0 * gamma * PI * PI) * e).powf(1.0 / (gamma - 1.0));
    let swirl = BETA / (2.0 * PI) * e.sqrt();
    [
        rho,
        1.0 - swirl * dy,
        1.0 + swirl * dx,
        0.0,
        rho.powf(gamma),
    ]
}

/// What a run gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Vortex {
    /// Cells per side.
    pub n: usize,
    /// Cells of the mesh.
    pub cells: usize,
    /// Time steps.
    pub steps: usize,
    /// (Σ Ω (ρ − ρ_exact(x_c))² / Σ Ω)^½ at t = 2.
    pub l2: f64,
}

/// The solver on `n` × `n` × 1 hexahedra filled as `cells`, limited as `limiter` says, and
/// the vortex at t = 0.
pub fn setup(
    cells: BoxCells,
    n: usize,
    limiter: Limiter,
) -> Result<(Solver, Vec<Cons>), MeshError> {
    let h = SIDE / n as f64;
    let mesh = box_mesh(cells, [n, n, 1], [SIDE, SIDE, h])?;
    let known = Boundary::Exact(exact);
    let sides = [
        ("xmin", known),
        ("xmax", known),
        ("ymin", known),
        ("ymax", known),
        ("zmin", Boundary::SlipWall),
        ("zmax", Boundary::SlipWall),
    ];
    let s = Solver::new(&mesh, Gas::AIR, limiter, &sides)?;
    let u = s.sample(|x| exact(x, 0.0));
    Ok((s, u))
}

/// The vortex on `n` × `n` × 1 hexahedra filled as `cells`, limited as `limiter` says.
pub fn run(cells: BoxCells, n: usize, limiter: Limiter) -> Result<Vortex, MeshError> {
    let (mut s, mut u) = setup(cells, n, limiter)?;
    let steps = unsteady(&mut s, &mut u, (0.0, END), CFL).steps;
    let g = &s.geometry;
    let sum: f64 = (u.iter().enumerate())
        .map(|(c, u)| g.volume[c] * (u[0] - exact(g.centroid[c], END)[0]).powi(2))
        .sum();
    let volume: f64 = g.volume.iter().sum();
    Ok(Vortex {
        n,
        cells: g.cells,
        steps,
        l2: (sum / volume).sqrt(),
    })
}

/// The order the errors of two runs show, log(e₁/e₂) / log(n₂/n₁).
pub fn order(coarse: &Vortex, fine: &Vortex) -> f64 {
    (coarse.l2 / fine.l2).ln() / (fine.n as f64 / coarse.n as f64).ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exact_solution_is_isentropic_and_the_free_stream_far_away() {
        for x in [[4.3, 3.9, 0.0], [1.0, 9.0, 0.0]] {
            let w = exact(x, 0.0);
            assert!((w[4] / w[0].powf(1.4) - 1.0).abs() < 1e-14);
        }
        let far = exact([-20.0, 30.0, 0.0], 1.0);
        assert!((far[0] - 1.0).abs() < 1e-14 && (far[1] - 1.0).abs() < 1e-14);
        assert_eq!(exact([5.0, 5.0, 0.0], 1.0)[1], 1.0);
    }

    /// Hexahedra, unlimited, 16 and 32 cells per side: at least second order already.
    #[test]
    fn the_vortex_converges_at_second_order_on_coarse_hexahedra() {
        let a = run(BoxCells::Hex, 16, Limiter::None).unwrap();
        let b = run(BoxCells::Hex, 32, Limiter::None).unwrap();
        let p = order(&a, &b);
        assert!(p >= 1.9, "{} then {}: order {p}", a.l2, b.l2);
    }
}
