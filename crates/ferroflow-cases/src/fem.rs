//! Finite-element cases (`case.solver = "finite-element"`): the edge-based fractional-step
//! solver of `ferroflow-fem` on a tetrahedral mesh, generated or read from a Gmsh file, with
//! boundary conditions per mesh patch. The file has the sections of a structured case where
//! they mean the same (`[case]`, `[mesh]`, `[physics]`, `[boundary.<patch>]`, `[numerics]`,
//! `[backend]`, `[output]`) with keys of its own, documented once in [`FEM_KEYS`].
use crate::case::{
    default_in, key, key_line, render, syntax_error, CaseError, CaseInfo, KeyDoc, Precision, KEYS,
};
use crate::summary::Deviation;
use ferroflow_core::Real;
use ferroflow_fem::cg::finest_tolerance;
use ferroflow_fem::dfg::{force, nodes_of_patch};
use ferroflow_fem::ethier_steinman;
use ferroflow_fem::fractional::{Controls, Fluid, FractionalStep};
use ferroflow_mesh::generate::{box_mesh, cluster, BoxCells};
use ferroflow_mesh::{Mesh, MeshError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Which solver a case file is for (`case.solver`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    /// The structured artificial-compressibility solver.
    #[default]
    Structured,
    /// The edge-based finite elements on tetrahedra.
    FiniteElement,
    /// The cell-centred finite volumes for compressible flow ([`crate::fv`]).
    FiniteVolume,
}

/// The tightest CG tolerance the finite elements reach in `precision` (32 ε of it): below it
/// a solve would stall at its round-off, so finer ones are refused.
pub fn finest_cg_tolerance(precision: Precision) -> f64 {
    match precision {
        Precision::F64 => finest_tolerance::<f64>(),
        Precision::F32 => finest_tolerance::<f32>(),
    }
}

/// The solver a case's TOML `text` from `origin` asks for; a value that is none of them is
/// an error naming the key.
pub fn solver_of(text: &str, origin: &str) -> Result<SolverKind, CaseError> {
    #[derive(Deserialize)]
    struct Head {
        #[serde(default)]
        case: Section,
    }
    #[derive(Deserialize, Default)]
    struct Section {
        #[serde(default)]
        solver: SolverKind,
    }
    // Only `case.solver` is read here; the rest is the chosen schema's to check.
    let head: Result<Head, _> = toml::from_str(text);
    match head {
        Ok(h) => Ok(h.case.solver),
        Err(e) if key_line(text, "case.solver").is_some() => Err(syntax_error(text, origin, &e)),
        // A file that is not even TOML: the structured parser says where.
        Err(_) => Ok(SolverKind::Structured),
    }
}

/// A whole finite-element case file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemCase {
    /// `[case]`.
    pub case: CaseInfo,
    /// `[mesh]`.
    pub mesh: FemMesh,
    /// `[physics]`.
    pub physics: FemPhysics,
    /// `[boundary.<patch>]`, by mesh patch name; a patch not listed is a wall at rest.
    pub boundary: BTreeMap<String, FemPatch>,
    /// `[numerics]`.
    pub numerics: FemNumerics,
    /// `[backend]`.
    pub backend: FemBackend,
    /// `[output]`.
    pub output: FemOutput,
}

/// `mesh.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FemMeshKind {
    /// A box of hexahedra split into six tetrahedra each.
    TetBox,
    /// A Gmsh `.msh` file.
    Gmsh,
    /// An SU2 `.su2` file (as `ferroflow mesh convert --tetrahedra` writes).
    Su2,
}

/// `[mesh]` of a finite-element case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemMesh {
    /// Generated or read.
    pub kind: FemMeshKind,
    /// `tet-box`: hexahedra per axis.
    pub cells: [usize; 3],
    /// `tet-box`: edge lengths (m).
    pub size: [f64; 3],
    /// `tet-box`: the low corner (m).
    pub origin: [f64; 3],
    /// `tet-box`: strength β of the nodes' tanh clustering toward the walls (0: uniform).
    pub grading: f64,
    /// `gmsh`: the file, relative to the case file's directory.
    pub file: String,
}

/// `physics.initial`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Initial {
    /// Fluid at rest, pressure zero (the held nodes at their boundary values).
    Rest,
    /// The Ethier–Steinman solution at t = 0.
    EthierSteinman,
}

/// `[physics]` of a finite-element case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemPhysics {
    /// Kinematic viscosity ν (m²/s).
    pub viscosity: f64,
    /// Density ρ (kg/m³).
    pub density: f64,
    /// The state at t = 0.
    pub initial: Initial,
}

/// `boundary.<patch>.kind` of a finite-element case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FemPatchKind {
    /// No slip at the patch's velocity.
    Wall,
    /// Velocity given, by `velocity` and `profile`.
    Inflow,
    /// Velocity free, pressure held at zero.
    Outflow,
    /// Velocity of the Ethier–Steinman solution at the time.
    EthierSteinman,
}

/// `boundary.<patch>.profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// `velocity` everywhere on the patch.
    Uniform,
    /// `velocity` times 4 s (1 − s) per axis the patch spans, s its coordinate scaled to the
    /// patch's extent along that axis: the peak `velocity` in its middle, zero at its rim.
    Parabolic,
}

/// `[boundary.<patch>]` of a finite-element case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemPatch {
    /// Condition.
    pub kind: FemPatchKind,
    /// Wall or inflow velocity (m/s).
    pub velocity: [f64; 3],
    /// Inflow profile.
    pub profile: Profile,
}

/// `[numerics]` of a finite-element case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemNumerics {
    /// Safety factor of the stable time step.
    pub cfl: f64,
    /// Largest time step (s).
    pub dt_max: f64,
    /// Each node steps by its own stable time step (steady cases only).
    pub local_time_steps: bool,
    /// Time at which the run ends (s).
    pub end_time: f64,
    /// Most time steps.
    pub max_steps: usize,
    /// Steady when max |Δu|/Δt and |Δp|/(ρΔt) of a step fall below it; unset: run to
    /// `end_time`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steady_tolerance: Option<f64>,
    /// Relative tolerance of the pressure solve.
    pub cg_tolerance: f64,
    /// Most CG iterations per step.
    pub cg_iterations: usize,
}

/// `[backend]` of a finite-element case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemBackend {
    /// Floating-point precision.
    pub precision: Precision,
    /// CPU threads (0 = all cores).
    pub threads: usize,
}

/// `[output]` of a finite-element case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FemOutput {
    /// Steps between checkpoints (0: only at the end and when interrupted).
    pub checkpoint_interval: usize,
    /// Steps between field snapshots (0: final fields only).
    pub field_interval: usize,
    /// zlib-compress the `.vtu` arrays.
    pub compress: bool,
    /// Wall patches whose force the summary reports.
    pub forces: Vec<String>,
    /// Velocity U of the force coefficients 2F / (ρ U² A) (m/s).
    pub reference_velocity: f64,
    /// Area A of the force coefficients (m²).
    pub reference_area: f64,
}

impl Default for FemCase {
    fn default() -> FemCase {
        FemCase {
            case: CaseInfo {
                name: "cube-fe".into(),
                description: "Lid-driven cube on tetrahedra".into(),
                solver: SolverKind::FiniteElement,
            },
            mesh: FemMesh::default(),
            physics: FemPhysics::default(),
            boundary: BTreeMap::new(),
            numerics: FemNumerics::default(),
            backend: FemBackend::default(),
            output: FemOutput::default(),
        }
    }
}

impl Default for FemMesh {
    fn default() -> FemMesh {
        FemMesh {
            kind: FemMeshKind::TetBox,
            cells: [16; 3],
            size: [1.0; 3],
            origin: [0.0; 3],
            grading: 0.0,
            file: String::new(),
        }
    }
}

impl Default for FemPhysics {
    fn default() -> FemPhysics {
        FemPhysics {
            viscosity: 0.01,
            density: 1.0,
            initial: Initial::Rest,
        }
    }
}

impl Default for FemPatch {
    fn default() -> FemPatch {
        FemPatch {
            kind: FemPatchKind::Wall,
            velocity: [0.0; 3],
            profile: Profile::Uniform,
        }
    }
}

impl Default for FemNumerics {
    fn default() -> FemNumerics {
        let c = Controls::default();
        FemNumerics {
            cfl: c.cfl,
            dt_max: c.dt_max,
            local_time_steps: c.local_time_steps,
            end_time: 1.0,
            max_steps: 100_000,
            steady_tolerance: None,
            cg_tolerance: c.cg_tolerance,
            cg_iterations: c.cg_iterations,
        }
    }
}

impl Default for FemBackend {
    fn default() -> FemBackend {
        FemBackend {
            precision: Precision::F64,
            threads: 0,
        }
    }
}

impl Default for FemOutput {
    fn default() -> FemOutput {
        FemOutput {
            checkpoint_interval: 1000,
            field_interval: 0,
            compress: false,
            forces: Vec::new(),
            reference_velocity: 1.0,
            reference_area: 1.0,
        }
    }
}

/// How a node's velocity is held.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Held {
    /// At this value.
    Value([f64; 3]),
    /// At the Ethier–Steinman solution's.
    EthierSteinman,
}

/// A finite-element case set up in precision `R`: its mesh, the solver at t = 0, what each
/// node's velocity is held at, and the nodes of each patch whose force is reported.
pub struct FemSetup<R: Real = f64> {
    /// The mesh.
    pub mesh: Mesh,
    /// The solver with the initial state.
    pub solver: FractionalStep<R>,
    /// The held velocities.
    pub boundary: Boundary,
    /// `(patch, its nodes)` for `output.forces`.
    pub forces: Vec<(String, Vec<bool>)>,
    /// The state at t = 0.
    initial: Initial,
}

/// What each node's velocity is held at.
pub struct Boundary {
    /// Per node; `None`: free.
    pub held: Vec<Option<Held>>,
    /// The nodes' positions.
    nodes: Vec<[f64; 3]>,
    /// Kinematic viscosity (of the Ethier–Steinman values).
    viscosity: f64,
}

impl Boundary {
    /// The velocity of held node `i` at time `t` (zero for a free node).
    pub fn velocity(&self, i: usize, t: f64) -> [f64; 3] {
        match self.held[i] {
            Some(Held::Value(v)) => v,
            Some(Held::EthierSteinman) => {
                ethier_steinman::velocity(self.nodes[i], t, self.viscosity)
            }
            None => [0.0; 3],
        }
    }
}

impl<R: Real> FemSetup<R> {
    /// The errors against the Ethier–Steinman solution at time `t`, if the case is that
    /// solution's (see [`FemSummary::exact_errors`]).
    pub fn exact_errors(&self, t: f64) -> Option<[f64; 2]> {
        let exact = self.initial == Initial::EthierSteinman;
        exact.then(|| {
            let b = &self.boundary;
            ethier_steinman::errors(&b.nodes, &self.solver, t, b.viscosity)
        })
    }

    /// The force on each patch of `output.forces`, with ρν = `dynamic_viscosity`.
    pub fn forces(&self, dynamic_viscosity: f64) -> Vec<(String, [f64; 3])> {
        (self.forces.iter())
            .map(|(name, on)| (name.clone(), force(&self.solver, on, dynamic_viscosity)))
            .collect()
    }
}

/// A case of type `T` parsed from TOML `text` and checked by `check`; `origin` (file or
/// built-in name) prefixes messages, which name the line and the key.
pub(crate) fn parse_checked<T: serde::de::DeserializeOwned>(
    text: &str,
    origin: &str,
    check: fn(&T, &str, &str) -> Result<(), CaseError>,
) -> Result<T, CaseError> {
    let case: T = toml::from_str(text).map_err(|e| syntax_error(text, origin, &e))?;
    check(&case, text, origin)?;
    Ok(case)
}

/// The first of `values` that is not positive and finite, as an error at its key.
pub(crate) fn positive<'a>(
    origin: &str,
    text: &str,
    values: impl IntoIterator<Item = (&'a str, f64)>,
) -> Result<(), CaseError> {
    match values
        .into_iter()
        .find(|(_, v)| !(*v > 0.0 && v.is_finite()))
    {
        Some((key, v)) => Err(at_key(
            origin,
            text,
            key,
            format!("{v}: must be positive and finite"),
        )),
        None => Ok(()),
    }
}

/// A value error at `key` of a case from `origin` (text `text`).
pub(crate) fn at_key(origin: &str, text: &str, key: &str, message: String) -> CaseError {
    CaseError {
        origin: origin.into(),
        line: key_line(text, key),
        key: Some(key.into()),
        message,
    }
}

impl FemCase {
    /// Parses a finite-element case from TOML `text`; `origin` (file or built-in name)
    /// prefixes messages, which name the line and the key.
    pub fn from_toml(text: &str, origin: &str) -> Result<FemCase, CaseError> {
        parse_checked(text, origin, FemCase::check)
    }

    /// The values the types alone do not bound.
    fn check(&self, text: &str, origin: &str) -> Result<(), CaseError> {
        let bad = |key: &str, message: String| Err(at_key(origin, text, key, message));
        positive(
            origin,
            text,
            [
                ("physics.viscosity", self.physics.viscosity),
                ("physics.density", self.physics.density),
                ("numerics.cfl", self.numerics.cfl),
                ("numerics.dt_max", self.numerics.dt_max),
                ("numerics.end_time", self.numerics.end_time),
                ("output.reference_velocity", self.output.reference_velocity),
                ("output.reference_area", self.output.reference_area),
            ],
        )?;
        let g = self.mesh.grading;
        if !(g >= 0.0 && g.is_finite()) {
            return bad("mesh.grading", format!("{g}: 0 (uniform) or positive"));
        }
        let t = self.numerics.cg_tolerance;
        if !(t > 0.0 && t < 1.0) {
            return bad("numerics.cg_tolerance", format!("{t}: 0 < tolerance < 1"));
        }
        // Below a few ε a solve would stall at its round-off, or stop on the recurrence's
        // drift: refused rather than met in appearance only.
        let precision = self.backend.precision;
        let finest = finest_cg_tolerance(precision);
        if t < finest {
            return bad(
                "numerics.cg_tolerance",
                format!(
                    "{t:e}: below what backend.precision = \"{}\" can reach; at least \
                     {finest:.1e} (32 ε)",
                    precision.name()
                ),
            );
        }
        if let Some(t) = self.numerics.steady_tolerance {
            if !(t > 0.0 && t.is_finite()) {
                return bad(
                    "numerics.steady_tolerance",
                    format!("{t}: must be positive"),
                );
            }
        }
        if self.numerics.local_time_steps && self.numerics.steady_tolerance.is_none() {
            return bad(
                "numerics.local_time_steps",
                "true, but local time steps are not time-accurate: set \
                 numerics.steady_tolerance (a march to steady state)"
                    .into(),
            );
        }
        for (key, value) in [
            ("numerics.max_steps", self.numerics.max_steps),
            ("numerics.cg_iterations", self.numerics.cg_iterations),
        ] {
            if value == 0 {
                return bad(key, "0: at least 1".into());
            }
        }
        if self.case.solver != SolverKind::FiniteElement {
            return bad(
                "case.solver",
                "a finite-element case needs \"finite-element\"".into(),
            );
        }
        match self.mesh.kind {
            FemMeshKind::TetBox if self.mesh.cells.contains(&0) => {
                return bad(
                    "mesh.cells",
                    format!("{:?}: at least 1 per axis", self.mesh.cells),
                )
            }
            FemMeshKind::Gmsh | FemMeshKind::Su2 if self.mesh.file.is_empty() => {
                return bad(
                    "mesh.file",
                    "missing: mesh.kind = \"gmsh\" or \"su2\" reads it".into(),
                )
            }
            FemMeshKind::Gmsh | FemMeshKind::Su2 if self.mesh.grading != 0.0 => {
                return bad(
                    "mesh.grading",
                    format!(
                        "{}: a generated box's only (mesh.kind = \"tet-box\")",
                        self.mesh.grading
                    ),
                )
            }
            _ => {}
        }
        for (name, patch) in &self.boundary {
            if patch.velocity.iter().any(|v| !v.is_finite()) {
                let key = format!("boundary.{name}.velocity");
                return bad(&key, format!("{:?}: not finite", patch.velocity));
            }
        }
        Ok(())
    }

    /// The controls of the solver.
    pub fn controls(&self) -> Controls {
        let n = &self.numerics;
        Controls {
            cfl: n.cfl,
            dt_max: n.dt_max,
            cg_tolerance: n.cg_tolerance,
            cg_iterations: n.cg_iterations,
            local_time_steps: n.local_time_steps,
            ..Controls::default()
        }
    }

    /// `mesh.file` read from `dir` where relative (a case file's directory); the resolved
    /// case then names it so that a restart finds it from anywhere.
    pub fn resolve_mesh_file(&mut self, dir: &Path) {
        let file = PathBuf::from(&self.mesh.file);
        if self.mesh.kind != FemMeshKind::TetBox && file.is_relative() {
            self.mesh.file = dir.join(file).display().to_string();
        }
    }

    /// The mesh: generated, or read (an error names the file).
    pub fn mesh(&self) -> Result<Mesh, MeshError> {
        match self.mesh.kind {
            FemMeshKind::TetBox => {
                let mut mesh = box_mesh(BoxCells::Tet6, self.mesh.cells, self.mesh.size)?;
                if self.mesh.grading > 0.0 {
                    cluster(&mut mesh, self.mesh.size, self.mesh.grading)?;
                }
                let o = self.mesh.origin;
                // Exact where the origin is 0: the lid's nodes stay at y = 1.
                if o != [0.0; 3] {
                    (mesh.nodes.iter_mut()).for_each(|x| (0..3).for_each(|a| x[a] += o[a]));
                }
                Ok(mesh)
            }
            FemMeshKind::Gmsh => ferroflow_mesh::gmsh::read(Path::new(&self.mesh.file)),
            FemMeshKind::Su2 => ferroflow_mesh::su2::read(Path::new(&self.mesh.file)),
        }
    }

    /// Sets the case up on `mesh`: the patches' conditions, the pressure level, the initial
    /// state. Where patches meet, a wall wins over the other kinds and the slower of two walls
    /// wins (the lid cube's edges stay at rest: moving them made its side walls' top row of
    /// faces move, and the centrelines 0.057 from the structured solver's on 16³ instead of
    /// 0.015); an outflow holds the pressure at zero, else the pressure's level is held at
    /// the first node on a patch.
    /// The state, operators and solve are in precision `R`.
    pub fn setup<R: Real>(&self, mesh: Mesh) -> Result<FemSetup<R>, (String, String)> {
        let n = mesh.nodes.len();
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
        for name in &self.output.forces {
            let wall = self.patch(name).kind == FemPatchKind::Wall;
            if !mesh.patches.contains(name) || !wall {
                return Err((
                    "output.forces".into(),
                    format!("\"{name}\": not a wall patch of the mesh"),
                ));
            }
        }
        let mut held: Vec<Option<Held>> = vec![None; n];
        let mut wall_speed = vec![f64::INFINITY; n];
        let mut fixed_p = vec![false; n];
        let nu = self.physics.viscosity;
        for name in &mesh.patches {
            let patch = self.patch(name);
            let on = nodes_of_patch(&mesh, name).expect("a patch of the mesh");
            let (lo, hi) = bounds(&mesh, &on);
            for i in (0..n).filter(|&i| on[i]) {
                let x = mesh.nodes[i];
                match patch.kind {
                    FemPatchKind::Wall => {
                        let speed = norm(patch.velocity);
                        if speed < wall_speed[i] {
                            wall_speed[i] = speed;
                            held[i] = Some(Held::Value(patch.velocity));
                        }
                    }
                    _ if wall_speed[i].is_finite() => {}
                    FemPatchKind::Inflow => {
                        let v = patch.velocity.map(|c| c * patch.profile.factor(x, lo, hi));
                        held[i].get_or_insert(Held::Value(v));
                    }
                    FemPatchKind::EthierSteinman => {
                        held[i].get_or_insert(Held::EthierSteinman);
                    }
                    FemPatchKind::Outflow => {}
                }
                if patch.kind == FemPatchKind::Outflow {
                    fixed_p[i] = true;
                }
            }
        }
        if !fixed_p.contains(&true) {
            let on_patch = |i: usize| mesh.faces.iter().any(|(_, f)| f.contains(&(i as u32)));
            match (0..n).find(|&i| held[i].is_some() || on_patch(i)) {
                Some(first) => fixed_p[first] = true,
                None => {
                    return Err(("mesh".into(), "the mesh has no boundary patches".into()));
                }
            }
        }
        let fluid = Fluid {
            viscosity: nu,
            density: self.physics.density,
        };
        let boundary = Boundary {
            held,
            nodes: mesh.nodes.clone(),
            viscosity: nu,
        };
        let (u, p): (Vec<[f64; 3]>, Vec<f64>) = match self.physics.initial {
            Initial::Rest => (
                (0..n).map(|i| boundary.velocity(i, 0.0)).collect(),
                vec![0.0; n],
            ),
            Initial::EthierSteinman => (
                (mesh.nodes.iter())
                    .map(|&x| ethier_steinman::velocity(x, 0.0, nu))
                    .collect(),
                (mesh.nodes.iter())
                    .map(|&x| ethier_steinman::pressure(x, 0.0, nu))
                    .collect(),
            ),
        };
        let u = u.into_iter().map(|v| v.map(R::of)).collect();
        let p = p.into_iter().map(R::of).collect();
        let fixed: Vec<bool> = boundary.held.iter().map(Option::is_some).collect();
        let solver = FractionalStep::new(&mesh, fluid, self.controls(), fixed, fixed_p, u, p)
            .map_err(|e| ("mesh".to_string(), e.to_string()))?;
        let forces = (self.output.forces.iter())
            .map(|name| (name.clone(), nodes_of_patch(&mesh, name).expect("checked")))
            .collect();
        Ok(FemSetup {
            mesh,
            solver,
            boundary,
            forces,
            initial: self.physics.initial,
        })
    }

    /// The condition of patch `name` (a wall at rest where not listed).
    fn patch(&self, name: &str) -> FemPatch {
        self.boundary.get(name).cloned().unwrap_or_default()
    }

    /// The resolved case as TOML.
    pub fn to_toml(&self) -> String {
        render(self, &FEM_KEYS, false, |_| true)
    }

    /// The resolved case as TOML with every key explained.
    pub fn to_commented_toml(&self) -> String {
        render(self, &FEM_KEYS, true, |_| true)
    }
}

impl Profile {
    /// The profile's factor at `x` on a patch spanning `lo` to `hi`.
    fn factor(self, x: [f64; 3], lo: [f64; 3], hi: [f64; 3]) -> f64 {
        match self {
            Profile::Uniform => 1.0,
            Profile::Parabolic => (0..3)
                .filter(|&a| hi[a] > lo[a])
                .map(|a| {
                    let s = (x[a] - lo[a]) / (hi[a] - lo[a]);
                    4.0 * s * (1.0 - s)
                })
                .product(),
        }
    }
}

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// The bounding box of the nodes `on` marks.
fn bounds(mesh: &Mesh, on: &[bool]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for (x, _) in mesh.nodes.iter().zip(on).filter(|(_, on)| **on) {
        for a in 0..3 {
            lo[a] = lo[a].min(x[a]);
            hi[a] = hi[a].max(x[a]);
        }
    }
    (lo, hi)
}

/// How a finite-element run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FemStatus {
    /// The rates fell below `numerics.steady_tolerance`.
    Steady,
    /// The time reached `numerics.end_time`.
    EndTime,
    /// `numerics.max_steps` came first.
    MaxSteps,
    /// Stopped by a signal; a checkpoint allows continuing.
    Interrupted,
    /// The state became non-finite or grew without bound.
    Diverged,
}

/// Contents of a finite-element run's `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct FemSummary {
    /// Case name.
    pub case: String,
    /// `finite-element`.
    pub solver: SolverKind,
    /// The fluid and the initial state.
    pub physics: FemPhysics,
    /// The `--set KEY=VALUE` overrides (and the options that stand for them).
    pub overrides: Vec<String>,
    /// Nodes, tetrahedra and edges of the mesh.
    pub mesh: MeshSize,
    /// `f64`.
    pub precision: String,
    /// `cpu`.
    pub backend: String,
    /// Time steps done (earlier runs of a restarted one included).
    pub steps: usize,
    /// Time reached (s; with local time steps, by the smallest).
    pub time: f64,
    /// Whether the run reached a steady state.
    pub converged: bool,
    /// How the run ended.
    pub status: FemStatus,
    /// The last step's rates and discrete divergence.
    pub residuals: StepResiduals,
    /// The pressure solves.
    pub cg: CgSummary,
    /// Wall time of the steps (earlier runs of a restarted one included), seconds.
    pub wall_seconds: f64,
    /// Wall time of this invocation, seconds.
    pub total_wall_seconds: f64,
    /// Node updates per second of the steps (over `wall_seconds`).
    pub node_updates_per_second: f64,
    /// Forces on the patches of `output.forces`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forces: Vec<PatchForce>,
    /// With `physics.initial = "ethier-steinman"`: the L2 errors at the time reached,
    /// velocity and pressure (each less its mean), as `ferroflow verify ethier-steinman`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exact_errors: Option<[f64; 2]>,
    /// The lid cube's centreline profiles against published ones, where there are some.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reference: Vec<Deviation>,
}

/// The size of a mesh.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct MeshSize {
    /// Nodes.
    pub nodes: usize,
    /// Tetrahedra.
    pub tetrahedra: usize,
    /// Edges (node pairs of a tetrahedron).
    pub edges: usize,
}

/// A step's rates and divergence.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct StepResiduals {
    /// Largest |Δu|/Δt (m/s²).
    pub velocity_rate: f64,
    /// Largest |Δp|/(ρΔt).
    pub pressure_rate: f64,
    /// RMS over the nodes of the discrete divergence M⁻¹ D u after the projection (1/s).
    pub divergence: f64,
    /// RMS over the nodes of the stabilised continuity equation's residual after the
    /// projection (1/s), which the CG tolerance controls.
    pub continuity: f64,
}

/// The pressure solves of a run.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct CgSummary {
    /// Mean iterations per step.
    pub iterations_per_step: f64,
    /// Iterations of the last step.
    pub last_iterations: usize,
    /// Relative residual of the last step's solve.
    pub last_relative_residual: f64,
}

/// The force of the fluid on a wall patch.
#[derive(Debug, Clone, Serialize)]
pub struct PatchForce {
    /// The patch.
    pub patch: String,
    /// Force (N).
    pub force: [f64; 3],
    /// 2F / (ρ U² A), U and A the case's `output.reference_velocity` and `reference_area`.
    pub coefficients: [f64; 3],
}

/// The default value of a key of [`FEM_KEYS`] (a patch's: that of a patch not listed), if
/// it has one.
pub fn fem_default_value(doc: &KeyDoc) -> Option<toml::Value> {
    default_in(&FemCase::default(), &FemPatch::default(), doc)
}

/// Built-in finite-element cases: `(name, TOML text)`.
pub const FEM_BUILTIN: [(&str, &str); 4] = [
    (
        "cube-fe-re100",
        include_str!("../../../cases/cube-fe-re100.toml"),
    ),
    (
        "cube-fe-re1000",
        include_str!("../../../cases/cube-fe-re1000.toml"),
    ),
    (
        "ethier-steinman-fe",
        include_str!("../../../cases/ethier-steinman-fe.toml"),
    ),
    ("dfg-3d-1z", include_str!("../../../cases/dfg-3d-1z.toml")),
];

/// Every key of a finite-element case file, in file order.
pub const FEM_KEYS: [KeyDoc; 31] = [
    // As a structured case's.
    KEYS[0],
    KEYS[1],
    key(
        "case.solver",
        "string",
        "-",
        "`\"finite-element\"`",
        "The edge-based finite elements on tetrahedra (P1/P1, fractional step, CG pressure; \
         seed 001); f64 or f32, on the CPU or with `--backend cuda` on a GPU",
    ),
    key(
        "mesh.kind",
        "string",
        "-",
        "`\"tet-box\"`, `\"gmsh\"`, `\"su2\"`",
        "`tet-box`: a box of hexahedra split into six tetrahedra each (the lid cube's family), \
         its sides the patches `xmin` … `zmax`; `gmsh`: the tetrahedra and physical surfaces \
         (the patches) of the Gmsh file `mesh.file`; `su2`: the tetrahedra and markers of the \
         SU2 file `mesh.file` (prisms split by `ferroflow mesh convert --tetrahedra`)",
    ),
    key(
        "mesh.cells",
        "array of integers",
        "-",
        "3 values >= 1",
        "`tet-box`: hexahedra per axis",
    ),
    key(
        "mesh.size",
        "array of 3 floats",
        "m",
        "> 0",
        "`tet-box`: edge lengths",
    ),
    key(
        "mesh.origin",
        "array of 3 floats",
        "m",
        "finite",
        "`tet-box`: the low corner",
    ),
    key(
        "mesh.grading",
        "float",
        "-",
        ">= 0",
        "`tet-box`: strength β of the nodes' clustering toward the walls, each coordinate s \
         (0 to 1 across the box) moved to ½ (1 + tanh(β (2s − 1)) / tanh β); the cells at the \
         walls are 1 / cosh² β as wide as the middle's. 0: uniform",
    ),
    key(
        "mesh.file",
        "string",
        "-",
        "a Gmsh `.msh` file (versions 2.2 and 4.1) or an SU2 `.su2` file",
        "`gmsh`, `su2`: the mesh, relative to the case file's directory (a built-in case's: the \
         current directory)",
    ),
    key(
        "physics.viscosity",
        "float",
        "m²/s",
        "> 0",
        "Kinematic viscosity ν",
    ),
    key("physics.density", "float", "kg/m³", "> 0", "Density ρ"),
    key(
        "physics.initial",
        "string",
        "-",
        "`\"rest\"`, `\"ethier-steinman\"`",
        "The state at t = 0: at rest (held nodes at their boundary values, pressure 0), or \
         the Ethier–Steinman solution (a = π/4, d = π/2)",
    ),
    key(
        "boundary.<patch>.kind",
        "string",
        "-",
        "`\"wall\"`, `\"inflow\"`, `\"outflow\"`, `\"ethier-steinman\"`",
        "Condition on mesh patch `<patch>`: `wall`, no slip at `velocity`; `inflow`, \
         `velocity` with `profile`; `outflow`, velocity free, pressure 0; `ethier-steinman`, \
         the exact solution's velocity. Patches not listed are walls at rest. Where patches \
         meet a wall wins, the slower of two walls. Without an outflow the pressure's level is \
         held at the first node on a patch",
    ),
    key(
        "boundary.<patch>.velocity",
        "array of 3 floats",
        "m/s",
        "finite",
        "Wall velocity, or the inflow's (its peak with a parabolic profile)",
    ),
    key(
        "boundary.<patch>.profile",
        "string",
        "-",
        "`\"uniform\"`, `\"parabolic\"`",
        "Inflow profile: `velocity` everywhere, or times 4 s (1 − s) per axis the patch \
         spans (s scaled to the patch's extent; DFG's 16 U_m y z (H − y)(H − z) / H⁴)",
    ),
    key(
        "numerics.cfl",
        "float",
        "-",
        "> 0",
        "Safety factor of the stable time step CFL / (2|u|/h + 4ν/h²)",
    ),
    key("numerics.dt_max", "float", "s", "> 0", "Largest time step"),
    key(
        "numerics.local_time_steps",
        "boolean",
        "-",
        "`true` with `steady_tolerance`",
        "Each node steps by its own stable time step (not time-accurate; the steady state \
         is the same)",
    ),
    key(
        "numerics.end_time",
        "float",
        "s",
        "> 0",
        "The run ends at this time; steps are equal, each no larger than the stable one, so \
         that the last lands on it",
    ),
    key(
        "numerics.max_steps",
        "integer",
        "steps",
        ">= 1",
        "Most time steps",
    ),
    key(
        "numerics.steady_tolerance",
        "float",
        "1/s",
        "> 0",
        "Steady, and the run ends, when max |Δu|/Δt and |Δp|/(ρΔt) of a step fall \
         below it; unset: run to `end_time`",
    ),
    key(
        "numerics.cg_tolerance",
        "float",
        "-",
        "32 ε of the precision <= tolerance < 1",
        "Relative residual of the pressure solve (diagonally scaled); 32 ε is 7.1e-15 in \
         f64, 3.8e-6 in f32",
    ),
    key(
        "numerics.cg_iterations",
        "integer",
        "-",
        ">= 1",
        "Most CG iterations per step",
    ),
    key(
        "backend.precision",
        "string",
        "-",
        "`\"f64\"`, `\"f32\"`",
        "Floating-point precision of the state, operators (assembled in f64, rounded once) and \
         pressure solve; outputs are written in f64. f32 needs numerics.cg_tolerance >= 3.8e-6",
    ),
    key(
        "backend.threads",
        "integer",
        "-",
        ">= 0",
        "CPU threads, 0 = all cores; results are bitwise the same for any count",
    ),
    key(
        "output.checkpoint_interval",
        "integer",
        "steps",
        ">= 0",
        "Steps between checkpoints; 0 = only at the end and when interrupted",
    ),
    key(
        "output.field_interval",
        "integer",
        "steps",
        ">= 0",
        "Steps between snapshots `fields_<step>.vtu`, listed with the final `fields.vtu` in \
         `fields.pvd`; 0 = final fields only",
    ),
    key(
        "output.compress",
        "boolean",
        "-",
        "`true`, `false`",
        "zlib-compress the `.vtu` arrays",
    ),
    key(
        "output.forces",
        "array of strings",
        "-",
        "wall patches",
        "Patches whose force (from their nodes' momentum residuals) and coefficients 2F / (ρ \
         U² A) `summary.json` reports",
    ),
    key(
        "output.reference_velocity",
        "float",
        "m/s",
        "> 0",
        "U of the force coefficients",
    ),
    key(
        "output.reference_area",
        "float",
        "m²",
        "> 0",
        "A of the force coefficients",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_cases_parse_and_read_back_from_their_resolved_form() {
        for (name, text) in FEM_BUILTIN {
            assert_eq!(solver_of(text, name).unwrap(), SolverKind::FiniteElement);
            let case = FemCase::from_toml(text, name).unwrap();
            let again = FemCase::from_toml(&case.to_commented_toml(), name).unwrap();
            assert_eq!(case, again, "{name}");
        }
    }

    #[test]
    fn the_parabolic_inflow_is_the_dfg_profile() {
        let h = ferroflow_fem::dfg::H;
        let (lo, hi) = ([0.0; 3], [0.0, h, h]);
        for x in [[0.0, 0.1, 0.3], [0.0, h / 2.0, h / 2.0], [0.0, 0.4, 0.02]] {
            let ours = 0.45 * Profile::Parabolic.factor(x, lo, hi);
            let dfg = ferroflow_fem::dfg::inflow(x)[0];
            assert!((ours - dfg).abs() < 1e-15, "{ours} against {dfg}");
        }
    }

    #[test]
    fn errors_name_the_key_and_the_value() {
        let e = FemCase::from_toml(
            "[case]\nsolver = \"finite-element\"\n[mesh]\ncell = 3\n",
            "x",
        )
        .unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mesh.cell"), "{e}");
        let text = "[case]\nsolver = \"finite-element\"\n[physics]\nviscosity = -1.0\n";
        let e = FemCase::from_toml(text, "x").unwrap_err().to_string();
        assert!(e.contains("x:4: physics.viscosity: -1"), "{e}");
        let head = "[case]\nsolver = \"finite-element\"\n[mesh]\n";
        let e = FemCase::from_toml(&format!("{head}grading = -0.5\n"), "x").unwrap_err();
        assert!(e.to_string().contains("x:4: mesh.grading: -0.5"), "{e}");
        let gmsh = format!("{head}kind = \"gmsh\"\nfile = \"a.msh\"\ngrading = 1.0\n");
        let e = FemCase::from_toml(&gmsh, "x").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("mesh.grading"), "{e}");
        let e = solver_of("[case]\nsolver = \"spectral\"\n", "y").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("case.solver"), "{e}");
    }

    #[test]
    fn the_lid_cube_holds_its_lid_off_the_edges_and_the_level_at_the_origin() {
        let case = FemCase::from_toml(FEM_BUILTIN[0].1, "cube").unwrap();
        let mut small = case.clone();
        small.mesh.cells = [2; 3];
        let setup = small.setup::<f64>(small.mesh().unwrap()).unwrap();
        let at = |x: [f64; 3]| setup.mesh.nodes.iter().position(|y| *y == x).unwrap();
        let b = &setup.boundary;
        assert_eq!(b.velocity(at([0.5, 1.0, 0.5]), 0.0), [1.0, 0.0, 0.0]);
        assert_eq!(b.held[at([0.0, 1.0, 0.5])], Some(Held::Value([0.0; 3])));
        assert_eq!(b.held[at([0.5, 0.5, 0.5])], None);
        assert_eq!(setup.solver.u[at([0.5, 1.0, 0.5])], [1.0, 0.0, 0.0]);
    }
}
