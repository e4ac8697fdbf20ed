//! Case files (TOML): what to solve, how, and where. Every key has a default, so a minimal
//! case names only what differs from the built-in default (2D cavity, Re = 100, 129²).
use crate::cavity;
use crate::simulation::StopCriteria;
use ferroflow_core::{Numerics, Problem, ProblemError, Real};
use serde::{Deserialize, Serialize};

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
}

/// `[case]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CaseInfo {
    /// Name, used for the default output directory.
    pub name: String,
    /// One line saying what the case is.
    pub description: String,
    /// Problem kind.
    pub kind: CaseKind,
}

/// Problem kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CaseKind {
    /// Lid-driven cavity (unit square or cube, lid y = 1 moving along +x).
    LidDrivenCavity,
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

/// `[backend]` section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct BackendSpec {
    /// `cpu` (more to come).
    pub kind: String,
    /// `f64` or `f32`.
    pub precision: String,
    /// CPU threads (0 = all cores).
    pub threads: usize,
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
        PhysicsSpec {
            reynolds: 100.0,
            lid_velocity: 1.0,
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
            kind: "cpu".into(),
            precision: "f64".into(),
            threads: 0,
        }
    }
}

/// A case that cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CaseError {
    /// TOML syntax, unknown key or wrong type (the message names line and key).
    #[error("{origin}: {message}")]
    Parse {
        /// File name or built-in case name.
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// A value the solver cannot accept.
    #[error("{origin}: {source}")]
    Invalid {
        /// File name or built-in case name.
        origin: String,
        /// What is wrong.
        source: ProblemError,
    },
}

impl Case {
    /// Parses a case from TOML text; `origin` (file or built-in name) prefixes messages.
    pub fn from_toml(text: &str, origin: &str) -> Result<Case, CaseError> {
        toml::from_str(text).map_err(|e| CaseError::Parse {
            origin: origin.into(),
            message: e.to_string(),
        })
    }

    /// The resolved case (every default filled in) as TOML.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a case always serialises")
    }

    /// Nodes per axis as a 3-array (axis 2 = 1 in 2D).
    fn nodes(&self) -> Result<[usize; 3], ProblemError> {
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
        Ok(n)
    }

    /// Scheme parameters.
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
        if s.check_interval == 0 {
            return Err(ProblemError::OutOfRange {
                name: "numerics.check_interval",
                value: 0.0,
                allowed: "at least 1",
            });
        }
        Ok(StopCriteria {
            tolerance: s.tolerance,
            max_iterations: s.max_iterations,
            check_interval: s.check_interval,
        })
    }

    /// The problem in precision `R`.
    pub fn problem<R: Real>(&self) -> Result<Problem<R>, ProblemError> {
        let n = self.nodes()?;
        match self.case.kind {
            CaseKind::LidDrivenCavity => cavity::lid_driven(
                self.grid.dim,
                n,
                self.physics.reynolds,
                self.physics.lid_velocity,
                self.numerics(),
            ),
        }
    }
}

/// Built-in cases: `(name, TOML text)`.
pub const BUILTIN: [(&str, &str); 4] = [
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
];

/// The built-in case called `name`.
pub fn builtin(name: &str) -> Option<Case> {
    let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name)?;
    Some(Case::from_toml(text, name).expect("built-in cases parse"))
}
