//! What a finite-volume run writes besides its history and checkpoint: the cell fields
//! (`fields.vtu`: density, velocity, pressure, temperature, Mach number), a surface table per
//! wall patch (`surface_<patch>.csv`: face centres, p, Cp and, on no-slip walls in viscous
//! flow, Cf) with the force on the patch, and the summary.
use ferroflow_cases::fem::{FemStatus, PatchForce, SolverKind};
use ferroflow_cases::fv::{FvCase, FvPatchKind, FvSetup, Scheme};
use ferroflow_fv::gas::{dot, velocity, Cons, Vec3};
use ferroflow_fv::riemann::Riemann;
use ferroflow_fv::viscous::face_flux;
use ferroflow_mesh::vtu::{self, Field};
use serde::Serialize;
use std::io;
use std::path::Path;

/// Writes the cells' density, velocity, pressure, temperature (p/ρ) and Mach number of
/// `setup`'s state as `.vtu` at `path`, in the mesh's numbering.
pub fn write_fields(setup: &FvSetup, compress: bool, path: &Path) -> io::Result<()> {
    let gas = setup.solver.gas;
    let n = setup.state.len();
    let (mut rho, mut v, mut p) = (Vec::with_capacity(n), Vec::with_capacity(3 * n), vec![]);
    let (mut t, mut mach) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for u in &setup.solver.to_user(&setup.state) {
        let w = gas.prim(u);
        let speed = dot(velocity(&w), velocity(&w)).sqrt();
        rho.push(w[0]);
        v.extend_from_slice(&velocity(&w));
        p.push(w[4]);
        t.push(w[4] / w[0]);
        mach.push(speed / gas.sound(&w));
    }
    let field = |name, components, values| Field {
        name,
        components,
        values,
    };
    let cells = [
        field("density", 1, &rho[..]),
        field("velocity", 3, &v[..]),
        field("pressure", 1, &p[..]),
        field("temperature", 1, &t[..]),
        field("mach", 1, &mach[..]),
    ];
    vtu::write(path, &setup.mesh, &[], &cells, compress)
}

/// A wall patch's faces as its surface table shows them, and the force on it.
pub struct Surface {
    /// The patch.
    pub patch: String,
    /// The table's columns.
    pub columns: Vec<&'static str>,
    /// One row per face, in the order of the mesh's numbering (by cell, then by the cell's
    /// own faces), whatever the solver's.
    pub rows: Vec<Vec<f64>>,
    /// Force of the flow on the patch: (p − p_ref) n A over its faces, plus the viscous
    /// stress on no-slip walls.
    pub force: Vec3,
}

/// The dynamic pressure ½ ρ |V|² of `case`'s reference state, and its flow direction; zero
/// and none for a reference state at rest.
fn dynamic_pressure(case: &FvCase) -> (f64, Option<Vec3>) {
    let w = case.reference();
    let speed2 = dot(velocity(&w), velocity(&w));
    let direction = (speed2 > 0.0).then(|| velocity(&w).map(|x| x / speed2.sqrt()));
    (0.5 * w[0] * speed2, direction)
}

/// The surface of every wall patch of `case` (see [`FvCase::walls`]) for the state of
/// `setup` at time `t`. The wall's pressure is its cell's (as `ferroflow verify flat-plate`
/// takes it); Cp = (p − p_ref)/q and Cf = τ_w·d/q with q and d the reference state's dynamic
/// pressure and flow direction, τ_w the tangential viscous stress on the face; without a
/// moving reference state there is no q: p only.
pub fn surfaces(case: &FvCase, setup: &mut FvSetup, t: f64) -> Vec<Surface> {
    // The viscous fluxes read the cells' gradients.
    setup.solver.prepare(&setup.state, t);
    let (s, state) = (&setup.solver, &setup.state);
    let g = &s.geometry;
    let p_ref = case.reference()[4];
    let (q, direction) = dynamic_pressure(case);
    let mut out = Vec::new();
    for name in case.walls(&setup.mesh) {
        let index = (setup.mesh.patches.iter()).position(|p| p == name);
        let no_slip = matches!(
            case.patch_kind(name),
            FvPatchKind::AdiabaticWall | FvPatchKind::IsothermalWall
        );
        let viscous = s.viscous.filter(|_| no_slip);
        let mut columns = vec!["x", "y", "z", "p"];
        match (direction, viscous) {
            (Some(_), Some(_)) => columns.extend(["cp", "cf"]),
            (Some(_), None) => columns.push("cp"),
            (None, _) => {}
        }
        let mut surface = Surface {
            patch: name.into(),
            columns,
            rows: Vec::new(),
            force: [0.0; 3],
        };
        let mut faces: Vec<usize> = (g.internal..g.faces())
            .filter(|&f| Some(g.patch[f - g.internal] as usize) == index)
            .collect();
        // A cell's boundary faces come in its own face order in either numbering.
        faces.sort_by_key(|&f| s.user_cell(g.left[f] as usize));
        for f in faces {
            let (n, a, x) = (g.normal[f], g.area[f], g.face_centroid[f]);
            let p = s.gas.prim(&state[g.left[f] as usize])[4];
            (0..3).for_each(|k| surface.force[k] += (p - p_ref) * n[k] * a);
            let mut row = vec![x[0], x[1], x[2], p];
            if direction.is_some() {
                row.push((p - p_ref) / q);
            }
            if let Some(visc) = viscous {
                // The viscous flux leaves the cell through the wall: its momentum is −τ A.
                let v = face_flux(s, visc, f);
                let stress: Vec3 = std::array::from_fn(|k| -v[k + 1]);
                (0..3).for_each(|k| surface.force[k] += stress[k]);
                let normal = dot(stress, n);
                let shear: Vec3 = std::array::from_fn(|k| (stress[k] - normal * n[k]) / a);
                if let Some(d) = direction {
                    row.push(dot(shear, d) / q);
                }
            }
            surface.rows.push(row);
        }
        out.push(surface);
    }
    out
}

/// The forces on `surfaces` with their coefficients F / (q A), A = `output.reference_area`;
/// none without a moving reference state.
pub fn forces(case: &FvCase, surfaces: &[Surface]) -> Vec<PatchForce> {
    let (q, direction) = dynamic_pressure(case);
    if direction.is_none() {
        return Vec::new();
    }
    let scale = 1.0 / (q * case.output.reference_area);
    (surfaces.iter())
        .map(|s| PatchForce {
            patch: s.patch.clone(),
            force: s.force,
            coefficients: s.force.map(|f| f * scale),
        })
        .collect()
}

/// The file name of `patch`'s surface table: characters other than letters, digits, `-`, `_`
/// and `.` become `_`.
pub fn surface_file(patch: &str) -> String {
    let safe: String = (patch.chars())
        .map(|c| match c.is_ascii_alphanumeric() || "-_.".contains(c) {
            true => c,
            false => '_',
        })
        .collect();
    format!("surface_{safe}.csv")
}

/// Writes `surface`'s table at `path`.
pub fn write_surface(path: &Path, surface: &Surface) -> io::Result<()> {
    let rows = (surface.rows.iter()).map(|r| r.iter().map(|x| x.to_string()).collect());
    ferroflow_io::table::write_csv(path, &surface.columns, rows)
}

/// The L1 error in density (as `ferroflow verify sod`) of a shock tube (`physics.diaphragm`
/// set) marched to time `t` > 0, against the exact solution of the 1D Riemann problem along
/// x between the reference state and the right one at rest; none for other cases.
pub fn shock_tube_error(case: &FvCase, setup: &FvSetup, t: f64) -> Option<f64> {
    let at = case.physics.diaphragm?;
    if case.numerics.scheme != Scheme::SspRk3 || t <= 0.0 {
        return None;
    }
    let (w, p) = (case.reference(), &case.physics);
    let exact = Riemann::new(
        p.gamma,
        [w[0], w[1], w[4]],
        [p.right_density, 0.0, p.right_pressure],
    );
    let s = &setup.solver;
    Some(ferroflow_fv::sod::l1_density(
        s,
        &setup.state,
        &exact,
        (at, t),
    ))
}

/// The size of a finite-volume mesh.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FvMeshSize {
    /// Cells.
    pub cells: usize,
    /// Faces, boundary faces included.
    pub faces: usize,
    /// Boundary faces.
    pub boundary_faces: usize,
}

/// Contents of a finite-volume run's `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FvSummary {
    /// Case name.
    pub case: String,
    /// `finite-volume`.
    pub solver: SolverKind,
    /// `numerics.scheme`.
    pub scheme: Scheme,
    /// The `--set KEY=VALUE` overrides (and the options that stand for them).
    pub overrides: Vec<String>,
    /// Cells and faces of the mesh.
    pub mesh: FvMeshSize,
    /// `f64`.
    pub precision: String,
    /// `cpu`.
    pub backend: String,
    /// CPU threads.
    pub threads: usize,
    /// Iterations (steady) or time steps (unsteady) done, earlier runs of a restarted one
    /// included.
    pub steps: usize,
    /// Time reached (unsteady).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<f64>,
    /// Whether the steady residual dropped by `numerics.residual_drop`.
    pub converged: bool,
    /// How the run ended.
    pub status: FemStatus,
    /// Steady: the last RMS of R_ρ/Ω over its largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub residual_drop: Option<f64>,
    /// Steady: the RMS of R/Ω of (ρ, ρu, ρv, ρw, ρE) where the density's was largest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rms: Option<Cons>,
    /// The last row's RMS: of R/Ω (steady) or of ΔU/Δt over the last step (unsteady).
    pub last_rms: Cons,
    /// Σ Ω U over the cells: mass, momentum, energy.
    pub totals: Cons,
    /// Wall time of the steps (earlier runs of a restarted one included), seconds.
    pub wall_seconds: f64,
    /// Wall time of this invocation, seconds.
    pub total_wall_seconds: f64,
    /// Cell updates per second of the steps (over `wall_seconds`).
    pub cell_updates_per_second: f64,
    /// Forces on the wall patches and their coefficients F / (q A).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forces: Vec<PatchForce>,
    /// A shock tube's L1 error in density against the exact solution (see
    /// [`shock_tube_error`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shock_tube_l1_density: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn surface_files_are_named_after_their_patch_in_plain_characters() {
        assert_eq!(surface_file("plate"), "surface_plate.csv");
        assert_eq!(
            surface_file("wing/upper side"),
            "surface_wing_upper_side.csv"
        );
        assert_eq!(surface_file("a-b_c.1"), "surface_a-b_c.1.csv");
    }
}
