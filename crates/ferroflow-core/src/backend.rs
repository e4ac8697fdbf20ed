use crate::{BackendError, Fields, Layout, Points, Real, Snapshot};

/// Sums of squared residuals (pseudo-time derivatives) of one iteration, per equation.
/// Accumulated in f64 in a fixed order, so they do not depend on the thread count.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Residuals {
    /// Sum of squared residuals per equation.
    pub sum_sq: Vec<f64>,
    /// Number of nodes summed over.
    pub nodes: usize,
}

impl Residuals {
    /// Zero sums of `equations` equations over `nodes` nodes.
    pub fn zeros(equations: usize, nodes: usize) -> Residuals {
        Residuals {
            sum_sq: vec![0.0; equations],
            nodes,
        }
    }

    /// Number of equations.
    pub fn equations(&self) -> usize {
        self.sum_sq.len()
    }

    /// Adds `sums` (one per equation, of part of the same grid) to these.
    pub fn add_sums(&mut self, sums: &[f64]) {
        debug_assert_eq!(sums.len(), self.sum_sq.len());
        for (t, s) in self.sum_sq.iter_mut().zip(sums) {
            *t += s;
        }
    }

    /// Adds the sums of `other` (another block of the same grid) to these.
    pub fn add(&mut self, other: &Residuals) {
        self.add_sums(&other.sum_sq);
    }

    /// Root-mean-square residual of each equation.
    pub fn l2(&self) -> Vec<f64> {
        self.sum_sq
            .iter()
            .map(|s| (s / self.nodes as f64).sqrt())
            .collect()
    }
}

/// A compute backend: owns the state where it computes (host memory, a GPU) and the kernels.
/// The driver sequences iterations, checks convergence and writes outputs; it never sees
/// how or where the backend computes.
pub trait Backend {
    /// Floating-point type of the state.
    type Real: Real;

    /// Name used in case files, on the command line and in summaries.
    fn name(&self) -> &'static str;

    /// Runs `iterations` pseudo-time iterations (each: fused interior update, boundary
    /// fill, buffer swap) and returns the residuals of the last one.
    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError>;

    /// The layout of the whole state (every block's, for a decomposed grid).
    fn layout(&self) -> Layout;

    /// Copies the current state to the host (as the scheme keeps it: an artificial-
    /// compressibility state's pressure is not yet referenced, see
    /// `ferroflow_ac::Problem::reference_pressure`).
    fn download(&mut self) -> Result<Fields<Self::Real>, BackendError>;

    /// Replaces the current state (restart); boundary ghosts are filled from it.
    fn upload(&mut self, fields: &Fields<Self::Real>) -> Result<(), BackendError>;

    /// The pieces of the state this process holds (see [`crate::Solver::pieces`]): by default
    /// the whole state.
    fn pieces(&mut self) -> Result<Vec<Snapshot<Self::Real>>, BackendError> {
        Ok(vec![self.download()?.snapshot()])
    }

    /// The points of [`Backend::pieces`], without the values.
    fn piece_points(&self) -> Vec<Points> {
        let l = self.layout();
        vec![Points::grid(l.dim, l.n)]
    }

    /// Replaces the current state with `pieces`, those of [`Backend::piece_points`] in order
    /// (see [`crate::Solver::restore_pieces`]): by default the whole state, one piece.
    fn restore_pieces(&mut self, pieces: &[Snapshot<Self::Real>]) -> Result<(), BackendError> {
        match pieces {
            [whole] => crate::Solver::restore(self, whole),
            _ => Err(BackendError::NotSuitable {
                backend: self.name(),
                what: format!("a state in {} pieces", pieces.len()),
            }),
        }
    }
}
