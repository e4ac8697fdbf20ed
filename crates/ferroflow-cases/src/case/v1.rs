//! Case files of schema v1, read as the same case in schema v2: `[grid]` became `[mesh]`,
//! `case.kind` the physics model with its walls as `[boundary.<patch>]` patches, the lid
//! velocity the `ymax` wall's, and the side L and ΔT of the buoyancy-driven cavity
//! `mesh.length` and the `xmin`/`xmax` wall temperatures. Accepted for one release; `ferroflow
//! run` says so.
use super::{
    syntax_error, BackendSpec, Case, CaseError, CaseInfo, Inputs, MeshKind, MeshSpec, Model,
    NumericsSpec, OutputSpec, ParallelSpec, PatchSpec, PhysicsSpec,
};
use crate::cavity::lid_walls;
use crate::convection::heated_walls;
use crate::walls::PATCHES;
use ferroflow_core::ProblemError;
use serde::Deserialize;

/// Whether `text` is a case of schema v1: it has `[grid]`, `case.kind`, or a physics key that
/// v2 moved (and no v2 section or `physics.model`).
pub fn is_v1(text: &str) -> bool {
    let Ok(table) = text.parse::<toml::Table>() else {
        return false;
    };
    let has = |sec: &str, key: &str| {
        table
            .get(sec)
            .and_then(|s| s.as_table())
            .is_some_and(|s| s.contains_key(key))
    };
    let v2 =
        table.contains_key("mesh") || table.contains_key("boundary") || has("physics", "model");
    let v1 = table.contains_key("grid")
        || has("case", "kind")
        || ["lid_velocity", "length", "delta_t"]
            .iter()
            .any(|k| has("physics", k));
    v1 && !v2
}

/// The v1 key that holds the value of v2 key `key` (itself where the key did not move).
pub fn key_of(key: &str) -> &str {
    match key {
        "mesh.dim" => "grid.dim",
        "mesh.nodes" => "grid.nodes",
        "mesh.length" => "physics.length",
        "boundary.ymax.velocity" => "physics.lid_velocity",
        "boundary" => "physics.delta_t",
        k => k,
    }
}

/// The v2 key of a v1 key that only changed its name.
pub fn renamed(key: &str) -> Option<&'static str> {
    match key {
        "grid.dim" => Some("mesh.dim"),
        "grid.nodes" => Some("mesh.nodes"),
        _ => None,
    }
}

/// Parses v1 `text` and upgrades it.
pub(super) fn read(text: &str, origin: &str) -> Result<Case, CaseError> {
    let v1: CaseV1 = toml::from_str(text).map_err(|e| syntax_error(text, origin, &e))?;
    v1.upgrade()
        .map_err(|e| CaseError::invalid(origin, text, &e))
}

/// A v1 case file.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct CaseV1 {
    case: InfoV1,
    grid: GridV1,
    physics: PhysicsV1,
    numerics: NumericsSpec,
    backend: BackendSpec,
    output: OutputSpec,
    parallel: ParallelSpec,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct InfoV1 {
    #[serde(deserialize_with = "super::plain_name")]
    name: String,
    description: String,
    kind: KindV1,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum KindV1 {
    LidDrivenCavity,
    BuoyancyDrivenCavity,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct GridV1 {
    dim: usize,
    nodes: Vec<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct PhysicsV1 {
    reynolds: f64,
    lid_velocity: f64,
    inputs: Inputs,
    rayleigh: f64,
    prandtl: f64,
    gravity: [f64; 3],
    length: f64,
    expansion: f64,
    viscosity: f64,
    delta_t: f64,
}

impl Default for InfoV1 {
    fn default() -> Self {
        let v2 = CaseInfo::default();
        InfoV1 {
            name: v2.name,
            description: v2.description,
            kind: KindV1::LidDrivenCavity,
        }
    }
}

impl Default for GridV1 {
    fn default() -> Self {
        let v2 = MeshSpec::default();
        GridV1 {
            dim: v2.dim,
            nodes: v2.nodes,
        }
    }
}

impl Default for PhysicsV1 {
    fn default() -> Self {
        let v2 = PhysicsSpec::default();
        PhysicsV1 {
            reynolds: v2.reynolds,
            lid_velocity: 1.0,
            inputs: v2.inputs,
            rayleigh: v2.rayleigh,
            prandtl: v2.prandtl,
            gravity: v2.gravity,
            length: 0.05,
            expansion: v2.expansion,
            viscosity: v2.viscosity,
            delta_t: 7.6009,
        }
    }
}

impl CaseV1 {
    /// The same case in schema v2.
    fn upgrade(self) -> Result<Case, ProblemError> {
        let ph = self.physics;
        let dim = self.grid.dim.clamp(2, 3);
        let (model, length, walls) = match self.case.kind {
            KindV1::LidDrivenCavity => {
                let lid = ProblemError::positive("physics.lid_velocity", ph.lid_velocity)?;
                (Model::Incompressible, 1.0, lid_walls(dim, lid))
            }
            KindV1::BuoyancyDrivenCavity => match ph.inputs {
                Inputs::Nondimensional => (Model::Boussinesq, 1.0, heated_walls(dim, 1.0)),
                Inputs::Dimensional => {
                    let delta_t = ProblemError::positive("physics.delta_t", ph.delta_t)?;
                    (Model::Boussinesq, ph.length, heated_walls(dim, delta_t))
                }
            },
        };
        Ok(Case {
            case: CaseInfo {
                name: self.case.name,
                description: self.case.description,
                ..CaseInfo::default()
            },
            mesh: MeshSpec {
                kind: MeshKind::Box,
                dim: self.grid.dim,
                nodes: self.grid.nodes,
                length,
            },
            physics: PhysicsSpec {
                model,
                reynolds: ph.reynolds,
                inputs: ph.inputs,
                rayleigh: ph.rayleigh,
                prandtl: ph.prandtl,
                gravity: ph.gravity,
                expansion: ph.expansion,
                viscosity: ph.viscosity,
            },
            boundary: PATCHES
                .iter()
                .zip(&walls)
                .map(|(name, wall)| (name.to_string(), PatchSpec::of(wall)))
                .collect(),
            numerics: self.numerics,
            backend: self.backend,
            output: self.output,
            parallel: self.parallel,
        })
    }
}
