use thiserror::Error;

/// A problem definition that no backend can iterate.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ProblemError {
    /// A physical or numerical parameter outside its valid range.
    #[error("{name} = {} is out of range: {allowed}", number(*.value))]
    OutOfRange {
        /// Parameter name, as in case files (e.g. `physics.viscosity`).
        name: &'static str,
        /// The rejected value.
        value: f64,
        /// The allowed range, in words.
        allowed: &'static str,
    },
    /// A setting that is wrong in a way a range cannot say (a key whose name is built at run
    /// time, such as a boundary patch's, or one that contradicts another key).
    #[error("{key}: {message}")]
    Key {
        /// Dotted key, as in case files (e.g. `boundary.ymax.velocity`).
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// A grid too small for the stencils and boundary extrapolation.
    #[error("grid has {nodes} nodes along axis {axis}; at least {min} are needed by the stencil")]
    GridTooSmall {
        /// Axis (0 = x, 1 = y, 2 = z).
        axis: usize,
        /// Nodes along that axis.
        nodes: usize,
        /// Minimum number of nodes.
        min: usize,
    },
    /// Unsupported dimensionality.
    #[error("dimension {0} is not supported (2 or 3)")]
    Dimension(usize),
    /// Arrays that do not match the grid.
    #[error("{what} has {got} values, the grid needs {expected}")]
    Shape {
        /// Which array.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The length the layout needs.
        expected: usize,
    },
}

impl ProblemError {
    /// A [`ProblemError::Key`] error.
    pub fn key(key: impl Into<String>, message: impl Into<String>) -> ProblemError {
        ProblemError::Key {
            key: key.into(),
            message: message.into(),
        }
    }

    /// `value` if it is finite and above zero, else the error naming parameter `name`.
    pub fn positive(name: &'static str, value: f64) -> Result<f64, ProblemError> {
        if value > 0.0 && value.is_finite() {
            Ok(value)
        } else {
            Err(ProblemError::OutOfRange {
                name,
                value,
                allowed: "a finite value > 0",
            })
        }
    }
}

/// A failure inside a backend.
#[derive(Debug, Error)]
pub enum BackendError {
    /// The backend cannot run on this machine (no device, driver or compiler).
    #[error("backend {backend} is not available: {reason}")]
    Unavailable {
        /// Backend name.
        backend: &'static str,
        /// Why, exactly.
        reason: String,
    },
    /// The backend cannot serve this problem.
    #[error("backend {backend} does not support {what}")]
    NotSuitable {
        /// Backend name.
        backend: &'static str,
        /// What it lacks.
        what: String,
    },
    /// Not enough free device memory for what was asked.
    #[error(
        "backend {backend}: out of device memory for {what}: needs {:.2} GiB, {:.2} GiB free",
        gib(.needed_bytes),
        gib(.available_bytes)
    )]
    OutOfMemory {
        /// Backend name.
        backend: &'static str,
        /// Bytes needed.
        needed_bytes: u64,
        /// Bytes free on the device.
        available_bytes: u64,
        /// What needs them, and on which device.
        what: String,
    },
    /// A driver or runtime call failed.
    #[error("backend {backend}: {op}: {message}")]
    Driver {
        /// Backend name.
        backend: &'static str,
        /// What the call was doing (e.g. `creating a stream`).
        op: String,
        /// The driver's message.
        message: String,
    },
    /// A kernel failed to compile at run time.
    #[error("backend {backend}: could not compile {build}\n{log}")]
    Compile {
        /// Backend name.
        backend: &'static str,
        /// The build: source, specialisation and options.
        build: String,
        /// The compiler's log.
        log: String,
    },
    /// Any other failure, with the backend's own message.
    #[error("backend {backend}: {message}")]
    Failed {
        /// Backend name.
        backend: &'static str,
        /// The message.
        message: String,
    },
}

/// `x` as a user would write it: in exponent form when very small or large (1e300, not 300
/// digits).
fn number(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Bytes in GiB, for messages.
fn gib(bytes: &u64) -> f64 {
    *bytes as f64 / (1u64 << 30) as f64
}
