//! The DFG 3D laminar benchmark 3D-1Z (Schäfer & Turek 1996): steady flow at Re = 20 through
//! the channel [0, 2.5] × [0, 0.41]² m around a cylinder of diameter D = 0.1 m spanning z,
//! axis at (x, y) = (0.5, 0.2); ν = 1e-3 m²/s, ρ = 1; inflow U(0, y, z) = 16 U_m y z (H − y)
//! (H − z) / H⁴ with U_m = 0.45 m/s, H = 0.41 m; no slip on the walls and the cylinder;
//! the pressure held at zero on the outlet, whose velocity is free. The march takes local time
//! steps ([`Controls::local_time_steps`]): the smallest cells, at the cylinder, would
//! otherwise set every node's step. They may reach [`DT_MAX`], five times the default cap:
//! the steady state does not depend on the steps (`crate::fractional`), and the channel's
//! coarse cells, capped at 0.01 s, set how many steps the flow takes to pass through (on the
//! coarsest mesh 384 steps instead of 1,228, c_D equal to 1e-6).
//!
//! The force on the cylinder is the reaction of its no-slip nodes in the discrete momentum
//! equations (the consistent, residual form; surface integrals of each tetrahedron's constant
//! gradient are first order): with the weak forms, the momentum equation tested by N_I is
//! ∫ N_I ρ (∂u/∂t + u·∇u) − ∫ p ∇N_I + ρν ∫ ∇N_I·∇u = ∮ N_I σ·n, n out of the fluid, and the
//! N_I of the cylinder's nodes add up to one on it, so at a steady state F = −Σ_I [ρν Σ_J L_IJ
//! (u_J − u_I) − Σ_J (G_IJ p_J − ∇_IJ p_I)] over those nodes (convection and stabilisation
//! vanish there with u_I = 0; ν ∇u in place of ν (∇u + ∇uᵀ) gives the same force on a no-slip
//! body). It is made a coefficient with the mean inflow speed Ū = 4 U_m / 9 = 0.2 m/s: c = 2 F
//! / (ρ Ū² D H). The mesh comes from a file (the patches inlet, outlet, walls, cylinder of
//! `crates/ferroflow-mesh/geo/dfg-channel.geo`).
use crate::fractional::{Controls, Fluid, FractionalStep, March};
use ferroflow_core::Real;
use ferroflow_mesh::{Mesh, MeshError};

/// Channel height and width H (m).
pub const H: f64 = 0.41;
/// Cylinder diameter D (m).
pub const D: f64 = 0.1;
/// Largest inflow speed U_m (m/s).
pub const U_MAX: f64 = 0.45;
/// Kinematic viscosity (m²/s).
pub const NU: f64 = 1e-3;
/// Schäfer & Turek's (1996) reference intervals for 3D-1Z: drag and lift coefficients.
pub const DRAG_RANGE: [f64; 2] = [6.05, 6.25];
/// Lift coefficient's reference interval.
pub const LIFT_RANGE: [f64; 2] = [0.008, 0.010];
/// Largest local time step of the march (s).
pub const DT_MAX: f64 = 0.05;

/// The inflow velocity at `x`.
pub fn inflow(x: [f64; 3]) -> [f64; 3] {
    let [_, y, z] = x;
    [
        16.0 * U_MAX * y * z * (H - y) * (H - z) / H.powi(4),
        0.0,
        0.0,
    ]
}

/// A steady run's outcome.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Forces {
    /// Nodes and cells of the mesh.
    pub size: [usize; 2],
    /// How the march ended (times in s).
    pub march: March,
    /// Drag coefficient.
    pub drag: f64,
    /// Lift coefficient (along y).
    pub lift: f64,
}

/// The nodes of the patch named `name` (an error names a missing patch).
fn patch_nodes(mesh: &Mesh, name: &str) -> Result<Vec<bool>, MeshError> {
    nodes_of_patch(mesh, name).ok_or_else(|| {
        MeshError::Invalid(format!(
            "no patch \"{name}\" (the mesh has {:?}): the DFG channel needs inlet, outlet, \
             walls and cylinder",
            mesh.patches
        ))
    })
}

/// Which nodes lie on the patch named `name`; `None` if the mesh has no such patch.
pub fn nodes_of_patch(mesh: &Mesh, name: &str) -> Option<Vec<bool>> {
    let p = mesh.patches.iter().position(|n| n == name)?;
    let mut on = vec![false; mesh.nodes.len()];
    for (f, (_, nodes)) in mesh.faces.iter().enumerate() {
        if mesh.face_patch[f] as usize == p {
            nodes.iter().for_each(|&n| on[n as usize] = true);
        }
    }
    Some(on)
}

/// Marches the channel on `mesh` from rest until the largest |Δu| / Δt of a step is below
/// `tolerance` or the time reaches `end`, and integrates the forces on the cylinder.
pub fn run(mesh: &Mesh, tolerance: f64, end: f64) -> Result<Forces, MeshError> {
    let n = mesh.nodes.len();
    let [inlet, outlet, walls, cylinder] =
        ["inlet", "outlet", "walls", "cylinder"].map(|p| patch_nodes(mesh, p));
    let (inlet, outlet, walls, cylinder) = (inlet?, outlet?, walls?, cylinder?);
    let no_slip: Vec<bool> = (0..n).map(|i| walls[i] || cylinder[i]).collect();
    let fixed: Vec<bool> = (0..n).map(|i| no_slip[i] || inlet[i]).collect();
    let nodes = mesh.nodes.clone();
    let held = move |i: usize| {
        if no_slip[i] {
            [0.0; 3]
        } else {
            inflow(nodes[i])
        }
    };
    let u: Vec<[f64; 3]> = (0..n)
        .map(|i| if fixed[i] { held(i) } else { [0.0; 3] })
        .collect();
    let fluid = Fluid {
        viscosity: NU,
        density: 1.0,
    };
    let controls = Controls {
        local_time_steps: true,
        dt_max: DT_MAX,
        ..Controls::default()
    };
    let mut solver = FractionalStep::new(mesh, fluid, controls, fixed, outlet, u, vec![0.0; n])?;
    let boundary = move |i: usize, _: f64| held(i);
    let march = solver.march(tolerance, end, &boundary);
    let [fx, fy, _] = force(&solver, &cylinder, NU);
    let scale = 2.0 / ((4.0 * U_MAX / 9.0).powi(2) * D * H);
    Ok(Forces {
        size: [n, mesh.cells.len()],
        march,
        drag: fx * scale,
        lift: fy * scale,
    })
}

/// The force of the fluid on the no-slip nodes `on` marks, from their momentum equations'
/// residuals (see the module's comment); `viscosity` is ρν. Summed in f64 whatever the
/// precision `R` of the state.
pub fn force<R: Real>(s: &FractionalStep<R>, on: &[bool], viscosity: f64) -> [f64; 3] {
    let ops = s.operators();
    let (u, p) = (
        |i: usize, a: usize| s.u[i][a].f64(),
        |i: usize| s.p[i].f64(),
    );
    let mut total = [0.0; 3];
    for i in (0..ops.nodes()).filter(|&i| on[i]) {
        let (cols, terms) = ops.row(i);
        for (&j, e) in cols.iter().zip(terms) {
            let j = j as usize;
            let viscous = viscosity * e.laplacian_trace().f64();
            for a in 0..3 {
                let weak_p = e.dni_nj[a].f64() * p(j) - e.ni_dnj[a].f64() * p(i);
                total[a] -= viscous * (u(j, a) - u(i, a)) - weak_p;
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_mesh::generate::{box_mesh, BoxCells};

    #[test]
    fn the_inflow_peaks_at_u_max_and_averages_four_ninths_of_it() {
        assert!((inflow([0.0, H / 2.0, H / 2.0])[0] - U_MAX).abs() < 1e-15);
        // Simpson's rule is exact for the quadratic factors.
        let m = 200;
        let w = |i: usize| match i {
            0 => 1.0,
            i if i == m => 1.0,
            i if i % 2 == 1 => 4.0,
            _ => 2.0,
        };
        let h = H / m as f64;
        let mut mean = 0.0;
        for i in 0..=m {
            for j in 0..=m {
                let x = [0.0, i as f64 * h, j as f64 * h];
                mean += w(i) * w(j) * inflow(x)[0] * h * h / 9.0;
            }
        }
        mean /= H * H;
        assert!((mean - 4.0 * U_MAX / 9.0).abs() < 1e-12, "{mean}");
    }

    #[test]
    fn a_mesh_without_the_channel_patches_is_refused() {
        let mesh = box_mesh(BoxCells::Tet6, [2, 2, 2], [1.0; 3]).unwrap();
        let e = run(&mesh, 1e-3, 1.0).unwrap_err().to_string();
        assert!(e.contains("no patch \"inlet\""), "{e}");
    }
}
