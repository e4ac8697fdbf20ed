//! Case files (TOML): what to solve, how, and where. Every key has a default, so a minimal
//! case names only what differs from the built-in default (2D cavity, Re = 100, 129²).
//! Every key is documented once, in [`KEYS`]; `ferroflow cases show` and the key tables of
//! `docs/cases.md` ([`crate::docs`]) are generated from it.
use crate::cavity;
use crate::convection::HeatedCavity;
use ferroflow_ac::{Numerics, Problem};
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::{Layout, ProblemError, Real};
use ferroflow_solver::StopCriteria;
use serde::{Deserialize, Serialize};
use std::fmt;
use toml::de::{DeTable, DeValue};

/// A whole case file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Case {
    /// `[case]`: name and kind.
    pub case: CaseInfo,
    /// `[grid]`.
    pub grid: Grid,
    /// `[physics]`.
    pub physics: PhysicsSpec,
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
    /// Problem kind.
    pub kind: CaseKind,
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

/// Problem kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaseKind {
    /// Lid-driven cavity (unit square or cube, lid y = 1 moving along +x).
    LidDrivenCavity,
    /// Buoyancy-driven cavity (square or cube of side L, hot wall x = 0, cold wall x = L,
    /// other walls adiabatic): the energy equation with the Boussinesq approximation.
    BuoyancyDrivenCavity,
}

/// How a buoyancy-driven cavity's physics is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Inputs {
    /// By Ra and Pr, in units of L, ΔT and α/L.
    Nondimensional,
    /// By L, g, β_T, ν, Pr and ΔT, in SI units.
    Dimensional,
}

/// `[grid]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Grid {
    /// 2 or 3.
    pub dim: usize,
    /// Nodes per axis, boundary nodes included (one value per axis).
    pub nodes: Vec<usize>,
}

/// `[physics]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhysicsSpec {
    /// Reynolds number U L / ν.
    pub reynolds: f64,
    /// Lid velocity U (m/s).
    pub lid_velocity: f64,
    /// Buoyancy-driven cavity: nondimensional (Ra, Pr) or dimensional inputs.
    pub inputs: Inputs,
    /// Rayleigh number (nondimensional inputs).
    pub rayleigh: f64,
    /// Prandtl number ν / α (both kinds of inputs).
    pub prandtl: f64,
    /// Gravity vector (m/s²); nondimensional inputs use its direction only.
    pub gravity: [f64; 3],
    /// Side of the cavity L (m, dimensional inputs).
    pub length: f64,
    /// Thermal expansion coefficient β_T (1/K, dimensional inputs).
    pub expansion: f64,
    /// Kinematic viscosity ν (m²/s, dimensional inputs).
    pub viscosity: f64,
    /// Temperature difference ΔT between the hot and the cold wall (K, dimensional inputs).
    pub delta_t: f64,
}

/// `[numerics]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NumericsSpec {
    /// Courant number of the local pseudo-time step.
    pub cfl: f64,
    /// Artificial compressibility scaling κ (β² = max(|u|², κ U_ref²), U_ref = lid velocity).
    pub kappa: f64,
    /// Fourth-difference pressure dissipation coefficient.
    pub c4: f64,
    /// Relative residual at which the run has converged.
    pub tolerance: f64,
    /// Iteration limit.
    pub max_iterations: usize,
    /// Iterations between residual checks.
    pub check_interval: usize,
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

impl Default for CaseInfo {
    fn default() -> Self {
        CaseInfo {
            name: "cavity2d-re100".into(),
            description: "2D lid-driven cavity, Re = 100, 129 x 129 nodes".into(),
            kind: CaseKind::LidDrivenCavity,
        }
    }
}

impl Default for Grid {
    fn default() -> Self {
        Grid {
            dim: 2,
            nodes: vec![129, 129],
        }
    }
}

impl Default for PhysicsSpec {
    fn default() -> Self {
        // Dimensional defaults: air in a 5 cm cube, Ra = 1e5 (to 3e-6).
        PhysicsSpec {
            reynolds: 100.0,
            lid_velocity: 1.0,
            inputs: Inputs::Nondimensional,
            rayleigh: 1e5,
            prandtl: 0.71,
            gravity: [0.0, -9.81, 0.0],
            length: 0.05,
            expansion: 3.4e-3,
            viscosity: 1.5e-5,
            delta_t: 7.6009,
        }
    }
}

impl Default for NumericsSpec {
    fn default() -> Self {
        NumericsSpec {
            cfl: 0.8,
            kappa: 1.0,
            c4: 0.02,
            tolerance: 1e-7,
            max_iterations: 200_000,
            check_interval: 50,
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

/// Documentation of one case key. The texts are Markdown as in `docs/cases.md` (code in
/// backticks; a `|` is escaped where the tables need it); `ferroflow cases show` prints them
/// as comments without the backticks. The default is the [`Case::default`] value, so it is
/// not repeated here.
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    /// Dotted key, `section.name`.
    pub key: &'static str,
    /// TOML type of the value (`float`, `array of integers`, ...).
    pub type_name: &'static str,
    /// Unit (`-` if none).
    pub unit: &'static str,
    /// Allowed values.
    pub allowed: &'static str,
    /// What it sets.
    pub meaning: &'static str,
}

const fn key(
    key: &'static str,
    type_name: &'static str,
    unit: &'static str,
    allowed: &'static str,
    meaning: &'static str,
) -> KeyDoc {
    KeyDoc {
        key,
        type_name,
        unit,
        allowed,
        meaning,
    }
}

impl KeyDoc {
    /// Section and name (`("grid", "nodes")`).
    pub fn parts(&self) -> (&'static str, &'static str) {
        self.key.split_once('.').expect("keys are dotted")
    }
}

/// [`KEYS`] a section at a time, in file order.
pub fn key_sections() -> impl Iterator<Item = &'static [KeyDoc]> {
    let keys: &'static [KeyDoc] = &KEYS;
    keys.chunk_by(|a, b| a.parts().0 == b.parts().0)
}

/// Every key of a case file, in file order.
pub const KEYS: [KeyDoc; 36] = [
    key(
        "case.name",
        "string",
        "-",
        "a plain file name (not `.` or `..`; no `/`, `\\`, `:` or control characters)",
        "Name; the default output directory is `ferroflow-out/<name>/`",
    ),
    key(
        "case.description",
        "string",
        "-",
        "text",
        "One line saying what the case is (shown by `ferroflow cases`)",
    ),
    key(
        "case.kind",
        "string",
        "-",
        "`\"lid-driven-cavity\"`, `\"buoyancy-driven-cavity\"`",
        "Problem kind. `lid-driven-cavity`: the unit square or cube, lid y = 1 moving along +x, \
         other walls at rest, fluid at rest initially. `buoyancy-driven-cavity`: the square or \
         cube of side L, hot wall x = 0, cold wall x = L, other walls adiabatic, fluid at rest \
         initially (energy equation, Boussinesq)",
    ),
    key("grid.dim", "integer", "-", "2 or 3", "Space dimensions"),
    key(
        "grid.nodes",
        "array of integers",
        "-",
        "`grid.dim` values, each >= 5",
        "Nodes per axis, wall nodes included (uniform spacing 1/(n-1))",
    ),
    key(
        "physics.reynolds",
        "float",
        "-",
        "> 0",
        "Lid-driven cavity: Reynolds number U L / ν (L = 1 m); the viscosity is ν = U L / Re, \
         the density 1",
    ),
    key(
        "physics.lid_velocity",
        "float",
        "m/s",
        "> 0",
        "Lid-driven cavity: lid velocity U along +x, also the reference velocity U_ref of the \
         scheme; reference data are compared only for U = 1",
    ),
    key(
        "physics.inputs",
        "string",
        "-",
        "`\"nondimensional\"`, `\"dimensional\"`",
        "Buoyancy-driven cavity: physics given by `rayleigh` and `prandtl` (units L, ΔT, α/L), \
         or by `length`, `gravity`, `expansion`, `viscosity`, `prandtl` and `delta_t`",
    ),
    key(
        "physics.rayleigh",
        "float",
        "-",
        "> 0",
        "Buoyancy-driven cavity, nondimensional inputs: Rayleigh number \
         Ra = |g| β_T ΔT L³ / (ν α)",
    ),
    key(
        "physics.prandtl",
        "float",
        "-",
        "> 0",
        "Buoyancy-driven cavity: Prandtl number Pr = ν / α (dimensional inputs: α = ν / Pr)",
    ),
    key(
        "physics.gravity",
        "array of 3 floats",
        "m/s²",
        "finite, not all zero",
        "Buoyancy-driven cavity: gravity vector g⃗ (the z component does nothing in 2D); \
         nondimensional inputs use its direction only",
    ),
    key(
        "physics.length",
        "float",
        "m",
        "> 0",
        "Buoyancy-driven cavity, dimensional inputs: side L of the square or cube",
    ),
    key(
        "physics.expansion",
        "float",
        "1/K",
        "> 0",
        "Buoyancy-driven cavity, dimensional inputs: thermal expansion coefficient β_T",
    ),
    key(
        "physics.viscosity",
        "float",
        "m²/s",
        "> 0",
        "Buoyancy-driven cavity, dimensional inputs: kinematic viscosity ν",
    ),
    key(
        "physics.delta_t",
        "float",
        "K",
        "> 0",
        "Buoyancy-driven cavity, dimensional inputs: temperature difference \
         ΔT = T_hot − T_cold (the defaults, air in a 5 cm cube, give Ra = 1e5)",
    ),
    key(
        "numerics.cfl",
        "float",
        "-",
        "0 < cfl <= 2",
        "Courant number of the local pseudo-time step (convective, viscous and cell-Péclet \
         limits together)",
    ),
    key(
        "numerics.kappa",
        "float",
        "-",
        "> 0",
        "Artificial compressibility scaling: β² = max(|u|², κ U_ref²); U_ref is the lid \
         velocity, or for the buoyancy-driven cavity the free-fall velocity \
         sqrt(|g| β_T ΔT L) (the built-in cases use κ = 0.1 there)",
    ),
    key(
        "numerics.c4",
        "float",
        "-",
        "0 <= c4 <= 0.25",
        "Coefficient of the fourth-difference pressure dissipation",
    ),
    key(
        "numerics.tolerance",
        "float",
        "-",
        "0 < tolerance < 1",
        "Converged when every equation's residual (RMS of its pseudo-time derivative), \
         relative to its first iteration's, is below this",
    ),
    key(
        "numerics.max_iterations",
        "integer",
        "iterations",
        ">= 1",
        "Iteration limit; a run that reaches it ends with status `max-iterations` (exit code 0)",
    ),
    key(
        "numerics.check_interval",
        "integer",
        "iterations",
        ">= 1",
        "Iterations between residual checks: progress, convergence, divergence, checkpoints \
         and snapshots happen at checks",
    ),
    key(
        "backend.kind",
        "string",
        "-",
        "`\"cpu\"`, `\"cuda\"`, `\"auto\"`",
        "Compute backend. `auto` takes a GPU if one is usable, else the CPU, and says which in \
         the log. `cuda` fails (exit code 2) with the reason when no GPU backend is usable; \
         `ferroflow info` tells",
    ),
    key(
        "backend.precision",
        "string",
        "-",
        "`\"f64\"`, `\"f32\"`",
        "Floating-point precision of the state and the arithmetic",
    ),
    key(
        "backend.threads",
        "integer",
        "-",
        ">= 0",
        "CPU threads, 0 = all cores. Results are bitwise the same for any thread count",
    ),
    key(
        "backend.device",
        "integer",
        "-",
        ">= 0",
        "CUDA device ordinal (`ferroflow info` lists the devices)",
    ),
    key(
        "backend.tune",
        "boolean",
        "-",
        "`true`, `false`",
        "Time the candidate CUDA launch shapes for this grid and precision at start and take \
         the fastest; the choice is cached on disk (`FERROFLOW_CUDA_CACHE_DIR`, keyed by \
         device, grid, precision and kernel source), so later runs skip the search. `false` \
         (or `--no-tune`) uses the default shape 32x4x1",
    ),
    key(
        "backend.fmad",
        "boolean",
        "-",
        "`true`, `false`",
        "Let the CUDA compiler fuse multiplies and adds (one rounding instead of two): fewer \
         floating-point instructions, so a faster f64 kernel where arithmetic limits it, but \
         the GPU no longer matches the CPU backend bit for bit (the default `false` does, in \
         f64; with `true` the tests check agreement within 1e-10 after 1000 iterations). \
         `ferroflow bench --fmad` measures it",
    ),
    key(
        "output.checkpoint_interval",
        "integer",
        "iterations",
        ">= 0",
        "Iterations between checkpoints (`checkpoint.ffcp`), taken at the first residual check \
         after each interval; 0 = only at the end and when interrupted",
    ),
    key(
        "output.field_interval",
        "integer",
        "iterations",
        ">= 0",
        "Iterations between field snapshots `fields_<iteration>.vti`, listed with the final \
         `fields.vti` in `fields.pvd`; 0 = final fields only",
    ),
    key(
        "output.compress",
        "boolean",
        "-",
        "`true`, `false`",
        "Compress the arrays of `fields.vti` and the snapshots with zlib, in blocks of 32 KiB \
         (VTK's `vtkZLibDataCompressor`, which ParaView, VisIt and VTK read); `false` writes \
         them as raw binary",
    ),
    key(
        "parallel.blocks",
        "array of integers",
        "-",
        "`[]`, or `grid.dim` values >= 1 with every block owning >= 3 nodes per axis",
        "Blocks per axis. `[]`: `parallel.count` blocks, cut with the least interface area \
         (ties: more cuts along z, then y, whose faces are contiguous in memory)",
    ),
    key(
        "parallel.count",
        "integer",
        "-",
        ">= 0; under MPI at least the number of processes",
        "Number of blocks when `parallel.blocks` is `[]`; 0 = one block, or under MPI one per \
         process. With `parallel.blocks`, 0 or their product",
    ),
    key(
        "parallel.devices",
        "array of integers",
        "-",
        "GPU ordinals",
        "GPUs the CUDA blocks are spread over, block b on `devices[b % length]`; \
         `[]` = `[backend.device]`",
    ),
    key(
        "parallel.exchange",
        "string",
        "-",
        "`\"peer\"`, `\"host\"`",
        "How halos travel between GPU blocks: device to device (`peer`), or staged through \
         host memory (`host`)",
    ),
    key(
        "parallel.packing",
        "boolean",
        "-",
        "`true`, `false`",
        "GPU blocks: pack faces into contiguous buffers on the device; `false` copies them as \
         strided boxes (faster unless x is cut: BENCHMARKS.md)",
    ),
    key(
        "parallel.overlap",
        "boolean",
        "-",
        "`true`, `false`",
        "Compute the interior nodes of each block while its halos travel",
    ),
];

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
        let key = problem_key(error);
        CaseError {
            origin: origin.into(),
            line: key.and_then(|k| key_line(text, k)),
            key: key.map(str::to_string),
            message: error.to_string(),
        }
    }
}

/// The case key a problem error is about, if any.
pub fn problem_key(error: &ProblemError) -> Option<&'static str> {
    match error {
        ProblemError::OutOfRange { name, .. } => Some(name),
        ProblemError::GridTooSmall { .. } => Some("grid.nodes"),
        ProblemError::Dimension(_) => Some("grid.dim"),
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

impl Case {
    /// Parses a case from TOML text; `origin` (file or built-in name) prefixes messages, which
    /// name the line and the key (syntax errors, unknown keys, wrong types).
    pub fn from_toml(text: &str, origin: &str) -> Result<Case, CaseError> {
        toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start);
            CaseError {
                origin: origin.into(),
                line: at.map(|o| line_of(text, o)),
                key: at.and_then(|o| key_at(text, o)),
                message: e.message().trim().to_string(),
            }
        })
    }

    /// The resolved case (every default filled in) as TOML.
    pub fn to_toml(&self) -> String {
        self.render(false)
    }

    /// The resolved case as TOML with every key explained (meaning, unit, allowed values).
    pub fn to_commented_toml(&self) -> String {
        self.render(true)
    }

    /// Every key of [`KEYS`] in order, its section headers, and with `comments` its doc.
    fn render(&self, comments: bool) -> String {
        let table = toml::Table::try_from(self).expect("a case always serialises");
        let mut out = String::new();
        for keys in key_sections() {
            if !out.is_empty() {
                out.push('\n');
            }
            out += &format!("[{}]\n", keys[0].parts().0);
            for doc in keys {
                let (sec, name) = doc.parts();
                if comments {
                    let unit = match doc.unit {
                        "-" => String::new(),
                        u => format!(" Unit: {u}."),
                    };
                    let text = format!("{}.{unit} Allowed: {}.", doc.meaning, doc.allowed);
                    // Backticks mark code in the Markdown docs; in a comment they are noise.
                    out += &wrap_comment(&text.replace('`', ""));
                }
                out += &format!("{name} = {}\n", value_text(&table[sec][name]));
            }
        }
        out
    }

    /// Nodes per axis as a 3-array (axis 2 = 1 in 2D).
    pub fn nodes(&self) -> Result<[usize; 3], ProblemError> {
        let dim = self.grid.dim;
        if !(2..=3).contains(&dim) {
            return Err(ProblemError::Dimension(dim));
        }
        if self.grid.nodes.len() != dim {
            return Err(ProblemError::OutOfRange {
                name: "grid.nodes",
                value: self.grid.nodes.len() as f64,
                allowed: "one node count per axis (grid.dim values)",
            });
        }
        let mut n = [1; 3];
        n[..dim].copy_from_slice(&self.grid.nodes);
        if Layout::try_new(dim, n).is_none() {
            return Err(ProblemError::OutOfRange {
                name: "grid.nodes",
                value: n.into_iter().max().unwrap_or(0) as f64,
                allowed: "a grid whose arrays fit in the address space",
            });
        }
        Ok(n)
    }

    /// Scheme parameters (U_ref: the lid velocity; a buoyancy-driven cavity's problem replaces
    /// it by its own velocity scale).
    pub fn numerics(&self) -> Numerics {
        let s = &self.numerics;
        Numerics {
            cfl: s.cfl,
            kappa: s.kappa,
            u_ref: self.physics.lid_velocity,
            c4: s.c4,
        }
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
        })
    }

    /// The grid cut into blocks for a run of `processes` processes (1 without MPI).
    pub fn decomposition(&self, processes: usize) -> Result<Decomposition, ProblemError> {
        let (dim, n, p) = (self.grid.dim, self.nodes()?, &self.parallel);
        let decomposition = if p.blocks.is_empty() {
            let count = if p.count == 0 { processes } else { p.count };
            Decomposition::automatic(dim, n, count)?
        } else {
            if p.blocks.len() != dim {
                return Err(ProblemError::OutOfRange {
                    name: "parallel.blocks",
                    value: p.blocks.len() as f64,
                    allowed: "[] or one block count per axis (grid.dim values)",
                });
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

    /// The resolved physics of a buoyancy-driven cavity.
    pub fn heated_cavity(&self) -> Result<HeatedCavity, ProblemError> {
        let ph = &self.physics;
        match ph.inputs {
            Inputs::Nondimensional => {
                HeatedCavity::nondimensional(ph.rayleigh, ph.prandtl, ph.gravity)
            }
            Inputs::Dimensional => HeatedCavity::dimensional(
                ph.length,
                ph.gravity,
                ph.expansion,
                ph.viscosity,
                ph.prandtl,
                ph.delta_t,
            ),
        }
    }

    /// The problem in precision `R`.
    pub fn problem<R: Real>(&self) -> Result<Problem<R>, ProblemError> {
        let n = self.nodes()?;
        match self.case.kind {
            CaseKind::LidDrivenCavity => {
                // Checked here, by its own name: it also sets the viscosity and U_ref.
                let lid =
                    ProblemError::positive("physics.lid_velocity", self.physics.lid_velocity)?;
                cavity::lid_driven(
                    self.grid.dim,
                    n,
                    self.physics.reynolds,
                    lid,
                    self.numerics(),
                )
            }
            CaseKind::BuoyancyDrivenCavity => {
                self.heated_cavity()?
                    .problem(self.grid.dim, n, self.numerics())
            }
        }
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
        include_str!("../../../cases/cavity2d-re100.toml"),
    ),
    (
        "cavity2d-re1000",
        include_str!("../../../cases/cavity2d-re1000.toml"),
    ),
    (
        "cavity3d-re100",
        include_str!("../../../cases/cavity3d-re100.toml"),
    ),
    (
        "cavity3d-re1000",
        include_str!("../../../cases/cavity3d-re1000.toml"),
    ),
    ("bdc2d", include_str!("../../../cases/bdc2d.toml")),
    ("bdc3d", include_str!("../../../cases/bdc3d.toml")),
];

/// The built-in case called `name`.
pub fn builtin(name: &str) -> Option<Case> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    Some(Case::from_toml(text, name).expect("built-in cases parse"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_documented_and_the_commented_form_reads_back() {
        let case = Case::default();
        let table = toml::Table::try_from(&case).unwrap();
        let mut keys: Vec<String> = table
            .iter()
            .flat_map(|(s, t)| {
                t.as_table()
                    .unwrap()
                    .keys()
                    .map(move |k| format!("{s}.{k}"))
            })
            .collect();
        let mut documented: Vec<String> = KEYS.iter().map(|k| k.key.to_string()).collect();
        keys.sort();
        documented.sort();
        assert_eq!(keys, documented);
        for (name, _) in BUILTIN {
            let case = builtin(name).unwrap();
            assert_eq!(Case::from_toml(&case.to_commented_toml(), name), Ok(case));
        }
    }

    #[test]
    fn errors_name_line_and_key() {
        let text = "[grid]\nnodes = [33, 33]\n\n[numerics]\ncfl = 0.5\nkapa = 1.0\n";
        let e = Case::from_toml(text, "c.toml").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(6), Some("numerics.kapa")));
        assert!(e
            .to_string()
            .starts_with("c.toml:6: numerics.kapa: unknown field `kapa`"));

        let e = Case::from_toml("[numerics]\ncfl = \"fast\"\n", "c.toml").unwrap_err();
        assert_eq!((e.line, e.key.as_deref()), (Some(2), Some("numerics.cfl")));

        let e = Case::from_toml("[numerics\ncfl = 1\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(1));

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
        bad.grid.nodes = vec![0, 0];
        let e = CaseError::invalid("c.toml", text, &bad.problem::<f64>().unwrap_err());
        assert!(e
            .to_string()
            .starts_with("c.toml:2: grid.nodes: grid has 0 nodes"));
    }

    #[test]
    fn blocks_and_count_cut_the_grid() {
        let mut case = Case::default();
        assert_eq!(case.decomposition(1).unwrap().blocks, [1, 1, 1]);
        assert_eq!(case.decomposition(4).unwrap().blocks, [2, 2, 1]);
        case.parallel.count = 2;
        assert_eq!(case.decomposition(1).unwrap().blocks, [1, 2, 1]);
        let name = |c: &Case, processes| match c.decomposition(processes) {
            Err(ProblemError::OutOfRange { name, .. }) => name,
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
