//! The pseudo-time driver: advances a backend in chunks, watches residuals, stops on
//! convergence, divergence, the iteration limit or the observer's request.
use ferroflow_core::{Backend, BackendError};
use std::time::Instant;
use thiserror::Error;

/// When to stop iterating.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StopCriteria {
    /// Converged when every equation's residual, relative to its first iteration's, is below this.
    pub tolerance: f64,
    /// Hard limit on iterations.
    pub max_iterations: usize,
    /// Residuals are fetched, recorded and checked every this many iterations.
    pub check_interval: usize,
}

/// Residual growth (relative to the first iteration) taken as divergence.
pub const DIVERGENCE_FACTOR: f64 = 1e6;

/// One row of the residual history.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryRow {
    /// Iteration count after which the residuals were taken.
    pub iteration: usize,
    /// Residual L2 norm of each equation, relative to its first iteration's.
    pub relative: Vec<f64>,
}

/// What the observer sees at each check.
#[derive(Debug)]
pub struct Progress<'a> {
    /// Iterations done.
    pub iteration: usize,
    /// Relative residuals at this check.
    pub relative: &'a [f64],
    /// Wall time of this run so far, seconds.
    pub elapsed: f64,
}

/// The observer's answer at each check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep iterating.
    Continue,
    /// Stop now (signal, wall-time limit): the state is kept as it is.
    Stop,
}

/// Why a run could not go on.
#[derive(Debug, Error)]
pub enum SolveError {
    /// Residuals became non-finite or grew beyond [`DIVERGENCE_FACTOR`].
    #[error("diverged at iteration {iteration}: residual of {variable} is {value:e} (relative to its first iteration)")]
    Diverged {
        /// Iteration at which divergence was detected.
        iteration: usize,
        /// Variable (equation) name.
        variable: String,
        /// The offending relative residual.
        value: f64,
    },
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// How a run ended (divergence and failures are errors).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Residuals fell below the tolerance.
    pub converged: bool,
    /// The observer asked to stop.
    pub interrupted: bool,
    /// Wall time of this call, seconds.
    pub wall_seconds: f64,
}

/// Iteration state of a run: survives restarts through checkpoints.
#[derive(Debug, Clone, PartialEq)]
pub struct Simulation {
    /// Stop criteria.
    pub stop: StopCriteria,
    /// Iterations done so far.
    pub iteration: usize,
    /// Residual norms of the first iteration (the normalisers), once known.
    pub initial: Option<Vec<f64>>,
    /// Residual history.
    pub history: Vec<HistoryRow>,
}

impl Simulation {
    /// A run that has not started.
    pub fn new(stop: StopCriteria) -> Simulation {
        Simulation {
            stop,
            iteration: 0,
            initial: None,
            history: Vec::new(),
        }
    }

    /// Iterates until convergence, the iteration limit, divergence or the observer's `Stop`.
    /// `names` are the equation names used in messages.
    pub fn run<B: Backend + ?Sized>(
        &mut self,
        backend: &mut B,
        names: &[&str],
        mut observer: impl FnMut(&Progress) -> Flow,
    ) -> Result<Outcome, SolveError> {
        let start = Instant::now();
        let mut converged = self
            .history
            .last()
            .is_some_and(|h| self.is_converged(&h.relative));
        let mut interrupted = false;
        while !converged && self.iteration < self.stop.max_iterations {
            // The first iteration alone: its residuals normalise all later ones.
            let chunk = if self.initial.is_none() {
                1
            } else {
                self.stop
                    .check_interval
                    .min(self.stop.max_iterations - self.iteration)
            };
            let l2 = backend.advance(chunk)?.l2();
            self.iteration += chunk;
            let initial = self.initial.get_or_insert_with(|| normalisers(&l2));
            let relative: Vec<f64> = l2
                .iter()
                .zip(initial.iter())
                .map(|(r, r0)| r / r0)
                .collect();
            if let Some((e, &value)) = relative
                .iter()
                .enumerate()
                .find(|(_, r)| !r.is_finite() || **r > DIVERGENCE_FACTOR)
            {
                return Err(SolveError::Diverged {
                    iteration: self.iteration,
                    variable: names.get(e).unwrap_or(&"?").to_string(),
                    value,
                });
            }
            converged = self.is_converged(&relative);
            let progress = Progress {
                iteration: self.iteration,
                relative: &relative,
                elapsed: start.elapsed().as_secs_f64(),
            };
            interrupted = observer(&progress) == Flow::Stop;
            self.history.push(HistoryRow {
                iteration: self.iteration,
                relative,
            });
            if interrupted {
                break;
            }
        }
        Ok(Outcome {
            converged,
            interrupted,
            wall_seconds: start.elapsed().as_secs_f64(),
        })
    }

    fn is_converged(&self, relative: &[f64]) -> bool {
        relative.iter().all(|r| *r <= self.stop.tolerance)
    }
}

/// First-iteration norms as normalisers. An equation at rest in the first iteration (e.g. v
/// in a cavity started from rest) is normalised by the largest first norm instead of zero.
fn normalisers(first: &[f64]) -> Vec<f64> {
    let largest = first
        .iter()
        .cloned()
        .filter(|x| x.is_finite())
        .fold(0.0, f64::max);
    let fallback = if largest > 0.0 { largest } else { 1.0 };
    first
        .iter()
        .map(|&r| if r > 0.0 { r } else { fallback })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_first_residuals_fall_back_to_the_largest() {
        assert_eq!(normalisers(&[2.0, 0.0, 0.5]), vec![2.0, 2.0, 0.5]);
        assert_eq!(normalisers(&[0.0, 0.0]), vec![1.0, 1.0]);
    }
}
