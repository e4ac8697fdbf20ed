//! The DFG 3D laminar benchmark 3D-1Z (Schäfer & Turek 1996): steady flow at Re = 20 through
//! the channel [0, 2.5] × [0, 0.41]² m around a cylinder of diameter D = 0.1 m spanning z,
//! axis at (x, y) = (0.5, 0.2); ν = 1e-3 m²/s, ρ = 1; inflow U(0, y, z) = 16 U_m y z (H − y)
//! (H − z) / H⁴ with U_m = 0.45 m/s, H = 0.41 m; no slip on the walls and the cylinder;
//! the pressure held at zero on the outlet, whose velocity is free. The forces on the cylinder
//! are integrated over its faces, σ = −p I + ρν (∇u + ∇uᵀ) with ∇u of each face's
//! tetrahedron and p the mean of its nodes, and made coefficients with the mean inflow speed
//! Ū = 4 U_m / 9 = 0.2 m/s: c = 2 F / (ρ Ū² D H). The mesh comes from a file (the patches
//! inlet, outlet, walls, cylinder of `crates/ferroflow-mesh/geo/dfg-channel.geo`).
use crate::edges::tet_gradients;
use crate::fractional::{Controls, Fluid, FractionalStep, March};
use ferroflow_mesh::topology::{self, points};
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
    let p = mesh.patches.iter().position(|n| n == name).ok_or_else(|| {
        MeshError::Invalid(format!(
            "no patch \"{name}\" (the mesh has {:?}): the DFG channel needs inlet, outlet, \
             walls and cylinder",
            mesh.patches
        ))
    })?;
    let mut on = vec![false; mesh.nodes.len()];
    for (f, (_, nodes)) in mesh.faces.iter().enumerate() {
        if mesh.face_patch[f] as usize == p {
            nodes.iter().for_each(|&n| on[n as usize] = true);
        }
    }
    Ok(on)
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
    let controls = Controls::default();
    let mut solver = FractionalStep::new(mesh, fluid, controls, fixed, outlet, u, vec![0.0; n])?;
    let boundary = move |i: usize, _: f64| held(i);
    let march = solver.march(tolerance, end, &boundary);
    let [fx, fy, _] = force(mesh, &solver, &cylinder)?;
    let scale = 2.0 / ((4.0 * U_MAX / 9.0).powi(2) * D * H);
    Ok(Forces {
        size: [n, mesh.cells.len()],
        march,
        drag: fx * scale,
        lift: fy * scale,
    })
}

/// The force of the fluid on the boundary faces all of whose nodes `on` marks: Σ σ·n A over
/// them, n pointing into the fluid.
fn force(mesh: &Mesh, s: &FractionalStep, on: &[bool]) -> Result<[f64; 3], MeshError> {
    let faces = topology::faces(mesh)?;
    let rho_nu = NU;
    let mut total = [0.0; 3];
    for f in faces.internal..faces.cells.len() {
        let face = faces.nodes.nodes(f);
        if !face.iter().all(|&i| on[i as usize]) {
            continue;
        }
        let cell = faces.cells[f][0] as usize;
        let cell_nodes = mesh.cells.nodes(cell);
        let x = points(mesh, cell_nodes);
        let (_, g) = tet_gradients(&[x[0], x[1], x[2], x[3]]);
        // ∇u_ab = ∂u_a/∂x_b in the tetrahedron.
        let mut grad = [[0.0; 3]; 3];
        for (k, &node) in cell_nodes.iter().enumerate() {
            for a in 0..3 {
                for b in 0..3 {
                    grad[a][b] += s.u[node as usize][a] * g[k][b];
                }
            }
        }
        let p = face.iter().map(|&i| s.p[i as usize]).sum::<f64>() / face.len() as f64;
        // The face's area vector points out of the fluid; the body's normal is its opposite.
        let (area, _) = topology::face_geometry(&points(mesh, face));
        let n = area.map(|c| -c);
        for a in 0..3 {
            let viscous: f64 = (0..3).map(|b| (grad[a][b] + grad[b][a]) * n[b]).sum();
            total[a] += -p * n[a] + rho_nu * viscous;
        }
    }
    Ok(total)
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
