//! Case files (TOML): what to solve, how, and where. Every key has a default, so a minimal
//! case names only what differs from the built-in default (2D cavity, Re = 100, 129²).
//! Every key is documented once, in [`KEYS`]; `ferroflow cases show` and the key tables of
//! `docs/cases.md` ([`crate::docs`]) are generated from it.
//!
//! Schema v2: `[mesh]` (the structured box), `[physics]` tagged by `model`
//! (`incompressible`, `boussinesq`), and `[boundary.<patch>]` for the box's sides. Files of
//! schema v1 (`[grid]`, `case.kind`, the lid velocity and the wall temperatures in `[physics]`)
//! are still read ([`v1`]), as the same case.
use crate::convection::{no_temperature_range, HeatedCavity};
use crate::fem::SolverKind;
use crate::walls::{box_problem, temperature_range, Values, Wall, PATCHES};
use ferroflow_ac::{
    Convection, CycleShape, Differences, Implicit, Method, Multigrid, Numerics, Physics, Problem,
    Relaxation,
};
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::{Layout, ProblemError, Real, Side};
use ferroflow_solver::StopCriteria;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use toml::de::{DeTable, DeValue};

mod keys;
pub mod v1;

pub(crate) use keys::key;
pub use keys::{key_sections, sections, KeyDoc, KEYS};

/// A whole case file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Case {
    /// `[case]`: name and description.
    pub case: CaseInfo,
    /// `[mesh]`.
    pub mesh: MeshSpec,
    /// `[physics]`.
    pub physics: PhysicsSpec,
    /// `[boundary.<patch>]`, by patch name. A parsed case holds every patch of its box.
    /// Missing: empty, not the default case's, so that the model chooses its default walls.
    #[serde(default)]
    pub boundary: BTreeMap<String, PatchSpec>,
    /// `[numerics]`.
    pub numerics: NumericsSpec,
    /// `[backend]`.
    pub backend: BackendSpec,
    /// `[output]`.
    pub output: OutputSpec,
    /// `[parallel]`.
    pub parallel: ParallelSpec,
}

/// `[case]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaseInfo {
    /// Name, used for the default output directory: one plain file name.
    #[serde(deserialize_with = "plain_name")]
    pub name: String,
    /// One line saying what the case is.
    pub description: String,
    /// Which solver the case is for ([`crate::fem`] reads finite-element cases).
    pub solver: SolverKind,
}

/// A case name, which names the default output directory `ferroflow-out/<name>/`: one plain
/// file name, so that no name writes (or clears files) outside that directory.
fn plain_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let name = String::deserialize(d)?;
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', ':'])
        || name.chars().any(char::is_control);
    if bad {
        return Err(serde::de::Error::custom(format!(
            "{name:?} is not a plain file name (it names the output directory: no '/', '\\', \
             ':', control characters, and not empty, '.' or '..')"
        )));
    }
    Ok(name)
}

/// Mesh kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MeshKind {
    /// A square or cube of uniformly spaced nodes, its sides the patches `xmin` … `zmax`.
    Box,
}

/// `[mesh]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MeshSpec {
    /// Mesh kind.
    pub kind: MeshKind,
    /// 2 or 3.
    pub dim: usize,
    /// Nodes per axis, boundary nodes included (one value per axis).
    pub nodes: Vec<usize>,
    /// Side L of the square or cube (m).
    pub length: f64,
}

/// Physical models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Model {
    /// Incompressible Navier–Stokes, given by its Reynolds number.
    Incompressible,
    /// Incompressible Navier–Stokes with the energy equation and the Boussinesq buoyancy force.
    Boussinesq,
}

impl Model {
    /// Name as in case files.
    pub fn name(self) -> &'static str {
        match self {
            Model::Incompressible => "incompressible",
            Model::Boussinesq => "boussinesq",
        }
    }
}

/// How Boussinesq physics is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inputs {
    /// By Ra and Pr, in units of L, ΔT and α/L.
    Nondimensional,
    /// By g, β_T, ν and Pr in SI units, with L from the mesh and ΔT from the walls.
    Dimensional,
}

/// `[physics]` section: `model` and that model's keys (a key of another model is an error,
/// [`KeyDoc::model`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhysicsSpec {
    /// Physical model.
    pub model: Model,
    /// Incompressible: Reynolds number U L / ν, U the fastest wall's speed.
    pub reynolds: f64,
    /// Boussinesq: nondimensional (Ra, Pr) or dimensional inputs.
    pub inputs: Inputs,
    /// Boussinesq, nondimensional: Rayleigh number.
    pub rayleigh: f64,
    /// Boussinesq: Prandtl number ν / α.
    pub prandtl: f64,
    /// Boussinesq: gravity vector (m/s²); nondimensional inputs use its direction only.
    pub gravity: [f64; 3],
    /// Boussinesq, dimensional: thermal expansion coefficient β_T (1/K).
    pub expansion: f64,
    /// Boussinesq, dimensional: kinematic viscosity ν (m²/s).
    pub viscosity: f64,
}

/// Kinds of boundary patch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PatchKind {
    /// No-slip wall.
    Wall,
}

/// Thermal condition of a wall.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Thermal {
    /// No heat flux.
    Adiabatic,
    /// Held at `temperature`.
    Isothermal,
}

/// `[boundary.<patch>]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PatchSpec {
    /// Boundary condition kind.
    pub kind: PatchKind,
    /// Wall velocity (m/s), tangential to the wall.
    pub velocity: [f64; 3],
    /// Thermal condition (Boussinesq model).
    pub thermal: Thermal,
    /// Temperature of an isothermal wall.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
}

/// `[numerics]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NumericsSpec {
    /// Courant number of the local pseudo-time step.
    pub cfl: f64,
    /// Artificial compressibility scaling κ (β² = max(|u|², κ U_ref²)).
    pub kappa: f64,
    /// Fourth-difference pressure dissipation coefficient (unset: the differences' default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub c4: Option<f64>,
    /// Form of the convective terms.
    pub convection: ConvectionKind,
    /// Order of the central differences.
    pub differences: DifferencesKind,
    /// Relative residual at which the run has converged.
    pub tolerance: f64,
    /// Iteration limit.
    pub max_iterations: usize,
    /// Iterations between residual checks.
    pub check_interval: usize,
    /// How each pseudo-time iteration advances the state.
    pub method: MethodKind,
    /// Relaxation of the implicit system.
    pub relaxation: RelaxationKind,
    /// Relaxation sweeps per iteration (unset: the relaxation's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sweeps: Option<usize>,
    /// Δτ_imp / Δτ of the implicit operator's pseudo-time term (`inf`: none; unset: the
    /// relaxation's default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub implicit_cfl: Option<f64>,
    /// Precision of the implicit operator and relaxation.
    pub implicit_precision: Precision,
    /// Most multigrid levels (1: one grid).
    pub multigrid: usize,
    /// Multigrid iterations before and after the correction, and on the coarsest level.
    pub multigrid_sweeps: [usize; 3],
    /// Multigrid cycle shape.
    pub multigrid_cycle: CycleKind,
    /// Whether multigrid starts by full multigrid.
    pub multigrid_fmg: bool,
}

/// `numerics.differences`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
pub enum DifferencesKind {
    /// Three-point differences (seed 000).
    #[serde(rename = "second-order")]
    #[value(name = "second-order")]
    Second,
    /// Five-point differences.
    #[serde(rename = "fourth-order")]
    #[value(name = "fourth-order")]
    Fourth,
}

impl DifferencesKind {
    /// The scheme's differences.
    pub fn order(self) -> Differences {
        match self {
            DifferencesKind::Second => Differences::Second,
            DifferencesKind::Fourth => Differences::Fourth,
        }
    }

    /// The pressure dissipation's coefficient where `numerics.c4` is not set: 0.02 (seed
    /// 000's) with second-order differences; 0.01 with fourth-order ones, whose error the
    /// dissipation then dominates (2D cavity, Re = 1000, 129²: 0.02 / 0.01 / 0.005 leave the
    /// centrelines 9.3e-3 / 7.4e-3 / 5.9e-3 from the grid-converged ones, in 151 / 151 / 201
    /// multigrid cycles).
    pub fn c4(self) -> f64 {
        match self {
            DifferencesKind::Second => 0.02,
            DifferencesKind::Fourth => 0.01,
        }
    }
}

/// `numerics.convection`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ConvectionKind {
    /// u·∇q (seed 000).
    Advective,
    /// The mean of u·∇q and ∇·(u q).
    SkewSymmetric,
}

impl ConvectionKind {
    /// The scheme's form.
    pub fn form(self) -> Convection {
        match self {
            ConvectionKind::Advective => Convection::Advective,
            ConvectionKind::SkewSymmetric => Convection::SkewSymmetric,
        }
    }
}

/// `numerics.multigrid_cycle`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CycleKind {
    /// Each coarser level once per visit of the finer.
    V,
    /// Twice.
    W,
}

/// `numerics.method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MethodKind {
    /// The fastest of the two where the run goes (see [`Case::resolve_method`]): implicit,
    /// but explicit on a grid cut into blocks on GPUs.
    Auto,
    /// One explicit local pseudo-time step per iteration.
    Explicit,
    /// The delta form relaxed against an approximate Jacobian.
    Implicit,
}

impl MethodKind {
    /// Name as in case files.
    pub fn name(self) -> &'static str {
        match self {
            MethodKind::Auto => "auto",
            MethodKind::Explicit => "explicit",
            MethodKind::Implicit => "implicit",
        }
    }
}

/// `numerics.relaxation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RelaxationKind {
    /// The backend's: symmetric Gauss–Seidel on a CPU, Jacobi on a GPU.
    Auto,
    /// Symmetric Gauss–Seidel (one sweep: LU-SGS).
    Sgs,
    /// Jacobi.
    Jacobi,
    /// Red–black Gauss–Seidel.
    RedBlack,
    /// Gauss–Seidel along x, Jacobi across.
    Line,
}

/// Compute backends a case can ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    /// All CPU cores.
    Cpu,
    /// An NVIDIA GPU.
    Cuda,
    /// A GPU if one is usable, else the CPU.
    Auto,
}

/// Floating-point precision of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Double precision.
    F64,
    /// Single precision.
    F32,
}

/// `[backend]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendSpec {
    /// Which backend.
    pub kind: BackendKind,
    /// Floating-point precision.
    pub precision: Precision,
    /// CPU threads (0 = all cores).
    pub threads: usize,
    /// CUDA device ordinal.
    pub device: usize,
    /// Autotune the GPU launch shape (cached per device, grid, precision and kernel source).
    pub tune: bool,
    /// Let the CUDA compiler fuse multiplies and adds: fewer instructions, but results no
    /// longer bitwise equal to the CPU backend's.
    pub fmad: bool,
}

/// `[output]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSpec {
    /// Iterations between checkpoints (0: only at the end and when interrupted).
    pub checkpoint_interval: usize,
    /// Iterations between field snapshots (0: final fields only).
    pub field_interval: usize,
    /// zlib-compress the arrays of the `.vti` files.
    pub compress: bool,
}

/// How GPU blocks exchange halos.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Exchange {
    /// Device to device.
    Peer,
    /// Staged through host memory.
    Host,
}

/// `[parallel]` section: the grid cut into blocks, spread over threads, GPUs and processes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ParallelSpec {
    /// Blocks per axis; empty: `count` blocks, cut automatically.
    pub blocks: Vec<usize>,
    /// Number of blocks when `blocks` is empty; 0: one, or one per MPI process.
    pub count: usize,
    /// GPU ordinals the CUDA blocks are spread over; empty: `backend.device`.
    pub devices: Vec<usize>,
    /// How GPU halos travel.
    pub exchange: Exchange,
    /// Pack GPU faces into contiguous buffers on the device (else copy them as strided boxes).
    pub packing: bool,
    /// Compute interior nodes while halos travel.
    pub overlap: bool,
}

impl Default for Case {
    fn default() -> Self {
        let mut case = Case {
            case: CaseInfo::default(),
            mesh: MeshSpec::default(),
            physics: PhysicsSpec::default(),
            boundary: BTreeMap::new(),
            numerics: NumericsSpec::default(),
            backend: BackendSpec::default(),
            output: OutputSpec::default(),
            parallel: ParallelSpec::default(),
        };
        case.complete_boundary();
        case
    }
}

impl Default for CaseInfo {
    fn default() -> Self {
        CaseInfo {
            name: "cavity2d-re100".into(),
            description: "2D lid-driven cavity, Re = 100, 129 x 129 nodes".into(),
            solver: SolverKind::Structured,
        }
    }
}

impl Default for MeshSpec {
    fn default() -> Self {
        MeshSpec {
            kind: MeshKind::Box,
            dim: 2,
            nodes: vec![129, 129],
            length: 1.0,
        }
    }
}

impl Default for PhysicsSpec {
    fn default() -> Self {
        // Boussinesq's dimensional defaults: air (with L = 5 cm and ΔT = 7.6009 K, Ra = 1e5).
        PhysicsSpec {
            model: Model::Incompressible,
            reynolds: 100.0,
            inputs: Inputs::Nondimensional,
            rayleigh: 1e5,
            prandtl: 0.71,
            gravity: [0.0, -9.81, 0.0],
            expansion: 3.4e-3,
            viscosity: 1.5e-5,
        }
    }
}

impl Default for PatchSpec {
    fn default() -> Self {
        PatchSpec {
            kind: PatchKind::Wall,
            velocity: [0.0; 3],
            thermal: Thermal::Adiabatic,
            temperature: None,
        }
    }
}

impl Default for NumericsSpec {
    fn default() -> Self {
        NumericsSpec {
            cfl: 0.8,
            kappa: 1.0,
            c4: None,
            convection: ConvectionKind::Advective,
            differences: DifferencesKind::Second,
            tolerance: 1e-7,
            max_iterations: 200_000,
            check_interval: 50,
            method: MethodKind::Auto,
            relaxation: RelaxationKind::Auto,
            sweeps: None,
            implicit_cfl: None,
            implicit_precision: Precision::F32,
            multigrid: 1,
            multigrid_sweeps: [1, 1, 8],
            multigrid_cycle: CycleKind::V,
            multigrid_fmg: true,
        }
    }
}

impl Default for BackendSpec {
    fn default() -> Self {
        BackendSpec {
            kind: BackendKind::Cpu,
            precision: Precision::F64,
            threads: 0,
            device: 0,
            tune: true,
            fmad: false,
        }
    }
}

impl Default for ParallelSpec {
    fn default() -> Self {
        ParallelSpec {
            blocks: Vec::new(),
            count: 0,
            devices: Vec::new(),
            exchange: Exchange::Peer,
            packing: false,
            overlap: true,
        }
    }
}

impl Default for OutputSpec {
    fn default() -> Self {
        OutputSpec {
            checkpoint_interval: 1000,
            field_interval: 0,
            compress: false,
        }
    }
}

/// A case that cannot be used, located as precisely as the input allows.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseError {
    /// File name or built-in case name.
    pub origin: String,
    /// Line in the origin (1-based), where known.
    pub line: Option<usize>,
    /// Dotted key at fault, where known.
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        match &self.key {
            Some(key) if !self.message.starts_with(key.as_str()) => {
                write!(f, "{key}: {}", self.message)
            }
            _ => write!(f, "{}", self.message),
        }
    }
}

impl std::error::Error for CaseError {}

impl CaseError {
    /// An invalid value of the case read from `text`, located at its key's line.
    pub fn invalid(origin: &str, text: &str, error: &ProblemError) -> CaseError {
        // A schema v1 file sets some values under their v1 keys.
        let key = problem_key(error).map(|k| match v1::is_v1(text) {
            true => v1::key_of(k),
            false => k,
        });
        CaseError {
            origin: origin.into(),
            line: key.and_then(|k| key_line(text, k)),
            key: key.map(str::to_string),
            message: error.to_string(),
        }
    }
}

/// The case key a problem error is about, if any.
pub fn problem_key(error: &ProblemError) -> Option<&str> {
    match error {
        ProblemError::OutOfRange { name, .. } => Some(name),
        ProblemError::Key { key, .. } => Some(key),
        ProblemError::GridTooSmall { .. } => Some("mesh.nodes"),
        ProblemError::Dimension(_) => Some("mesh.dim"),
        ProblemError::Shape { .. } => None,
    }
}

/// A case value as TOML. Floats below 1e-2 and from 1e4 in exponent form, which reads better
/// (1e5, 3.4e-3, 1e-7 rather than 100000.0, 0.0034, 0.0000001); `{:e}` and `{:?}` both give
/// the shortest text that reads back to the same value.
pub(crate) fn value_text(value: &toml::Value) -> String {
    match value {
        toml::Value::Float(x) if x.is_finite() && *x != 0.0 && !(1e-2..1e4).contains(&x.abs()) => {
            format!("{x:e}")
        }
        toml::Value::Float(x) => format!("{x:?}"),
        toml::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(value_text).collect();
            format!("[{}]", items.join(", "))
        }
        v => v.to_string(),
    }
}

/// `text` as `#` comment lines of at most 96 characters.
fn wrap_comment(text: &str) -> String {
    let mut out = String::new();
    let mut line = String::from("#");
    // Counted in characters, not bytes: the texts have Greek letters and superscripts.
    let mut width = 1;
    for word in text.split_whitespace() {
        let chars = word.chars().count();
        if width + 1 + chars > 96 && width > 1 {
            out += &line;
            out.push('\n');
            line = String::from("#");
            width = 1;
        }
        line.push(' ');
        line.push_str(word);
        width += 1 + chars;
    }
    out + &line + "\n"
}

/// Line (1-based) of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Line where the dotted `key` is set in `text`, if it is.
pub fn key_line(text: &str, key: &str) -> Option<usize> {
    let doc = DeTable::parse(text).ok()?;
    let mut table = doc.get_ref();
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        let (k, v) = table.iter().find(|(k, _)| k.get_ref() == part)?;
        if parts.peek().is_none() {
            return Some(line_of(text, k.span().start));
        }
        table = v.get_ref().as_table()?;
    }
    None
}

/// Dotted key whose name or value covers byte `offset` of `text`.
fn key_at(text: &str, offset: usize) -> Option<String> {
    fn search(table: &DeTable, offset: usize, path: &str) -> Option<String> {
        table.iter().find_map(|(k, v)| {
            let here = if path.is_empty() {
                k.get_ref().to_string()
            } else {
                format!("{path}.{}", k.get_ref())
            };
            let inner = match v.get_ref() {
                DeValue::Table(t) => search(t, offset, &here),
                _ => None,
            };
            let covers = |s: std::ops::Range<usize>| s.contains(&offset);
            inner.or_else(|| (covers(k.span()) || covers(v.span())).then_some(here))
        })
    }
    search(DeTable::parse(text).ok()?.get_ref(), offset, "")
}

/// The default value of a key (a patch's: that of a patch not listed), if it has one.
pub fn default_value(doc: &KeyDoc) -> Option<toml::Value> {
    default_in(&Case::default(), &PatchSpec::default(), doc)
}

/// The value of `doc`'s key in the default `case`, or for a patch's key in `patch`.
pub(crate) fn default_in(
    case: &impl Serialize,
    patch: &impl Serialize,
    doc: &KeyDoc,
) -> Option<toml::Value> {
    let (sec, name) = doc.parts();
    match name.strip_prefix("<patch>.") {
        Some(name) => toml::Table::try_from(patch)
            .expect("a patch serialises")
            .remove(name),
        None => toml::Table::try_from(case)
            .expect("a case always serialises")
            .remove(sec)
            .and_then(|t| t.as_table()?.get(name).cloned()),
    }
}

/// The case must be one `case.resolved.toml` and checkpoints can hold and read back: no NaN or
/// infinity (TOML writes them, but they mean nothing in any key), no count above the largest
/// TOML integer.
fn check_writable(text: &str, origin: &str, case: &Case) -> Result<(), CaseError> {
    fn non_finite(value: &toml::Value, path: &str) -> Option<(String, f64)> {
        match value {
            // The one key where infinity means something: no pseudo-time term.
            toml::Value::Float(x) if *x == f64::INFINITY && path == "numerics.implicit_cfl" => None,
            toml::Value::Float(x) if !x.is_finite() => Some((path.to_string(), *x)),
            toml::Value::Array(items) => items.iter().find_map(|v| non_finite(v, path)),
            toml::Value::Table(t) => t.iter().find_map(|(k, v)| {
                non_finite(
                    v,
                    &format!("{path}{}{k}", if path.is_empty() { "" } else { "." }),
                )
            }),
            _ => None,
        }
    }
    let table = toml::Table::try_from(case).map_err(|_| CaseError {
        origin: origin.into(),
        line: None,
        key: None,
        message: format!(
            "a count above {}, the largest integer a case file holds",
            i64::MAX
        ),
    })?;
    match non_finite(&toml::Value::Table(table), "") {
        Some((key, x)) => Err(CaseError {
            origin: origin.into(),
            line: key_line(text, &key),
            message: format!("{x} is not a finite number"),
            key: Some(key),
        }),
        None => Ok(()),
    }
}

/// `case` (serialised) with the keys `keys` documents that `include` takes, in their order,
/// a table per patch (box sides first in [`PATCHES`] order), the section headers, and with
/// `comments` each key's doc (for the first patch only).
pub(crate) fn render(
    case: &impl Serialize,
    keys: &'static [KeyDoc],
    comments: bool,
    include: impl Fn(&KeyDoc) -> bool,
) -> String {
    let table = toml::Table::try_from(case).expect("a case always serialises");
    let mut out = String::new();
    // A key left unset (`None`: the backend or the relaxation decides) is shown commented
    // out where comments are wanted, and left out otherwise.
    let line = |doc: &KeyDoc, name: &str, value: Option<&toml::Value>, comment: bool| {
        let mut text = String::new();
        if comment {
            let unit = match doc.unit {
                "-" => String::new(),
                u => format!(" Unit: {u}."),
            };
            let words = format!("{}.{unit} Allowed: {}.", doc.meaning, doc.allowed);
            // Backticks mark code in the Markdown docs, and `\|` a bar in their tables; in a
            // comment they are noise.
            text += &wrap_comment(&words.replace('`', "").replace("\\|", "|"));
        }
        match value {
            Some(value) => text + &format!("{name} = {}\n", value_text(value)),
            None if comment => text + &format!("# {name} = (unset)\n"),
            None => text,
        }
    };
    for keys in sections(keys) {
        if !out.is_empty() {
            out.push('\n');
        }
        let sec = keys[0].parts().0;
        if sec == "boundary" {
            for (p, (patch, values)) in patches_in_order(&table).into_iter().enumerate() {
                if p > 0 {
                    out.push('\n');
                }
                out += &format!("[boundary.{patch}]\n");
                for doc in keys {
                    let name = doc.parts().1.trim_start_matches("<patch>.");
                    if let Some(value) = values.get(name) {
                        out += &line(doc, name, Some(value), comments && p == 0);
                    }
                }
            }
            continue;
        }
        out += &format!("[{sec}]\n");
        for doc in keys.iter().filter(|d| include(d)) {
            let name = doc.parts().1;
            out += &line(doc, name, table[sec].get(name), comments);
        }
    }
    out
}

/// The serialised patches of `table`, box sides first in [`PATCHES`] order.
fn patches_in_order(table: &toml::Table) -> Vec<(&String, &toml::Table)> {
    let mut patches: Vec<_> = table["boundary"]
        .as_table()
        .expect("the boundary is a table")
        .iter()
        .map(|(name, values)| (name, values.as_table().expect("a patch is a table")))
        .collect();
    patches.sort_by_key(|(name, _)| PATCHES.iter().position(|p| p == name));
    patches
}

/// A parse error of `text`, located at its line and key.
pub(crate) fn syntax_error(text: &str, origin: &str, e: &toml::de::Error) -> CaseError {
    let at = e.span().map(|s| s.start);
    let line = at.map(|o| line_of(text, o));
    let mut message = e.message().trim().to_string();
    // A document with a duplicate key does not parse, so the key is read off its line.
    let duplicate = line
        .filter(|_| message.starts_with("duplicate key"))
        .and_then(|l| duplicate_key(text, l));
    if let Some((_, first)) = &duplicate {
        message = match first {
            Some(first) => format!("set twice (first on line {first})"),
            None => "set twice".into(),
        };
    }
    CaseError {
        origin: origin.into(),
        line,
        key: duplicate
            .map(|(key, _)| key)
            .or_else(|| at.and_then(|o| key_at(text, o))),
        message,
    }
}

/// The dotted key set (or table opened) on 1-based `line` of `text`, and the earlier line that
/// set it too, if found.
fn duplicate_key(text: &str, line: usize) -> Option<(String, Option<usize>)> {
    let lines: Vec<&str> = text.lines().collect();
    lines.get(line.checked_sub(1)?)?;
    let name = |l: &str| -> Option<String> {
        let l = l.trim();
        let header = l.strip_prefix('[').and_then(|h| h.split(']').next());
        match header {
            Some(h) => Some(h.trim_matches(['[', ' ']).to_string()),
            None => Some(l.split_once('=')?.0.trim().to_string()),
        }
    };
    // The table a line is in: the last header above it.
    let table = |n: usize| {
        lines[..n]
            .iter()
            .rev()
            .find(|l| l.trim_start().starts_with('['))
            .and_then(|l| name(l))
    };
    let key = |n: usize| -> Option<String> {
        let l = lines[n].trim();
        if l.starts_with('[') {
            return name(l);
        }
        let own = name(l)?;
        Some(match table(n) {
            Some(t) => format!("{t}.{own}"),
            None => own,
        })
    };
    let dotted = key(line - 1)?;
    let first = (0..line - 1)
        .find(|&n| !lines[n].trim_start().starts_with('#') && key(n).as_deref() == Some(&dotted))
        .map(|n| n + 1);
    Some((dotted, first))
}

impl Case {
    /// Parses a case from TOML text of schema v2 or v1; `origin` (file or built-in name)
    /// prefixes messages, which name the line and the key (syntax errors, unknown keys, wrong
    /// types, keys of another physical model). The boundary is completed: every patch of the
    /// box is listed ([`Case::complete_boundary`]).
    pub fn from_toml(text: &str, origin: &str) -> Result<Case, CaseError> {
        let mut case = if v1::is_v1(text) {
            v1::read(text, origin)?
        } else {
            let case: Case = toml::from_str(text).map_err(|e| syntax_error(text, origin, &e))?;
            case.check_model_keys(text, origin)?;
            if case.case.solver != SolverKind::Structured {
                return Err(CaseError {
                    origin: origin.into(),
                    line: key_line(text, "case.solver"),
                    key: Some("case.solver".into()),
                    message: "a finite-element case, not one of the structured solver".into(),
                });
            }
            case
        };
        case.complete_boundary();
        check_writable(text, origin, &case)?;
        Ok(case)
    }

    /// Physics keys set in `text` that belong to another model than the case's.
    fn check_model_keys(&self, text: &str, origin: &str) -> Result<(), CaseError> {
        let model = self.physics.model;
        let Some(written) = DeTable::parse(text)
            .ok()
            .and_then(|doc| doc.get_ref().get("physics").cloned())
        else {
            return Ok(());
        };
        let Some(written) = written.get_ref().as_table() else {
            return Ok(());
        };
        for (name, _) in written.iter() {
            let key = format!("physics.{}", name.get_ref());
            let foreign = KEYS
                .iter()
                .find(|doc| doc.key == key)
                .and_then(|doc| doc.model)
                .filter(|&m| m != model);
            if let Some(theirs) = foreign {
                let ours: Vec<&str> = KEYS
                    .iter()
                    .filter(|doc| doc.model == Some(model))
                    .map(|doc| doc.parts().1)
                    .collect();
                return Err(CaseError {
                    origin: origin.into(),
                    line: key_line(text, &key),
                    key: Some(key),
                    message: format!(
                        "is a key of physics.model = \"{}\", not of \"{}\" (its keys: {})",
                        theirs.name(),
                        model.name(),
                        ours.join(", ")
                    ),
                });
            }
        }
        Ok(())
    }

    /// Lists every patch of the box: without any `[boundary]` the model's classic cavity
    /// (incompressible: `ymax` moving with u = 1; Boussinesq: `xmin` at +0.5, `xmax` at −0.5),
    /// and patches not given are adiabatic walls at rest.
    pub fn complete_boundary(&mut self) {
        let dim = self.mesh.dim.clamp(2, 3);
        if self.boundary.is_empty() {
            let walls = match self.physics.model {
                Model::Incompressible => crate::cavity::lid_walls(dim, 1.0),
                Model::Boussinesq => crate::convection::heated_walls(dim, 1.0),
            };
            for (name, wall) in PATCHES.iter().zip(walls) {
                self.boundary.insert(name.to_string(), PatchSpec::of(&wall));
            }
        }
        for name in &PATCHES[..2 * dim] {
            self.boundary.entry(name.to_string()).or_default();
        }
    }

    /// The resolved case (every default filled in) as TOML.
    pub fn to_toml(&self) -> String {
        self.render(false)
    }

    /// The resolved case as TOML with every key explained (meaning, unit, allowed values).
    pub fn to_commented_toml(&self) -> String {
        self.render(true)
    }

    /// Every key of [`KEYS`] in order (the model's physics keys, a table per patch), its
    /// section headers, and with `comments` its doc (for the first patch only).
    fn render(&self, comments: bool) -> String {
        let model = self.physics.model;
        render(self, &KEYS, comments, |doc| {
            doc.model.is_none_or(|m| m == model)
        })
    }

    /// Nodes per axis as a 3-array (axis 2 = 1 in 2D).
    pub fn nodes(&self) -> Result<[usize; 3], ProblemError> {
        let dim = self.mesh.dim;
        if !(2..=3).contains(&dim) {
            return Err(ProblemError::Dimension(dim));
        }
        if self.mesh.nodes.len() != dim {
            return Err(ProblemError::key(
                "mesh.nodes",
                format!(
                    "{:?} has {} values; mesh.dim = {dim} needs one node count per axis",
                    self.mesh.nodes,
                    self.mesh.nodes.len()
                ),
            ));
        }
        let mut n = [1; 3];
        n[..dim].copy_from_slice(&self.mesh.nodes);
        if Layout::try_new(dim, n).is_none() {
            return Err(ProblemError::key(
                "mesh.nodes",
                format!(
                    "{:?}: the grid's arrays do not fit in the address space",
                    self.mesh.nodes
                ),
            ));
        }
        Ok(n)
    }

    /// Scheme parameters; U_ref is set by the physics ([`Case::problem`]).
    pub fn numerics(&self) -> Numerics {
        let s = &self.numerics;
        let method = match s.method {
            MethodKind::Explicit => Method::Explicit,
            MethodKind::Implicit | MethodKind::Auto => Method::Implicit(Implicit {
                relaxation: match s.relaxation {
                    RelaxationKind::Auto => None,
                    RelaxationKind::Sgs => Some(Relaxation::Sgs),
                    RelaxationKind::Jacobi => Some(Relaxation::Jacobi),
                    RelaxationKind::RedBlack => Some(Relaxation::RedBlack),
                    RelaxationKind::Line => Some(Relaxation::Line),
                },
                sweeps: s.sweeps,
                cfl: s.implicit_cfl,
                single: s.implicit_precision == Precision::F32,
            }),
        };
        let [pre, post, coarsest] = s.multigrid_sweeps;
        Numerics {
            cfl: s.cfl,
            kappa: s.kappa,
            c4: s.c4.unwrap_or(s.differences.c4()),
            convection: s.convection.form(),
            differences: s.differences.order(),
            method,
            multigrid: Multigrid {
                levels: s.multigrid,
                shape: match s.multigrid_cycle {
                    CycleKind::V => CycleShape::V,
                    CycleKind::W => CycleShape::W,
                },
                fmg: s.multigrid_fmg,
                pre,
                post,
                coarsest,
            },
            ..Numerics::default()
        }
    }

    /// Decides `numerics.method = "auto"` for a run on GPUs (`gpu`) cut into `blocks`
    /// blocks: the implicit method, which converges in far fewer iterations and less time on
    /// the CPU and on one GPU, except on GPU blocks, whose implicit relaxation exchanges its
    /// halos through the host after every sweep and is slower than the explicit scheme's
    /// device-side exchange. Left unresolved, `auto` runs as `implicit`.
    pub fn resolve_method(&mut self, gpu: bool, blocks: usize) {
        if self.numerics.method == MethodKind::Auto {
            self.numerics.method = match gpu && blocks > 1 {
                true => MethodKind::Explicit,
                false => MethodKind::Implicit,
            };
        }
    }

    /// Sets `numerics.c4`, where unset, to the default of the differences asked for
    /// ([`DifferencesKind::c4`]), so that the resolved case says which.
    pub fn resolve_dissipation(&mut self) {
        let n = &mut self.numerics;
        n.c4.get_or_insert(n.differences.c4());
    }

    /// Stop criteria.
    pub fn stop(&self) -> Result<StopCriteria, ProblemError> {
        let s = &self.numerics;
        if !(s.tolerance > 0.0 && s.tolerance < 1.0) {
            return Err(ProblemError::OutOfRange {
                name: "numerics.tolerance",
                value: s.tolerance,
                allowed: "0 < tolerance < 1",
            });
        }
        for (name, value) in [
            ("numerics.max_iterations", s.max_iterations),
            ("numerics.check_interval", s.check_interval),
        ] {
            if value == 0 {
                return Err(ProblemError::OutOfRange {
                    name,
                    value: 0.0,
                    allowed: "at least 1",
                });
            }
        }
        Ok(StopCriteria {
            tolerance: s.tolerance,
            max_iterations: s.max_iterations,
            check_interval: s.check_interval,
            stall_checks: match s.method {
                MethodKind::Explicit => ferroflow_solver::STALL_CHECKS,
                MethodKind::Implicit | MethodKind::Auto => ferroflow_solver::IMPLICIT_STALL_CHECKS,
            },
        })
    }

    /// The grid cut into blocks for a run of `processes` processes (1 without MPI).
    pub fn decomposition(&self, processes: usize) -> Result<Decomposition, ProblemError> {
        let (dim, n, p) = (self.mesh.dim, self.nodes()?, &self.parallel);
        let decomposition = if p.blocks.is_empty() {
            let count = if p.count == 0 { processes } else { p.count };
            Decomposition::automatic(dim, n, count)?
        } else {
            if p.blocks.len() != dim {
                return Err(ProblemError::key(
                    "parallel.blocks",
                    format!(
                        "{:?} has {} values; give [] or one block count per axis (mesh.dim = \
                         {dim})",
                        p.blocks,
                        p.blocks.len()
                    ),
                ));
            }
            let mut blocks = [1; 3];
            blocks[..dim].copy_from_slice(&p.blocks);
            let d = Decomposition::new(dim, n, blocks)?;
            if p.count != 0 && p.count != d.count() {
                return Err(ProblemError::OutOfRange {
                    name: "parallel.count",
                    value: p.count as f64,
                    allowed: "0 or the number of blocks parallel.blocks makes",
                });
            }
            d
        };
        // Multigrid levels are cut into the same blocks, before nodes every level keeps.
        let levels = self.numerics.multigrid;
        let decomposition = match levels > 1 && decomposition.count() > 1 {
            true => ferroflow_ac::multigrid::level_cuts(dim, n, decomposition.blocks, levels)?
                .swap_remove(0),
            false => decomposition,
        };
        if decomposition.count() < processes {
            return Err(ProblemError::OutOfRange {
                name: if p.blocks.is_empty() {
                    "parallel.count"
                } else {
                    "parallel.blocks"
                },
                value: decomposition.count() as f64,
                allowed: "at least one block per MPI process",
            });
        }
        Ok(decomposition)
    }

    /// The box's walls, one per side in [`PATCHES`] order, checked.
    pub fn walls(&self) -> Result<Vec<Wall>, ProblemError> {
        let dim = self.mesh.dim;
        if !(2..=3).contains(&dim) {
            return Err(ProblemError::Dimension(dim));
        }
        if let Some(name) = self
            .boundary
            .keys()
            .find(|n| !PATCHES[..2 * dim].contains(&n.as_str()))
        {
            return Err(ProblemError::key(
                format!("boundary.{name}"),
                format!(
                    "not a patch of the {dim}D box (its patches: {})",
                    PATCHES[..2 * dim].join(", ")
                ),
            ));
        }
        let rest = PatchSpec::default();
        PATCHES[..2 * dim]
            .iter()
            .enumerate()
            .map(|(side, name)| {
                self.boundary.get(*name).unwrap_or(&rest).wall(
                    name,
                    side / 2,
                    dim,
                    self.physics.model,
                )
            })
            .collect()
    }

    /// The resolved Boussinesq physics: L is the mesh's side, ΔT the span of the isothermal
    /// walls' temperatures.
    pub fn heated_cavity(&self) -> Result<HeatedCavity, ProblemError> {
        let ph = &self.physics;
        let (cold, hot) = temperature_range(&self.walls()?).ok_or_else(no_temperature_range)?;
        let delta_t = hot - cold;
        match ph.inputs {
            Inputs::Nondimensional => {
                if self.mesh.length != 1.0 {
                    return Err(ProblemError::key(
                        "mesh.length",
                        format!(
                            "{} with physics.inputs = \"nondimensional\", whose unit of length \
                             is the side L: it must be 1",
                            self.mesh.length
                        ),
                    ));
                }
                if delta_t != 1.0 {
                    return Err(ProblemError::key(
                        "boundary",
                        format!(
                            "the isothermal walls span ΔT = {delta_t} with physics.inputs = \
                             \"nondimensional\", whose unit of temperature is ΔT: the hottest \
                             minus the coldest must be 1"
                        ),
                    ));
                }
                HeatedCavity::nondimensional(ph.rayleigh, ph.prandtl, ph.gravity)
            }
            Inputs::Dimensional => HeatedCavity::dimensional(
                self.mesh.length,
                ph.gravity,
                ph.expansion,
                ph.viscosity,
                ph.prandtl,
                delta_t,
            ),
        }
    }

    /// The problem in precision `R`.
    pub fn problem<R: Real>(&self) -> Result<Problem<R>, ProblemError> {
        self.problem_holding(Values::Whole)
    }

    /// The problem in precision `R` for a grid cut into blocks over several processes: its
    /// initial state as a rule only, which each block evaluates on its own nodes.
    pub fn problem_in_blocks<R: Real>(&self) -> Result<Problem<R>, ProblemError> {
        self.problem_holding(Values::RuleOnly)
    }

    /// The problem in precision `R`, with the initial values `values` says.
    fn problem_holding<R: Real>(&self, values: Values) -> Result<Problem<R>, ProblemError> {
        let n = self.nodes()?;
        let (dim, walls) = (self.mesh.dim, self.walls()?);
        match self.physics.model {
            Model::Incompressible => {
                let reynolds = ProblemError::positive("physics.reynolds", self.physics.reynolds)?;
                let length = ProblemError::positive("mesh.length", self.mesh.length)?;
                // U of Re = U L / ν, also the scheme's U_ref.
                let u = walls.iter().map(Wall::speed).fold(0.0, f64::max);
                if u == 0.0 {
                    return Err(ProblemError::key(
                        "boundary",
                        "every wall is at rest: the incompressible model needs a moving wall, \
                         whose speed U sets the viscosity ν = U L / Re",
                    ));
                }
                let physics = Physics {
                    viscosity: u * length / reynolds,
                    density: 1.0,
                };
                let numerics = Numerics {
                    u_ref: u,
                    ..self.numerics()
                };
                box_problem(dim, n, length, physics, numerics, &walls, None, values)
            }
            Model::Boussinesq => {
                self.heated_cavity()?
                    .problem_with_walls(dim, n, self.numerics(), &walls, values)
            }
        }
    }

    /// The classic set-up the published data are for, if the case is one: the lid-driven
    /// cavity (unit box, `ymax` moving with u = 1, the other walls at rest) or the
    /// differentially heated cavity (`xmin` hotter than `xmax`, the other walls adiabatic, all
    /// at rest).
    pub fn classic(&self) -> Option<Classic> {
        let walls = self.walls().ok()?;
        let others_rest = |skip: &[Side]| {
            (Side::ALL.iter().zip(&walls))
                .filter(|(s, _)| !skip.contains(s))
                .all(|(_, w)| *w == Wall::REST)
        };
        match self.physics.model {
            Model::Incompressible => {
                let lid = walls[Side::YHi as usize];
                (self.mesh.length == 1.0
                    && lid.velocity == [1.0, 0.0, 0.0]
                    && lid.temperature.is_none()
                    && others_rest(&[Side::YHi]))
                .then_some(Classic::LidDrivenCavity)
            }
            Model::Boussinesq => {
                let (hot, cold) = (walls[Side::XLo as usize], walls[Side::XHi as usize]);
                let heated =
                    matches!((hot.temperature, cold.temperature), (Some(h), Some(c)) if h > c);
                (heated && !hot.moves() && !cold.moves() && others_rest(&[Side::XLo, Side::XHi]))
                    .then_some(Classic::HeatedCavity)
            }
        }
    }
}

impl Case {
    /// What the case sets up, in words (`lid-driven cavity`, …).
    pub fn setup_name(&self) -> String {
        match self.classic() {
            Some(Classic::LidDrivenCavity) => "lid-driven cavity".into(),
            Some(Classic::HeatedCavity) => "buoyancy-driven cavity".into(),
            None => format!("{} flow in a box", self.physics.model.name()),
        }
    }
}

/// Set-ups with published data ([`Case::classic`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classic {
    /// The lid-driven cavity.
    LidDrivenCavity,
    /// The differentially heated (buoyancy-driven) cavity.
    HeatedCavity,
}

impl PatchSpec {
    /// The patch of a wall.
    pub fn of(wall: &Wall) -> PatchSpec {
        PatchSpec {
            kind: PatchKind::Wall,
            velocity: wall.velocity,
            thermal: match wall.temperature {
                Some(_) => Thermal::Isothermal,
                None => Thermal::Adiabatic,
            },
            temperature: wall.temperature,
        }
    }

    /// The wall of patch `name`, normal to `axis`, checked.
    fn wall(
        &self,
        name: &str,
        axis: usize,
        dim: usize,
        model: Model,
    ) -> Result<Wall, ProblemError> {
        let key = |k: &str| format!("boundary.{name}.{k}");
        let v = self.velocity;
        if v.iter().any(|x| !x.is_finite()) {
            return Err(ProblemError::key(
                key("velocity"),
                format!("{v:?}: not finite"),
            ));
        }
        if v[axis] != 0.0 {
            return Err(ProblemError::key(
                key("velocity"),
                format!(
                    "{v:?} crosses the wall; a wall moves along itself only (component {} \
                     must be 0)",
                    ["x", "y", "z"][axis]
                ),
            ));
        }
        if dim == 2 && v[2] != 0.0 {
            return Err(ProblemError::key(
                key("velocity"),
                format!("{v:?}: a 2D wall has no z velocity (the third component must be 0)"),
            ));
        }
        let temperature = match (self.thermal, self.temperature) {
            (Thermal::Adiabatic, None) => None,
            (Thermal::Adiabatic, Some(t)) => {
                return Err(ProblemError::key(
                    key("temperature"),
                    format!(
                    "{t} is set on an adiabatic wall; add thermal = \"isothermal\" or remove it"
                ),
                ))
            }
            (Thermal::Isothermal, None) => {
                return Err(ProblemError::key(
                    key("temperature"),
                    "missing: an isothermal wall needs its temperature",
                ))
            }
            (Thermal::Isothermal, Some(t)) if !t.is_finite() => {
                return Err(ProblemError::key(
                    key("temperature"),
                    format!("{t}: not finite"),
                ))
            }
            (Thermal::Isothermal, Some(t)) => Some(t),
        };
        if temperature.is_some() && model != Model::Boussinesq {
            return Err(ProblemError::key(
                key("thermal"),
                format!(
                    "\"isothermal\", but physics.model = \"{}\" has no energy equation (use \
                     \"boussinesq\")",
                    model.name()
                ),
            ));
        }
        Ok(Wall {
            velocity: v,
            temperature,
        })
    }
}

impl Precision {
    /// Name as in case files (`f64`, `f32`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        }
    }
}

/// Built-in cases: `(name, TOML text)`.
pub const BUILTIN: [(&str, &str); 6] = [
    (
        "cavity2d-re100",
        include_str!("../../../../cases/cavity2d-re100.toml"),
    ),
    (
        "cavity2d-re1000",
        include_str!("../../../../cases/cavity2d-re1000.toml"),
    ),
    (
        "cavity3d-re100",
        include_str!("../../../../cases/cavity3d-re100.toml"),
    ),
    (
        "cavity3d-re1000",
        include_str!("../../../../cases/cavity3d-re1000.toml"),
    ),
    ("bdc2d", include_str!("../../../../cases/bdc2d.toml")),
    ("bdc3d", include_str!("../../../../cases/bdc3d.toml")),
];

/// The built-in case called `name`.
pub fn builtin(name: &str) -> Option<Case> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    Some(Case::from_toml(text, name).expect("built-in cases parse"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cavity::lid_driven;
    use ferroflow_ac::SideBc;
    use ferroflow_core::Side;

    #[test]
    fn auto_is_implicit_but_on_gpu_blocks() {
        for (gpu, blocks, method) in [
            (false, 1, MethodKind::Implicit),
            (false, 8, MethodKind::Implicit),
            (true, 1, MethodKind::Implicit),
            (true, 2, MethodKind::Explicit),
        ] {
            let mut case = builtin("cavity2d-re1000").unwrap();
            assert_eq!(case.numerics.method, MethodKind::Auto);
            assert!(matches!(case.numerics().method, Method::Implicit(_)));
            case.resolve_method(gpu, blocks);
            assert_eq!(case.numerics.method, method, "gpu {gpu}, {blocks} blocks");
            // A method asked for stays.
            case.numerics.method = MethodKind::Implicit;
            case.resolve_method(true, 2);
            assert_eq!(case.numerics.method, MethodKind::Implicit);
        }
    }

    /// Dotted keys of a serialised case (a patch's as `boundary.<patch>.name`).
    fn serialised_keys(case: &Case) -> Vec<String> {
        let table = toml::Table::try_from(case).unwrap();
        let mut keys = Vec::new();
        for (sec, t) in &table {
            for (name, value) in t.as_table().unwrap() {
                match (sec.as_str(), value.as_table()) {
                    ("boundary", Some(patch)) => {
                        keys.extend(patch.keys().map(|k| format!("boundary.<patch>.{k}")))
                    }
                    _ => keys.push(format!("{sec}.{name}")),
                }
            }
        }
        keys.sort();
        keys.dedup();
        keys
    }

    #[test]
    fn every_key_is_documented_and_the_commented_form_reads_back() {
        let mut case = Case::default();
        // Keys that are unset by default are set here, so that they serialise.
        case.boundary.get_mut("xmin").unwrap().temperature = Some(1.0);
        case.numerics.sweeps = Some(4);
        case.numerics.implicit_cfl = Some(100.0);
        case.numerics.c4 = Some(0.02);
        let mut documented: Vec<String> = KEYS.iter().map(|k| k.key.to_string()).collect();
        documented.sort();
        assert_eq!(serialised_keys(&case), documented);
        for (name, _) in BUILTIN {
            let case = builtin(name).unwrap();
            assert_eq!(
                Case::from_toml(&case.to_commented_toml(), name),
                Ok(case.clone())
            );
            assert_eq!(Case::from_toml(&case.to_toml(), name), Ok(case));
        }
    }

    #[test]
    fn schema_v1_files_read_as_the_built_in_cases() {
        for name in ["bdc3d", "cavity2d-re100"] {
            let path = format!(
                "{}/../../test_data/cases-v1/{name}.toml",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(path).unwrap();
            assert!(v1::is_v1(&text));
            // v1 files name c4 (seed 000's 0.02), which the built-in cases leave to the
            // differences' default (the same 0.02 for their second-order differences).
            let mut expected = builtin(name).unwrap();
            expected.numerics.c4 = Some(0.02);
            assert_eq!(Case::from_toml(&text, name), Ok(expected));
        }
        // A minimal v1 file, and its errors located at its own keys.
        let text = "[case]\nkind = \"lid-driven-cavity\"\n\n[physics]\nlid_velocity = -2.0\n";
        let e = Case::from_toml(text, "old.toml").unwrap_err();
        assert_eq!(
            (e.line, e.key.as_deref()),
            (Some(5), Some("physics.lid_velocity"))
        );
        let text = "[grid]\ndim = 2\nnodes = [3, 40]\n";
        let case = Case::from_toml(text, "old.toml").unwrap();
        let e = CaseError::invalid("old.toml", text, &case.problem::<f64>().unwrap_err());
        assert_eq!((e.line, e.key.as_deref()), (Some(3), Some("grid.nodes")));
        // v1 and v2 keys together are not a v1 file: the v1 keys are unknown.
        let e = Case::from_toml("[grid]\ndim = 2\n[mesh]\ndim = 2\n", "mixed.toml").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("grid"));
    }

    #[test]
    fn the_cavities_as_patches_are_the_problems_they_were() {
        let case = builtin("cavity2d-re1000").unwrap();
        let p = case.problem::<f64>().unwrap();
        let numerics = Numerics {
            u_ref: 1.0,
            ..case.numerics()
        };
        let q = lid_driven::<f64>(2, [129, 129, 1], 1000.0, 1.0, numerics).unwrap();
        assert_eq!(
            (p.physics, p.numerics, p.sides),
            (q.physics, q.numerics, q.sides)
        );
        assert_eq!(p.initial.vars, q.initial.vars);

        let case = builtin("bdc2d").unwrap();
        let p = case.problem::<f64>().unwrap();
        let hot = [Side::XLo, Side::XHi];
        for side in Side::ALL {
            let expected = if hot.contains(&side) {
                SideBc::Wall
            } else {
                SideBc::AdiabaticWall
            };
            assert!(
                side.axis() >= 2 || p.sides[side as usize] == expected,
                "{side:?}"
            );
        }
        let (l, t) = (p.layout, p.temperature().unwrap());
        assert_eq!(p.energy.unwrap().t_ref, 0.0);
        l.for_each_node(|i, _, _, o| {
            let expected = match i {
                0 => 0.5,
                128 => -0.5,
                _ => 0.0,
            };
            assert_eq!(p.initial.vars[t][o], expected);
        });
    }

    #[test]
    fn patches_set_up_other_boxes() {
        // Heated from below, cooled from above, a moving side wall, 8 K about 290 K.
        let text = "[physics]\nmodel = \"boussinesq\"\ninputs = \"dimensional\"\n\n\
                    [mesh]\nnodes = [9, 9]\nlength = 0.1\n\n\
                    [boundary.ymin]\nthermal = \"isothermal\"\ntemperature = 294.0\n\n\
                    [boundary.ymax]\nthermal = \"isothermal\"\ntemperature = 286.0\n\n\
                    [boundary.xmax]\nvelocity = [0.0, 0.01, 0.0]\n";
        let case = Case::from_toml(text, "rb.toml").unwrap();
        assert_eq!(case.classic(), None);
        let cavity = case.heated_cavity().unwrap();
        assert_eq!((cavity.delta_t, cavity.length), (8.0, 0.1));
        let p = case.problem::<f64>().unwrap();
        assert_eq!(p.energy.unwrap().t_ref, 290.0);
        assert_eq!(p.sides[Side::YLo as usize], SideBc::Wall);
        assert_eq!(p.sides[Side::XLo as usize], SideBc::AdiabaticWall);
        let (l, t) = (p.layout, p.temperature().unwrap());
        l.for_each_node(|i, j, _, o| {
            let temperature = p.initial.vars[t][o];
            let v = p.initial.vars[2][o];
            match (i, j) {
                (_, 0) => assert_eq!(temperature, 294.0),
                (_, 8) => assert_eq!(temperature, 286.0),
                _ => assert_eq!(temperature, 290.0),
            }
            // The moving wall wins at its edges over the walls at rest.
            assert_eq!(v, if i == 8 { 0.01 } else { 0.0 }, "({i}, {j})");
        });
    }

    #[test]
    fn bad_patches_and_foreign_physics_keys_are_named_with_their_line() {
        let error = |text: &str| {
            let e = match Case::from_toml(text, "c.toml") {
                Err(e) => e,
                Ok(case) => CaseError::invalid("c.toml", text, &case.problem::<f64>().unwrap_err()),
            };
            (e.line, e.key.unwrap(), e.message)
        };
        let (line, key, message) = error("[boundary.ymax]\nvelocity = [0.0, 1.0, 0.0]\n");
        assert_eq!((line, key.as_str()), (Some(2), "boundary.ymax.velocity"));
        assert!(message.contains("crosses the wall"), "{message}");
        let (line, key, _) = error("[boundary.zmin]\nkind = \"wall\"\n");
        assert_eq!((line, key.as_str()), (Some(1), "boundary.zmin"));
        let (line, key, message) =
            error("[boundary.xmin]\nthermal = \"isothermal\"\ntemperature = 1.0\n");
        assert_eq!((line, key.as_str()), (Some(2), "boundary.xmin.thermal"));
        assert!(message.contains("no energy equation"), "{message}");
        let (line, key, _) = error("[boundary.xmin]\ntemperature = 1.0\n");
        assert_eq!((line, key.as_str()), (Some(2), "boundary.xmin.temperature"));
        let (line, key, message) = error("[boundary.xmin]\nkind = \"wall\"\n");
        assert_eq!((line, key.as_str()), (Some(1), "boundary"));
        assert!(message.contains("every wall is at rest"), "{message}");
        let (line, key, message) = error("[physics]\nmodel = \"incompressible\"\nrayleigh = 1e4\n");
        assert_eq!((line, key.as_str()), (Some(3), "physics.rayleigh"));
        assert!(message.contains("(its keys: reynolds)"), "{message}");
        let (line, key, _) = error("[physics]\nmodel = \"boussinesq\"\n[mesh]\nlength = 2.0\n");
        assert_eq!((line, key.as_str()), (Some(4), "mesh.length"));
    }

    #[test]
    fn errors_name_line_and_key() {
        let text = "[mesh]\nnodes = [33, 33]\n\n[numerics]\ncfl = 0.5\nkapa = 1.0\n";
        let e = Case::from_toml(text, "c.toml").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("numerics.kapa")));
        assert!(e
            .to_string()
            .starts_with("c.toml:6: numerics.kapa: unknown field `kapa`"));

        let e = Case::from_toml("[numerics]\ncfl = \"fast\"\n", "c.toml").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(2), Some("numerics.cfl")));

        let e = Case::from_toml("[numerics\ncfl = 1\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(1));

        let e = Case::from_toml("[numerics]\ncfl = 1.0\n# x\ncfl = 0.5\n", "c.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:4: numerics.cfl: set twice (first on line 2)"
        );
        let e = Case::from_toml("[mesh]\ndim = 2\n\n[mesh]\n", "c.toml").unwrap_err();
        assert_eq!(e.to_string(), "c.toml:4: mesh: set twice (first on line 1)");

        let case = Case::from_toml(text.replace("kapa", "kappa").as_str(), "c.toml").unwrap();
        assert_eq!(key_line(text, "numerics.cfl"), Some(5));
        let mut bad = case.clone();
        bad.numerics.cfl = 3.0;
        let err = bad.problem::<f64>().unwrap_err();
        let e = CaseError::invalid("c.toml", text, &err);
        assert_eq!(
            e.to_string(),
            "c.toml:5: numerics.cfl = 3 is out of range: 0 < cfl <= 2"
        );
        bad = case.clone();
        bad.mesh.nodes = vec![0, 0];
        let e = CaseError::invalid("c.toml", text, &bad.problem::<f64>().unwrap_err());
        assert!(e
            .to_string()
            .starts_with("c.toml:2: mesh.nodes: grid has 0 nodes"));
        bad.mesh.nodes = vec![33, 33, 33];
        let e = CaseError::invalid("c.toml", text, &bad.problem::<f64>().unwrap_err());
        assert_eq!(
            e.to_string(),
            "c.toml:2: mesh.nodes: [33, 33, 33] has 3 values; mesh.dim = 2 needs one node \
             count per axis"
        );
    }

    #[test]
    fn blocks_and_count_cut_the_grid() {
        let mut case = Case::default();
        assert_eq!(case.decomposition(1).unwrap().blocks, [1, 1, 1]);
        assert_eq!(case.decomposition(4).unwrap().blocks, [2, 2, 1]);
        case.parallel.count = 2;
        assert_eq!(case.decomposition(1).unwrap().blocks, [1, 2, 1]);
        let name = |c: &Case, processes| match c.decomposition(processes) {
            Err(e) => problem_key(&e).unwrap().to_string(),
            other => panic!("{other:?}"),
        };
        assert_eq!(name(&case, 3), "parallel.count");
        case.parallel.blocks = vec![3, 1];
        assert_eq!(name(&case, 1), "parallel.count");
        case.parallel.count = 0;
        assert_eq!(case.decomposition(1).unwrap().blocks, [3, 1, 1]);
        for blocks in [vec![2], vec![2, 1, 1], vec![0, 1], vec![50, 1]] {
            case.parallel.blocks = blocks;
            assert_eq!(name(&case, 1), "parallel.blocks");
        }
    }
}
