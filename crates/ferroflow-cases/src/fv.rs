//! Finite-volume cases (`case.solver = "finite-volume"`): the compressible cell-centred solver
//! of `ferroflow-fv` on a mixed mesh, generated or read from a Gmsh or SU2 file, with a ghost
//! boundary condition per mesh patch. The sections are a finite-element case's (`[case]`,
//! `[mesh]`, `[physics]`, `[boundary.<patch>]`, `[numerics]`, `[backend]`, `[output]`), with
//! keys of their own, documented once in [`FV_KEYS`]. Nondimensional: gas
//! constant 1, T = p/ρ.
use crate::case::KEYS;
use crate::case::{default_in, key, render, CaseError, CaseInfo, KeyDoc, Precision};
use crate::fem::{at_key, parse_checked, positive, SolverKind, FEM_KEYS};
use ferroflow_fv::boundary::Boundary;
use ferroflow_fv::gas::{Cons, Prim};
use ferroflow_fv::{bump, flat_plate, Gas, Limiter, Solver, Viscosity, Viscous};
use ferroflow_mesh::generate::{box_mesh, BoxCells};
use ferroflow_mesh::{Mesh, MeshError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A whole finite-volume case file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvCase {
    /// `[case]`.
    pub case: CaseInfo,
    /// `[mesh]`.
    pub mesh: FvMesh,
    /// `[physics]`.
    pub physics: FvPhysics,
    /// `[boundary.<patch>]`, by mesh patch name; a patch not listed is a slip wall.
    pub boundary: BTreeMap<String, FvPatch>,
    /// `[numerics]`.
    pub numerics: FvNumerics,
    /// `[backend]`.
    pub backend: FvBackend,
    /// `[output]`.
    pub output: FvOutput,
}

/// `mesh.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FvMeshKind {
    /// A box of hexahedra, or of their prisms or tetrahedra (`mesh.elements`).
    Box,
    /// The subsonic bump's channel ([`bump::mesh`]).
    Bump,
    /// The flat plate's graded mesh ([`flat_plate::mesh`]).
    FlatPlate,
    /// A Gmsh `.msh` file.
    Gmsh,
    /// An SU2 `.su2` file.
    Su2,
}

/// `mesh.elements`: how a box's hexahedra are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Elements {
    /// One hexahedron each.
    Hex,
    /// Two prisms each.
    Prism,
    /// Six tetrahedra each.
    Tet,
}

/// `mesh.grading`: the flat plate's meshes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Grading {
    /// [`flat_plate::COARSE`].
    Coarse,
    /// [`flat_plate::FINE`].
    Fine,
}

/// `[mesh]` of a finite-volume case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvMesh {
    /// Generated or read.
    pub kind: FvMeshKind,
    /// `box`: hexahedra per axis; `bump`: the first is the cells along the channel.
    pub cells: [usize; 3],
    /// `box`: how each hexahedron is filled.
    pub elements: Elements,
    /// `box`: edge lengths.
    pub size: [f64; 3],
    /// `box`: the low corner.
    pub origin: [f64; 3],
    /// `flat-plate`: which of its meshes.
    pub grading: Grading,
    /// `gmsh`, `su2`: the file, relative to the case file's directory.
    pub file: String,
}

/// `physics.viscosity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ViscosityLaw {
    /// The Euler equations.
    Inviscid,
    /// The same μ at every temperature.
    Constant,
    /// Sutherland's law about the reference temperature.
    Sutherland,
}

/// `[physics]` of a finite-volume case: the gas, the reference state (the initial one, and
/// the far field's and the boundaries' defaults) and the viscosity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvPhysics {
    /// Ratio of specific heats γ.
    pub gamma: f64,
    /// Density of the reference state.
    pub density: f64,
    /// Pressure of the reference state.
    pub pressure: f64,
    /// Mach number of the reference state.
    pub mach: f64,
    /// Direction of the reference state's velocity (normalised).
    pub direction: [f64; 3],
    /// Viscosity law.
    pub viscosity: ViscosityLaw,
    /// Reynolds number ρ|V|L/μ of the reference state; or `mu`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reynolds: Option<f64>,
    /// Dynamic viscosity at the reference temperature; or `reynolds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mu: Option<f64>,
    /// Length L of the Reynolds number.
    pub length: f64,
    /// Prandtl number.
    pub prandtl: f64,
    /// Sutherland's temperature over the reference temperature.
    pub sutherland_ratio: f64,
    /// Shock tube: cells with x below it hold the reference state, the others the right
    /// state; unset: the reference state everywhere.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diaphragm: Option<f64>,
    /// Shock tube: density right of the diaphragm.
    pub right_density: f64,
    /// Shock tube: pressure right of the diaphragm.
    pub right_pressure: f64,
}

/// `boundary.<patch>.kind` of a finite-volume case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FvPatchKind {
    /// Inviscid wall: the normal velocity reflected, no shear, no heat.
    SlipWall,
    /// Symmetry plane: the slip wall's ghost.
    Symmetry,
    /// No-slip adiabatic wall at `velocity`.
    AdiabaticWall,
    /// No-slip wall at `velocity` and `temperature`.
    IsothermalWall,
    /// Characteristic far field of the reference state.
    FarField,
    /// Subsonic inflow of `total_pressure` and `total_temperature` along `direction`.
    Inflow,
    /// Outflow at static `pressure`.
    Outflow,
}

/// `[boundary.<patch>]` of a finite-volume case; values unset default to the reference
/// state's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvPatch {
    /// Condition.
    pub kind: FvPatchKind,
    /// No-slip walls: the wall's velocity.
    pub velocity: [f64; 3],
    /// Isothermal wall: its temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Inflow: total pressure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_pressure: Option<f64>,
    /// Inflow: total temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_temperature: Option<f64>,
    /// Inflow: the flow's direction into the domain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<[f64; 3]>,
    /// Outflow: static pressure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pressure: Option<f64>,
}

/// `numerics.scheme`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// Four-stage Runge–Kutta, each cell at its own step (steady).
    RkLocal,
    /// SSP-RK3 with one global step to `end_time` (unsteady).
    SspRk3,
    /// The implicit Newton–Jacobi iteration (steady).
    NewtonJacobi,
}

/// `numerics.limiter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LimiterKind {
    /// Van Albada's.
    VanAlbada,
    /// Unlimited MUSCL.
    None,
}

/// `numerics.renumber`: the order the solver keeps the cells in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Renumber {
    /// Reverse Cuthill–McKee, faces sorted with the cells ([`Solver::renumbered`]).
    Rcm,
    /// The mesh's own numbering.
    None,
}

/// `[numerics]` of a finite-volume case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvNumerics {
    /// Time scheme.
    pub scheme: Scheme,
    /// Courant number of the (pseudo-)time step.
    pub cfl: f64,
    /// `newton-jacobi`: Jacobi sweeps per iteration.
    pub sweeps: usize,
    /// MUSCL limiter.
    pub limiter: LimiterKind,
    /// `ssp-rk3`: the time the run ends at.
    pub end_time: f64,
    /// Most iterations (steps).
    pub max_iterations: usize,
    /// Steady schemes: converged when the RMS density residual has dropped by this from its
    /// largest.
    pub residual_drop: f64,
    /// The order the solver keeps the cells in; outputs and checkpoints keep the mesh's.
    pub renumber: Renumber,
}

/// `[backend]` of a finite-volume case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvBackend {
    /// Floating-point precision (f64 only).
    pub precision: Precision,
    /// CPU threads (0 = all cores).
    pub threads: usize,
}

/// `[output]` of a finite-volume case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FvOutput {
    /// Iterations between checkpoints (0: only at the end and when interrupted).
    pub checkpoint_interval: usize,
    /// Iterations between field snapshots (0: final fields only).
    pub field_interval: usize,
    /// zlib-compress the `.vtu` arrays.
    pub compress: bool,
    /// Area A of the wall force coefficients F / (q A), q = ½ ρ |V|² of the reference state.
    pub reference_area: f64,
}

impl Default for FvOutput {
    fn default() -> FvOutput {
        FvOutput {
            checkpoint_interval: 1000,
            field_interval: 0,
            compress: false,
            reference_area: 1.0,
        }
    }
}

impl Default for FvCase {
    fn default() -> FvCase {
        FvCase {
            case: CaseInfo {
                name: "channel-fv".into(),
                description: "Uniform flow in a box of hexahedra".into(),
                solver: SolverKind::FiniteVolume,
            },
            mesh: FvMesh::default(),
            physics: FvPhysics::default(),
            boundary: BTreeMap::new(),
            numerics: FvNumerics::default(),
            backend: FvBackend::default(),
            output: FvOutput::default(),
        }
    }
}

impl Default for FvMesh {
    fn default() -> FvMesh {
        FvMesh {
            kind: FvMeshKind::Box,
            cells: [16, 16, 1],
            elements: Elements::Hex,
            size: [1.0, 1.0, 0.0625],
            origin: [0.0; 3],
            grading: Grading::Coarse,
            file: String::new(),
        }
    }
}

impl Default for FvPhysics {
    fn default() -> FvPhysics {
        FvPhysics {
            gamma: Gas::AIR.gamma,
            density: 1.0,
            pressure: 1.0 / Gas::AIR.gamma,
            mach: 0.0,
            direction: [1.0, 0.0, 0.0],
            viscosity: ViscosityLaw::Inviscid,
            reynolds: None,
            mu: None,
            length: 1.0,
            prandtl: Viscous::AIR_PRANDTL,
            sutherland_ratio: 110.0 / 288.15,
            diaphragm: None,
            right_density: 0.125,
            right_pressure: 0.1,
        }
    }
}

impl Default for FvPatch {
    fn default() -> FvPatch {
        FvPatch {
            kind: FvPatchKind::SlipWall,
            velocity: [0.0; 3],
            temperature: None,
            total_pressure: None,
            total_temperature: None,
            direction: None,
            pressure: None,
        }
    }
}

impl Default for FvNumerics {
    fn default() -> FvNumerics {
        FvNumerics {
            scheme: Scheme::RkLocal,
            cfl: 1.8,
            sweeps: 32,
            limiter: LimiterKind::VanAlbada,
            end_time: 1.0,
            max_iterations: 10_000,
            residual_drop: 1e-10,
            renumber: Renumber::Rcm,
        }
    }
}

impl Default for FvBackend {
    fn default() -> FvBackend {
        FvBackend {
            precision: Precision::F64,
            threads: 0,
        }
    }
}

/// A finite-volume case set up: the solver on its mesh and the initial state.
pub struct FvSetup {
    /// The mesh, in its own numbering.
    pub mesh: Mesh,
    /// The solver with every patch's condition, its cells in the order of
    /// `numerics.renumber` ([`Solver::to_user`] maps them to the mesh's).
    pub solver: Solver,
    /// The conservative state of every cell at the start, in the solver's numbering.
    pub state: Vec<Cons>,
}

impl FvCase {
    /// Parses a finite-volume case from TOML `text`; `origin` (file or built-in name)
    /// prefixes messages, which name the line and the key.
    pub fn from_toml(text: &str, origin: &str) -> Result<FvCase, CaseError> {
        parse_checked(text, origin, FvCase::check)
    }

    /// The values the types alone do not bound.
    fn check(&self, text: &str, origin: &str) -> Result<(), CaseError> {
        let bad = |key: &str, message: String| Err(at_key(origin, text, key, message));
        let p = &self.physics;
        let n = &self.numerics;
        let positive_values = [
            ("physics.density", p.density),
            ("physics.pressure", p.pressure),
            ("physics.length", p.length),
            ("physics.prandtl", p.prandtl),
            ("physics.sutherland_ratio", p.sutherland_ratio),
            ("physics.right_density", p.right_density),
            ("physics.right_pressure", p.right_pressure),
            ("numerics.cfl", n.cfl),
            ("numerics.end_time", n.end_time),
            ("output.reference_area", self.output.reference_area),
        ];
        let optional = [("physics.reynolds", p.reynolds), ("physics.mu", p.mu)];
        let given = optional.iter().filter_map(|(k, v)| v.map(|v| (*k, v)));
        positive(origin, text, positive_values.into_iter().chain(given))?;
        if !(p.gamma > 1.0 && p.gamma.is_finite()) {
            return bad("physics.gamma", format!("{}: must be above 1", p.gamma));
        }
        if !(p.mach >= 0.0 && p.mach.is_finite()) {
            return bad("physics.mach", format!("{}: must be 0 or more", p.mach));
        }
        if unit(p.direction).is_none() {
            return bad(
                "physics.direction",
                format!("{:?}: not a direction", p.direction),
            );
        }
        if let Some(x) = p.diaphragm.filter(|x| !x.is_finite()) {
            return bad("physics.diaphragm", format!("{x}: not finite"));
        }
        match (p.viscosity, p.reynolds, p.mu) {
            (ViscosityLaw::Inviscid, None, None) => {}
            (ViscosityLaw::Inviscid, ..) => {
                let key = if p.mu.is_some() {
                    "physics.mu"
                } else {
                    "physics.reynolds"
                };
                return bad(key, "set, but physics.viscosity = \"inviscid\"".into());
            }
            (_, Some(_), Some(_)) => {
                return bad("physics.mu", "set with physics.reynolds: give one".into())
            }
            (_, None, None) => {
                return bad(
                    "physics.viscosity",
                    "viscous, but neither physics.reynolds nor physics.mu is set".into(),
                )
            }
            (_, Some(_), None) if p.mach == 0.0 => {
                return bad(
                    "physics.reynolds",
                    "a Reynolds number needs a moving reference state (physics.mach > 0)".into(),
                )
            }
            _ => {}
        }
        if !(n.residual_drop > 0.0 && n.residual_drop < 1.0) {
            let d = n.residual_drop;
            return bad("numerics.residual_drop", format!("{d}: 0 < drop < 1"));
        }
        for (key, value) in [
            ("numerics.max_iterations", n.max_iterations),
            ("numerics.sweeps", n.sweeps),
        ] {
            if value == 0 {
                return bad(key, "0: at least 1".into());
            }
        }
        if self.case.solver != SolverKind::FiniteVolume {
            return bad(
                "case.solver",
                "a finite-volume case needs \"finite-volume\"".into(),
            );
        }
        let m = &self.mesh;
        match m.kind {
            FvMeshKind::Box | FvMeshKind::Bump if m.cells.contains(&0) => {
                return bad("mesh.cells", format!("{:?}: at least 1 per axis", m.cells))
            }
            FvMeshKind::Gmsh | FvMeshKind::Su2 if m.file.is_empty() => {
                return bad("mesh.file", "missing: the mesh kind reads it".into())
            }
            _ => {}
        }
        for (name, patch) in &self.boundary {
            let at = |k: &str| format!("boundary.{name}.{k}");
            if patch.velocity.iter().any(|v| !v.is_finite()) {
                return bad(&at("velocity"), format!("{:?}: not finite", patch.velocity));
            }
            let values = [
                ("temperature", patch.temperature),
                ("total_pressure", patch.total_pressure),
                ("total_temperature", patch.total_temperature),
                ("pressure", patch.pressure),
            ];
            for (k, v) in values {
                if let Some(v) = v.filter(|v| !(*v > 0.0 && v.is_finite())) {
                    return bad(&at(k), format!("{v}: must be positive and finite"));
                }
            }
            if let Some(d) = patch.direction.filter(|d| unit(*d).is_none()) {
                return bad(&at("direction"), format!("{d:?}: not a direction"));
            }
        }
        Ok(())
    }

    /// `mesh.file` read from `dir` where relative (a case file's directory); the resolved
    /// case then names it so that a restart finds it from anywhere.
    pub fn resolve_mesh_file(&mut self, dir: &Path) {
        let file = PathBuf::from(&self.mesh.file);
        let read = matches!(self.mesh.kind, FvMeshKind::Gmsh | FvMeshKind::Su2);
        if read && file.is_relative() {
            self.mesh.file = dir.join(file).display().to_string();
        }
    }

    /// The key an error of [`FvCase::mesh`] is about.
    pub fn mesh_key(&self) -> &'static str {
        match self.mesh.kind {
            FvMeshKind::Box | FvMeshKind::Bump => "mesh.cells",
            FvMeshKind::FlatPlate => "mesh.grading",
            FvMeshKind::Gmsh | FvMeshKind::Su2 => "mesh.file",
        }
    }

    /// The mesh: generated, or read (an error names the file).
    pub fn mesh(&self) -> Result<Mesh, MeshError> {
        let m = &self.mesh;
        match m.kind {
            FvMeshKind::Box => {
                let fill = match m.elements {
                    Elements::Hex => BoxCells::Hex,
                    Elements::Prism => BoxCells::Prism,
                    Elements::Tet => BoxCells::Tet6,
                };
                let mut mesh = box_mesh(fill, m.cells, m.size)?;
                if m.origin != [0.0; 3] {
                    let o = m.origin;
                    (mesh.nodes.iter_mut()).for_each(|x| (0..3).for_each(|a| x[a] += o[a]));
                }
                Ok(mesh)
            }
            FvMeshKind::Bump => bump::mesh(m.cells[0]),
            FvMeshKind::FlatPlate => flat_plate::mesh(match m.grading {
                Grading::Coarse => flat_plate::COARSE,
                Grading::Fine => flat_plate::FINE,
            }),
            FvMeshKind::Gmsh => ferroflow_mesh::gmsh::read(Path::new(&m.file)),
            FvMeshKind::Su2 => ferroflow_mesh::su2::read(Path::new(&m.file)),
        }
    }

    /// The gas.
    pub fn gas(&self) -> Gas {
        Gas {
            gamma: self.physics.gamma,
        }
    }

    /// The reference state (ρ, u, v, w, p).
    pub fn reference(&self) -> Prim {
        let p = &self.physics;
        let c = (p.gamma * p.pressure / p.density).sqrt();
        let d = unit(p.direction).expect("checked");
        let v = d.map(|d| p.mach * c * d);
        [p.density, v[0], v[1], v[2], p.pressure]
    }

    /// Viscosity and heat conduction; `None` for the Euler equations.
    pub fn viscous(&self) -> Option<Viscous> {
        let p = &self.physics;
        let w = self.reference();
        let speed = (w[1] * w[1] + w[2] * w[2] + w[3] * w[3]).sqrt();
        let mu = p.mu.or(p.reynolds.map(|re| w[0] * speed * p.length / re))?;
        let t = w[4] / w[0];
        let viscosity = match p.viscosity {
            ViscosityLaw::Inviscid => return None,
            ViscosityLaw::Constant => Viscosity::Constant(mu),
            ViscosityLaw::Sutherland => Viscosity::Sutherland {
                mu,
                t,
                s: p.sutherland_ratio * t,
            },
        };
        Some(Viscous {
            viscosity,
            prandtl: p.prandtl,
        })
    }

    /// The limiter of the extrapolation to faces.
    pub fn limiter(&self) -> Limiter {
        match self.numerics.limiter {
            LimiterKind::VanAlbada => Limiter::VanAlbada,
            LimiterKind::None => Limiter::None,
        }
    }

    /// The kind of patch `name` (a slip wall where not listed).
    pub fn patch_kind(&self, name: &str) -> FvPatchKind {
        self.boundary
            .get(name)
            .map_or(FvPatchKind::SlipWall, |p| p.kind)
    }

    /// The ghost condition of patch `name` (a slip wall where not listed).
    pub fn boundary_of(&self, name: &str) -> Boundary {
        let patch = self.boundary.get(name).cloned().unwrap_or_default();
        let w = self.reference();
        let g = self.physics.gamma;
        let t = w[4] / w[0];
        let mach2 = (w[1] * w[1] + w[2] * w[2] + w[3] * w[3]) / (g * t);
        let factor = 1.0 + 0.5 * (g - 1.0) * mach2;
        match patch.kind {
            FvPatchKind::SlipWall | FvPatchKind::Symmetry => Boundary::SlipWall,
            FvPatchKind::AdiabaticWall => Boundary::AdiabaticWall {
                velocity: patch.velocity,
            },
            FvPatchKind::IsothermalWall => Boundary::IsothermalWall {
                velocity: patch.velocity,
                temperature: patch.temperature.unwrap_or(t),
            },
            FvPatchKind::FarField => Boundary::FarField(w),
            FvPatchKind::Inflow => Boundary::Inflow {
                p0: (patch.total_pressure).unwrap_or(w[4] * factor.powf(g / (g - 1.0))),
                t0: patch.total_temperature.unwrap_or(t * factor),
                direction: unit(patch.direction.unwrap_or(self.physics.direction))
                    .expect("checked"),
            },
            FvPatchKind::Outflow => Boundary::Outflow(patch.pressure.unwrap_or(w[4])),
        }
    }

    /// Sets the case up on `mesh`; an error names the key at fault.
    pub fn setup(&self, mesh: Mesh) -> Result<FvSetup, (String, String)> {
        for name in self.boundary.keys() {
            if !mesh.patches.contains(name) {
                return Err((
                    format!("boundary.{name}"),
                    format!(
                        "not a patch of the mesh (its patches: {})",
                        mesh.patches.join(", ")
                    ),
                ));
            }
        }
        let bcs: Vec<(&str, Boundary)> = (mesh.patches.iter())
            .map(|name| (name.as_str(), self.boundary_of(name)))
            .collect();
        let make = match self.numerics.renumber {
            Renumber::Rcm => Solver::renumbered,
            Renumber::None => Solver::new,
        };
        let mut solver = make(&mesh, self.gas(), self.limiter(), &bcs)
            .map_err(|e| ("mesh".to_string(), e.to_string()))?;
        solver.viscous = self.viscous();
        let (w, p) = (self.reference(), &self.physics);
        let right = [p.right_density, 0.0, 0.0, 0.0, p.right_pressure];
        let state = solver.sample(|x| match p.diaphragm {
            Some(at) if x[0] >= at => right,
            _ => w,
        });
        Ok(FvSetup {
            mesh,
            solver,
            state,
        })
    }

    /// The patches whose forces and surface coefficients a run reports: its no-slip and slip
    /// walls (symmetry planes excluded).
    pub fn walls<'a>(&self, mesh: &'a Mesh) -> Vec<&'a str> {
        let wall = |name: &str| {
            matches!(
                self.patch_kind(name),
                FvPatchKind::SlipWall | FvPatchKind::AdiabaticWall | FvPatchKind::IsothermalWall
            )
        };
        (mesh.patches.iter())
            .map(String::as_str)
            .filter(|n| wall(n))
            .collect()
    }

    /// The resolved case as TOML.
    pub fn to_toml(&self) -> String {
        render(self, &FV_KEYS, false, |_| true)
    }

    /// The resolved case as TOML with every key explained.
    pub fn to_commented_toml(&self) -> String {
        render(self, &FV_KEYS, true, |_| true)
    }
}

/// `v` scaled to unit length; `None` for a zero or non-finite vector.
fn unit(v: [f64; 3]) -> Option<[f64; 3]> {
    let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    (n > 0.0 && n.is_finite()).then(|| v.map(|x| x / n))
}

/// The default value of a key of [`FV_KEYS`] (a patch's: that of a patch not listed), if it
/// has one.
pub fn fv_default_value(doc: &KeyDoc) -> Option<toml::Value> {
    default_in(&FvCase::default(), &FvPatch::default(), doc)
}

/// Built-in finite-volume cases: `(name, TOML text)`.
pub const FV_BUILTIN: [(&str, &str); 3] = [
    ("sod-fv", include_str!("../../../cases/sod-fv.toml")),
    ("bump-fv", include_str!("../../../cases/bump-fv.toml")),
    (
        "flat-plate-fv",
        include_str!("../../../cases/flat-plate-fv.toml"),
    ),
];

/// Every key of a finite-volume case file, in file order.
pub const FV_KEYS: [KeyDoc; 45] = [
    KEYS[0],
    KEYS[1],
    key(
        "case.solver",
        "string",
        "-",
        "`\"finite-volume\"`",
        "Cell-centred finite volumes for compressible flow on mixed meshes (Roe, MUSCL, \
         least squares; seed 004); f64, on the CPU or with `--backend cuda` on a GPU \
         (`rk-local` only)",
    ),
    key(
        "mesh.kind",
        "string",
        "-",
        "`\"box\"`, `\"bump\"`, `\"flat-plate\"`, `\"gmsh\"`, `\"su2\"`",
        "`box`: a box of `mesh.elements`, its sides the patches `xmin` … `zmax`; `bump`: the \
         subsonic bump's channel (patches as a box's, the bump on `ymin`); `flat-plate`: the \
         flat plate's graded mesh (patches `xmin`, `xmax`, `ymin` ahead of the plate, \
         `plate`, `ymax`, `zmin`, `zmax`); `gmsh`, `su2`: the cells and patches of \
         `mesh.file`",
    ),
    key(
        "mesh.cells",
        "array of integers",
        "-",
        "3 values >= 1",
        "`box`: hexahedra per axis; `bump`: the first is the cells along the channel (a \
         third of it across, one layer)",
    ),
    key(
        "mesh.elements",
        "string",
        "-",
        "`\"hex\"`, `\"prism\"`, `\"tet\"`",
        "`box`: each hexahedron whole, as two prisms, or as six tetrahedra",
    ),
    key(
        "mesh.size",
        "array of 3 floats",
        "-",
        "> 0",
        "`box`: edge lengths",
    ),
    key(
        "mesh.origin",
        "array of 3 floats",
        "-",
        "finite",
        "`box`: the low corner",
    ),
    key(
        "mesh.grading",
        "string",
        "-",
        "`\"coarse\"`, `\"fine\"`",
        "`flat-plate`: 1,280 or 7,168 cells",
    ),
    key(
        "mesh.file",
        "string",
        "-",
        "a Gmsh `.msh` (2.2, 4.1) or SU2 file",
        "`gmsh`, `su2`: the mesh, relative to the case file's directory",
    ),
    key(
        "physics.gamma",
        "float",
        "-",
        "> 1",
        "Ratio of specific heats γ",
    ),
    key(
        "physics.density",
        "float",
        "-",
        "> 0",
        "Density of the reference state: the initial state, the far field's, and what \
         boundary values left unset default to",
    ),
    key(
        "physics.pressure",
        "float",
        "-",
        "> 0",
        "Pressure of the reference state",
    ),
    key(
        "physics.mach",
        "float",
        "-",
        ">= 0",
        "Mach number of the reference state",
    ),
    key(
        "physics.direction",
        "array of 3 floats",
        "-",
        "not zero",
        "Direction of the reference state's velocity",
    ),
    key(
        "physics.viscosity",
        "string",
        "-",
        "`\"inviscid\"`, `\"constant\"`, `\"sutherland\"`",
        "Euler, or Navier–Stokes with μ constant or by Sutherland's law about the reference \
         temperature",
    ),
    key(
        "physics.reynolds",
        "float",
        "-",
        "> 0",
        "Viscous: ρ|V|L/μ of the reference state (or `mu`)",
    ),
    key(
        "physics.mu",
        "float",
        "-",
        "> 0",
        "Viscous: dynamic viscosity at the reference temperature (or `reynolds`)",
    ),
    key(
        "physics.length",
        "float",
        "-",
        "> 0",
        "Length L of the Reynolds number",
    ),
    key("physics.prandtl", "float", "-", "> 0", "Prandtl number"),
    key(
        "physics.sutherland_ratio",
        "float",
        "-",
        "> 0",
        "Sutherland's temperature over the reference temperature (air at 288.15 K: \
         110/288.15)",
    ),
    key(
        "physics.diaphragm",
        "float",
        "-",
        "finite",
        "Shock tube: cells whose centroid has x below it start in the reference state, the \
         others at rest in the right state; unset: the reference state everywhere",
    ),
    key(
        "physics.right_density",
        "float",
        "-",
        "> 0",
        "Shock tube: the right density",
    ),
    key(
        "physics.right_pressure",
        "float",
        "-",
        "> 0",
        "Shock tube: the right pressure",
    ),
    key(
        "boundary.<patch>.kind",
        "string",
        "-",
        "`\"slip-wall\"`, `\"symmetry\"`, `\"adiabatic-wall\"`, `\"isothermal-wall\"`, \
         `\"far-field\"`, `\"inflow\"`, `\"outflow\"`",
        "Ghost condition of mesh patch `<patch>`: slip wall or symmetry plane (normal velocity \
         reflected); no-slip wall at `velocity`, adiabatic or at `temperature`; \
         characteristic far field of the reference state; subsonic inflow of total pressure \
         and temperature along `direction`; outflow at static `pressure`. Patches not listed \
         are slip walls",
    ),
    key(
        "boundary.<patch>.velocity",
        "array of 3 floats",
        "-",
        "finite",
        "No-slip walls: the wall's velocity",
    ),
    key(
        "boundary.<patch>.temperature",
        "float",
        "-",
        "> 0",
        "Isothermal wall: T = p/ρ; unset: the reference state's",
    ),
    key(
        "boundary.<patch>.total_pressure",
        "float",
        "-",
        "> 0",
        "Inflow: total pressure; unset: the reference state's",
    ),
    key(
        "boundary.<patch>.total_temperature",
        "float",
        "-",
        "> 0",
        "Inflow: total temperature; unset: the reference state's",
    ),
    key(
        "boundary.<patch>.direction",
        "array of 3 floats",
        "-",
        "not zero",
        "Inflow: direction into the domain; unset: `physics.direction`",
    ),
    key(
        "boundary.<patch>.pressure",
        "float",
        "-",
        "> 0",
        "Outflow: static pressure (subsonic faces); unset: the reference state's",
    ),
    key(
        "numerics.scheme",
        "string",
        "-",
        "`\"rk-local\"`, `\"ssp-rk3\"`, `\"newton-jacobi\"`",
        "Steady four-stage Runge–Kutta at each cell's own step; unsteady SSP-RK3 at one \
         global step to `end_time`; the steady implicit Newton–Jacobi iteration",
    ),
    key(
        "numerics.cfl",
        "float",
        "-",
        "> 0",
        "Courant number of the step CFL Ω / Σ λ A (about six times the 1D one on hexahedra; \
         Newton–Jacobi takes 1000)",
    ),
    key(
        "numerics.sweeps",
        "integer",
        "-",
        ">= 1",
        "`newton-jacobi`: Jacobi sweeps per iteration",
    ),
    key(
        "numerics.limiter",
        "string",
        "-",
        "`\"van-albada\"`, `\"none\"`",
        "MUSCL extrapolation limited by van Albada's function, or not",
    ),
    key(
        "numerics.end_time",
        "float",
        "-",
        "> 0",
        "`ssp-rk3`: the run ends at this time",
    ),
    key(
        "numerics.max_iterations",
        "integer",
        "-",
        ">= 1",
        "Most iterations or steps",
    ),
    key(
        "numerics.residual_drop",
        "float",
        "-",
        "0 < drop < 1",
        "Steady schemes: converged when the RMS of R_ρ/Ω has dropped by this from its \
         largest (an impulsive start's grows from round-off first)",
    ),
    key(
        "numerics.renumber",
        "string",
        "-",
        "`\"rcm\"`, `\"none\"`",
        "The order the solver keeps the cells in: reverse Cuthill–McKee (faces sorted with \
         the cells; faster on badly numbered meshes), or the mesh's own. Results differ by \
         rounding only: fields, surface tables and checkpoints are written in the mesh's \
         numbering, and a checkpoint restarts under either",
    ),
    key(
        "backend.precision",
        "string",
        "-",
        "`\"f64\"`",
        "Floating-point precision: the finite-volume solver computes in f64 only (`f32` is \
         refused)",
    ),
    key(
        "backend.threads",
        "integer",
        "-",
        ">= 0",
        "CPU threads, 0 = all cores; results are bitwise the same for any count",
    ),
    // `output.checkpoint_interval`, `output.field_interval`, `output.compress`: as a
    // finite-element case's.
    FEM_KEYS[25],
    FEM_KEYS[26],
    FEM_KEYS[27],
    key(
        "output.reference_area",
        "float",
        "-",
        "> 0",
        "A of the wall force coefficients F / (q A) in `summary.json`, q = ½ ρ |V|² of the \
         reference state",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::solver_of;

    #[test]
    fn built_in_cases_parse_set_up_and_read_back_from_their_resolved_form() {
        for (name, text) in FV_BUILTIN {
            assert_eq!(solver_of(text, name).unwrap(), SolverKind::FiniteVolume);
            let case = FvCase::from_toml(text, name).unwrap();
            let again = FvCase::from_toml(&case.to_commented_toml(), name).unwrap();
            assert_eq!(case, again, "{name}");
            let setup = case.setup(case.mesh().unwrap()).unwrap();
            assert_eq!(setup.state.len(), setup.solver.geometry.cells, "{name}");
        }
    }

    /// The built-in cases are the verification problems' set-ups: the same conditions and
    /// states as `ferroflow verify` runs.
    #[test]
    fn the_built_in_bump_and_plate_are_the_verified_ones() {
        let bump = FvCase::from_toml(FV_BUILTIN[1].1, "bump-fv").unwrap();
        assert_eq!(bump.limiter(), Limiter::None);
        let gas = bump.gas();
        let p = bump::pressure(gas);
        assert!(
            (bump.reference()[4] - p).abs() < 1e-9,
            "{:?}",
            bump.reference()
        );
        match bump.boundary_of("xmin") {
            Boundary::Inflow { p0, t0, direction } => {
                assert!((p0 - 1.0).abs() < 1e-9 && (t0 - 1.0).abs() < 1e-9);
                assert_eq!(direction, [1.0, 0.0, 0.0]);
            }
            other => panic!("{other:?}"),
        }
        let plate = FvCase::from_toml(FV_BUILTIN[2].1, "flat-plate-fv").unwrap();
        let free = flat_plate::free_stream(plate.gas());
        let w = plate.reference();
        assert!(
            (0..5).all(|k| (w[k] - free[k]).abs() < 1e-9),
            "{w:?} {free:?}"
        );
        let Some(Viscous {
            viscosity: Viscosity::Sutherland { mu, .. },
            ..
        }) = plate.viscous()
        else {
            panic!("{:?}", plate.viscous())
        };
        let Viscosity::Sutherland { mu: theirs, .. } = flat_plate::viscosity(&free) else {
            unreachable!()
        };
        assert!((mu / theirs - 1.0).abs() < 1e-8, "{mu} against {theirs}");
        let mesh = plate.mesh().unwrap();
        assert_eq!(plate.walls(&mesh), ["plate"]);
    }

    #[test]
    fn errors_name_the_key_and_the_value() {
        let head = "[case]\nsolver = \"finite-volume\"\n";
        let e = FvCase::from_toml(&format!("{head}[mesh]\ncell = 3\n"), "x").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mesh.cell"), "{e}");
        let text = format!("{head}[physics]\ngamma = 0.9\n");
        let e = FvCase::from_toml(&text, "x").unwrap_err().to_string();
        assert!(e.contains("x:4: physics.gamma: 0.9"), "{e}");
        let text = format!("{head}[physics]\nviscosity = \"constant\"\n");
        let e = FvCase::from_toml(&text, "x").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("physics.viscosity"), "{e}");
        let text = format!("{head}[boundary.xmin]\nkind = \"outflow\"\npressure = -1.0\n");
        let e = FvCase::from_toml(&text, "x").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("boundary.xmin.pressure"), "{e}");
        let case = FvCase::from_toml(&format!("{head}[boundary.inlet]\n"), "x").unwrap();
        let e = case.setup(case.mesh().unwrap()).err().unwrap();
        assert_eq!(e.0, "boundary.inlet");
    }

    #[test]
    fn a_shock_tube_starts_with_its_two_states() {
        let case = FvCase::from_toml(FV_BUILTIN[0].1, "sod-fv").unwrap();
        let setup = case.setup(case.mesh().unwrap()).unwrap();
        let g = &setup.solver.geometry;
        for (c, u) in setup.state.iter().enumerate() {
            let want = if g.centroid[c][0] < 0.5 { 1.0 } else { 0.125 };
            assert_eq!(u[0], want);
            assert_eq!(u[1], 0.0);
        }
    }
}
