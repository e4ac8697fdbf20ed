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

/// What a callback sees at a check.
#[derive(Debug)]
pub struct Progress<'a> {
    /// The run's record, this check's residuals last in its history.
    pub sim: &'a Simulation,
    /// Wall time of this call of [`Simulation::run`] so far, seconds.
    pub elapsed: f64,
    /// The run ends at this check by itself: converged, or at the iteration limit.
    pub last: bool,
}

impl Progress<'_> {
    /// Iterations done.
    pub fn iteration(&self) -> usize {
        self.sim.iteration
    }

    /// Relative residuals of this check (empty if the run had nothing left to do).
    pub fn relative(&self) -> &[f64] {
        self.sim.history.last().map_or(&[], |h| &h.relative)
    }
}

/// A callback's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep iterating.
    Continue,
    /// Stop after this check (signal, wall-time limit): the state is kept as it is.
    Stop,
}

/// When a callback is called. Callbacks are called at residual checks only (every
/// `StopCriteria::check_interval` iterations), so a run continued from a checkpoint calls them
/// at the same iterations as one that was never stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Schedule {
    /// At every check.
    EveryCheck,
    /// At the first check at or after each multiple of this many iterations (0: never).
    Iterations(usize),
    /// Once, when the run ends without error: converged, at the iteration limit, or stopped
    /// by a callback (a callback that stops makes the `AtEnd` callbacks after it due at the
    /// same check).
    AtEnd,
    /// When any of these is due (the callback is still called once per check).
    Any(Vec<Schedule>),
}

impl Schedule {
    /// Whether the schedule is due at a check at `iteration` while running (`AtEnd` is not);
    /// `next` holds the next multiple per `Iterations` term, in order.
    fn due_while_running(&self, iteration: usize, next: &[usize]) -> bool {
        self.terms()
            .zip(next)
            .any(|(s, n)| *s == Schedule::EveryCheck || (*n > 0 && iteration >= *n))
    }

    fn at_end(&self) -> bool {
        self.terms().any(|s| *s == Schedule::AtEnd)
    }

    /// The plain terms (`Any` flattened).
    fn terms(&self) -> Box<dyn Iterator<Item = &Schedule> + '_> {
        match self {
            Schedule::Any(all) => Box::new(all.iter().flat_map(|s| s.terms())),
            s => Box::new(std::iter::once(s)),
        }
    }

    /// Per term: the next iteration at which an `Iterations(n)` term falls due after
    /// `iteration` (0 for the other terms and for n = 0).
    fn next_after(&self, iteration: usize) -> Vec<usize> {
        self.terms()
            .map(|s| match s {
                Schedule::Iterations(n) if *n > 0 => (iteration / n + 1) * n,
                _ => 0,
            })
            .collect()
    }
}

/// What a callback does when it is due: it sees the progress and the backend (to download
/// fields, say), and may ask the run to stop.
pub type CallbackFn<'a, B, E> = dyn FnMut(&Progress, &mut B) -> Result<Flow, E> + 'a;

/// A callback with its schedule.
pub struct Callback<'a, B: ?Sized, E> {
    /// When it is called.
    pub schedule: Schedule,
    /// What it does.
    pub call: Box<CallbackFn<'a, B, E>>,
}

impl<'a, B: ?Sized, E> Callback<'a, B, E> {
    /// `call` on `schedule`.
    pub fn new(
        schedule: Schedule,
        call: impl FnMut(&Progress, &mut B) -> Result<Flow, E> + 'a,
    ) -> Callback<'a, B, E> {
        Callback {
            schedule,
            call: Box::new(call),
        }
    }
}

/// Why [`Simulation::run`] ended early: the iteration failed, or a callback did.
#[derive(Debug, Error)]
pub enum RunError<E> {
    /// Divergence or a backend failure.
    #[error(transparent)]
    Solve(#[from] SolveError),
    /// A callback's error.
    #[error("{0}")]
    Callback(E),
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

    /// Iterates until convergence, the iteration limit, divergence or a callback's `Stop`,
    /// calling `callbacks` in order at the checks where they are due. `names` are the
    /// equation names used in messages.
    pub fn run<B: Backend + ?Sized, E>(
        &mut self,
        backend: &mut B,
        names: &[&str],
        callbacks: &mut [Callback<'_, B, E>],
    ) -> Result<Outcome, RunError<E>> {
        let start = Instant::now();
        let mut next: Vec<Vec<usize>> = callbacks
            .iter()
            .map(|c| c.schedule.next_after(self.iteration))
            .collect();
        let mut converged = self
            .history
            .last()
            .is_some_and(|h| self.is_converged(&h.relative));
        let (mut interrupted, mut checked) = (false, false);
        while !converged && self.iteration < self.stop.max_iterations && !interrupted {
            let relative = self.advance(backend, names)?;
            converged = self.is_converged(&relative);
            self.history.push(HistoryRow {
                iteration: self.iteration,
                relative,
            });
            let last = converged || self.iteration >= self.stop.max_iterations;
            tracing::trace!(iteration = self.iteration, "residual check");
            interrupted = self.call_due(callbacks, &mut next, backend, start, last)?;
            checked = true;
        }
        if !checked {
            // Nothing was left to iterate (a finished run continued): it ends here.
            self.call_due(callbacks, &mut next, backend, start, true)?;
        }
        Ok(Outcome {
            converged,
            interrupted,
            wall_seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// [`Simulation::run`] without callbacks.
    pub fn run_plain<B: Backend + ?Sized>(
        &mut self,
        backend: &mut B,
        names: &[&str],
    ) -> Result<Outcome, SolveError> {
        self.run::<B, std::convert::Infallible>(backend, names, &mut [])
            .map_err(|e| match e {
                RunError::Solve(e) => e,
                RunError::Callback(never) => match never {},
            })
    }

    /// Calls the callbacks due at this check, in order; returns whether one asked to stop.
    fn call_due<B: Backend + ?Sized, E>(
        &self,
        callbacks: &mut [Callback<'_, B, E>],
        next: &mut [Vec<usize>],
        backend: &mut B,
        start: Instant,
        last: bool,
    ) -> Result<bool, RunError<E>> {
        let progress = Progress {
            sim: self,
            elapsed: start.elapsed().as_secs_f64(),
            last,
        };
        let mut stop = false;
        for (c, next) in callbacks.iter_mut().zip(next) {
            let ending = (last || stop) && c.schedule.at_end();
            if ending || c.schedule.due_while_running(self.iteration, next) {
                stop |= (c.call)(&progress, backend).map_err(RunError::Callback)? == Flow::Stop;
                *next = c.schedule.next_after(self.iteration);
            }
        }
        Ok(stop)
    }

    /// One chunk of iterations (the first iteration alone: its residuals normalise all later
    /// ones); returns the relative residuals, or the divergence.
    fn advance<B: Backend + ?Sized>(
        &mut self,
        backend: &mut B,
        names: &[&str],
    ) -> Result<Vec<f64>, SolveError> {
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
        Ok(relative)
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

    use ferroflow_core::{Fields, Layout, Residuals};

    /// Residuals that halve every iteration.
    struct Halving(f64);

    impl Backend for Halving {
        type Real = f64;
        fn name(&self) -> &'static str {
            "halving"
        }
        fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
            self.0 *= 0.5f64.powi(iterations as i32);
            Ok(Residuals {
                sum_sq: vec![self.0 * self.0],
                nodes: 1,
            })
        }
        fn download(&mut self) -> Result<Fields<f64>, BackendError> {
            Ok(Fields::zeros(Layout::new(2, [5, 5, 1]), 1))
        }
        fn upload(&mut self, _: &Fields<f64>) -> Result<(), BackendError> {
            Ok(())
        }
    }

    /// Iterations at which a callback on `schedule` is called in a run from `from` that the
    /// callback at every check stops at `stop_at`.
    fn calls(schedule: Schedule, from: usize, stop_at: usize) -> Vec<(usize, bool)> {
        let stop = StopCriteria {
            tolerance: 1e-300,
            max_iterations: 200,
            check_interval: 10,
        };
        let mut sim = Simulation::new(stop);
        let mut backend = Halving(1.0);
        if from > 0 {
            sim.initial = Some(vec![1.0]);
            sim.iteration = from;
        }
        let mut seen = Vec::new();
        let mut callbacks: [Callback<Halving, ()>; 2] = [
            Callback::new(Schedule::EveryCheck, |p, _| {
                Ok(match p.iteration() >= stop_at {
                    true => Flow::Stop,
                    false => Flow::Continue,
                })
            }),
            Callback::new(schedule, |p, _| {
                seen.push((p.iteration(), p.last));
                Ok(Flow::Continue)
            }),
        ];
        sim.run(&mut backend, &["p"], &mut callbacks).unwrap();
        drop(callbacks);
        seen
    }

    #[test]
    fn callbacks_fall_due_at_the_checks_their_schedules_name() {
        // Checks at 1, 11, 21, ...: the first at or after each multiple of 25.
        assert_eq!(
            calls(Schedule::Iterations(25), 0, 1000),
            [
                (31, false),
                (51, false),
                (81, false),
                (101, false),
                (131, false),
                (151, false),
                (181, false),
                (200, true)
            ]
        );
        // Continued from iteration 51, the same checks (61, 71, ...) are due.
        assert_eq!(calls(Schedule::Iterations(25), 51, 90)[0], (81, false));
        // At the end: once, at the iteration limit or where a callback stopped the run.
        assert_eq!(calls(Schedule::AtEnd, 0, 1000), [(200, true)]);
        assert_eq!(calls(Schedule::AtEnd, 0, 40), [(41, false)]);
        // Both at one check: called once.
        let any = Schedule::Any(vec![Schedule::Iterations(20), Schedule::AtEnd]);
        assert_eq!(calls(any, 0, 40), [(21, false), (41, false)]);
        assert!(calls(Schedule::Iterations(0), 0, 1000).is_empty());
    }

    #[test]
    fn zero_first_residuals_fall_back_to_the_largest() {
        assert_eq!(normalisers(&[2.0, 0.0, 0.5]), vec![2.0, 2.0, 0.5]);
        assert_eq!(normalisers(&[0.0, 0.0]), vec![1.0, 1.0]);
    }
}
