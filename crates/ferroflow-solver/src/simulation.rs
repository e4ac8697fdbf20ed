//! The pseudo-time driver: advances a backend in chunks, watches residuals, stops on
//! convergence, divergence, a stall, the iteration limit or the observer's request.
use ferroflow_core::{BackendError, Real, Solver};
use std::collections::VecDeque;
use std::fmt;
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
    /// The shortest stall window, in checks ([`STALL_CHECKS`] for the explicit scheme,
    /// [`IMPLICIT_STALL_CHECKS`] for implicit relaxations).
    pub stall_checks: usize,
}

/// Residual growth (relative to the first iteration) taken as divergence.
pub const DIVERGENCE_FACTOR: f64 = 1e6;

/// A run has stalled when the largest relative residual has not fallen below (1 −
/// `STALL_DROP`) times its earlier minimum over the last half of the iterations done, and
/// over at least [`STALL_CHECKS`] checks. Measured on the built-in cases in f64: over any
/// such window the residual falls at least 33 % (the 2D cavity at Re = 1000, 387k iterations
/// with plateaus of thousands) and 42 % (the 3D one); in f32 the cavities at round-off stay
/// flat, within 0.5 % of their minimum.
pub const STALL_DROP: f64 = 0.01;

/// The shortest stall window, in checks: the early transients of a run are not stalls.
pub const STALL_CHECKS: usize = 100;

/// The shortest stall window of an implicit relaxation, in checks: it converges in thousands
/// of iterations, not hundreds of thousands. Replayed on 40 converged implicit histories (SGS,
/// Jacobi, line, red–black; f32 and f64 operator; CPU and GPU): no false stall; the f32-state
/// stalls of the 2D cavities are found at 1,801–5,501 iterations instead of 5,801–7,751.
pub const IMPLICIT_STALL_CHECKS: usize = 20;

/// A check whose largest relative residual is more than this many times the lowest since the
/// last such check is in a transient, not a stall: the residual has grown (that of the
/// buoyancy-driven cavity 400-fold over its first 1500 iterations, and at Ra = 1e3 twelvefold
/// over 4500). The stall test compares only the checks after the last such one, so a run that
/// grows and then stays at a level above its earlier low (an implicit relaxation with too large
/// a pseudo-time step on a coarse grid: 0.56 from 0.2) stalls at that level. Once in a
/// transient, every check above all since is one too: the stall test starts past the peak.
pub const STALL_TRANSIENT: f64 = 2.0;

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
    /// The run ends at this check, by itself or because an earlier callback stopped it.
    pub ending: bool,
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

/// What a callback does when it is due: it sees the progress and the solver (to take a
/// snapshot, say), and may ask the run to stop.
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
    /// The first iteration's residual norms are all zero or so small that their squares are
    /// subnormal: nothing measurable moves, so no convergence can be judged.
    #[error(
        "the residual norms of the first iteration are zero or subnormal ({norms:?}): nothing \
         measurable drives the flow, so its convergence cannot be judged"
    )]
    Unmeasurable {
        /// The norms.
        norms: Vec<f64>,
    },
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Where a stalled run stands (see [`STALL_DROP`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Stall {
    /// Iteration of the check that found the stall.
    pub iteration: usize,
    /// Iterations over which the residual has not fallen.
    pub window: usize,
    /// The lowest largest relative residual over the stall window: the level it stalled at.
    pub level: f64,
    /// The first check since the last transient at which the largest relative residual was
    /// at `level` or below.
    pub level_at: usize,
    /// The equation with the largest residual at the stall.
    pub variable: String,
    /// Machine epsilon of the run's precision.
    pub epsilon: f64,
    /// The precision's name.
    pub precision: &'static str,
}

impl Stall {
    /// Whether the level is in the round-off range of the precision (at most √ε): sums of
    /// terms rounded to ε, relative to a first residual that the grid makes smaller than the
    /// terms, do not cancel further.
    pub fn at_round_off(&self) -> bool {
        self.level <= self.epsilon.sqrt()
    }

    /// The smallest tolerance the run reached: its level rounded up to two significant digits.
    pub fn reachable_tolerance(&self) -> f64 {
        let unit = 10f64.powf(self.level.log10().floor() - 1.0);
        let rounded = (self.level / unit).ceil() * unit;
        // The product may round below the level; the next step up does not.
        if rounded < self.level {
            rounded + unit
        } else {
            rounded
        }
    }
}

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stalled at iteration {}: the largest relative residual ({}) has stayed at about \
             {:.2e} (first reached at iteration {}) for the last {} iterations; ",
            self.iteration, self.variable, self.level, self.level_at, self.window
        )?;
        let units = self.level / self.epsilon;
        if self.at_round_off() {
            write!(
                f,
                "that is {units:.0} epsilon of {}, the round-off level of the precision",
                self.precision
            )?;
        } else {
            write!(
                f,
                "that is {units:.1e} epsilon of {}, far above its round-off: the iteration \
                 itself has stopped making progress",
                self.precision
            )?;
        }
        write!(
            f,
            "; a tolerance of {:.1e} would have been reached",
            self.reachable_tolerance()
        )
    }
}

/// How a run ended (divergence and failures are errors).
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Residuals fell below the tolerance.
    pub converged: bool,
    /// The residuals stopped falling before the tolerance.
    pub stalled: Option<Stall>,
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
    pub fn run<B: Solver + ?Sized, E>(
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
        // A continued run judges stalls on its whole history, as one never stopped would.
        let shortest = self.stop.stall_checks * self.stop.check_interval;
        let mut watch = StallWatch::default();
        for k in 1..=self.history.len() {
            watch.stalled(&self.history[..k], shortest);
        }
        let mut stalled = None;
        let (mut interrupted, mut checked) = (false, false);
        while !converged
            && stalled.is_none()
            && self.iteration < self.stop.max_iterations
            && !interrupted
        {
            let relative = self.advance(backend, names)?;
            converged = self.is_converged(&relative);
            self.history.push(HistoryRow {
                iteration: self.iteration,
                relative,
            });
            if !converged && watch.stalled(&self.history, shortest) {
                stalled = Some(self.stall::<B::Real>(names, &watch));
            }
            let last = converged || stalled.is_some() || self.iteration >= self.stop.max_iterations;
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
            stalled,
            interrupted,
            wall_seconds: start.elapsed().as_secs_f64(),
        })
    }

    /// [`Simulation::run`] without callbacks.
    pub fn run_plain<B: Solver + ?Sized>(
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
    fn call_due<B: Solver + ?Sized, E>(
        &self,
        callbacks: &mut [Callback<'_, B, E>],
        next: &mut [Vec<usize>],
        backend: &mut B,
        start: Instant,
        last: bool,
    ) -> Result<bool, RunError<E>> {
        let elapsed = start.elapsed().as_secs_f64();
        let mut stop = false;
        for (c, next) in callbacks.iter_mut().zip(next) {
            let ending = (last || stop) && c.schedule.at_end();
            if ending || c.schedule.due_while_running(self.iteration, next) {
                let progress = Progress {
                    sim: self,
                    elapsed,
                    last,
                    ending: last || stop,
                };
                stop |= (c.call)(&progress, backend).map_err(RunError::Callback)? == Flow::Stop;
                *next = c.schedule.next_after(self.iteration);
            }
        }
        Ok(stop)
    }

    /// One chunk of iterations (the first iteration alone: its residuals normalise all later
    /// ones); returns the relative residuals, or the divergence.
    fn advance<B: Solver + ?Sized>(
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
        let initial = match &self.initial {
            Some(initial) => initial,
            None => self.initial.insert(
                normalisers(&l2).ok_or_else(|| SolveError::Unmeasurable { norms: l2.clone() })?,
            ),
        };
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

    /// The stall that `watch` found at the last check.
    fn stall<R: Real>(&self, names: &[&str], watch: &StallWatch) -> Stall {
        let level = watch.level();
        let level_at = self.history[watch.since..]
            .iter()
            .find(|h| largest(&h.relative) <= level)
            .map_or(self.iteration, |h| h.iteration);
        let last = &self.history[self.history.len() - 1].relative;
        let worst = (0..last.len()).fold(0, |w, e| if last[e] > last[w] { e } else { w });
        Stall {
            iteration: self.iteration,
            window: self.iteration - watch.start,
            level,
            level_at,
            variable: names.get(worst).unwrap_or(&"?").to_string(),
            epsilon: R::epsilon().f64(),
            precision: R::NAME,
        }
    }
}

/// The largest relative residual of a check: the one the tolerance waits for.
fn largest(relative: &[f64]) -> f64 {
    relative.iter().cloned().fold(0.0, f64::max)
}

/// The stall test of [`STALL_DROP`], kept as the history grows: the minimum before the window
/// (since the last transient, see [`STALL_TRANSIENT`]) and a queue of the window's rows whose
/// values increase (its front is the window's minimum).
#[derive(Default)]
struct StallWatch {
    /// The lowest value since the last transient (of the run, without one).
    lowest: Option<f64>,
    /// The highest value since the last transient.
    peak: Option<f64>,
    /// Row of the history where the last transient was seen (0 without one).
    since: usize,
    /// Rows of the history before the window, or up to the end of the last transient.
    before_rows: usize,
    /// Their minimum (none while there are none).
    before: Option<f64>,
    /// `(row, value)` candidates for the window's minimum, values increasing.
    window: VecDeque<(usize, f64)>,
    /// Iteration at which the window starts.
    start: usize,
}

impl StallWatch {
    /// Takes the last row of `history` into account; returns whether the run has stalled.
    /// The window (the last half of the iterations, at least `shortest`) only moves forward.
    fn stalled(&mut self, history: &[HistoryRow], shortest: usize) -> bool {
        let row = history.len() - 1;
        let (iteration, value) = (history[row].iteration, largest(&history[row].relative));
        let lowest = self.lowest.map_or(value, |l| l.min(value));
        // Growing past every value since the last transient: the transient goes on.
        let rising = self.peak.is_some_and(|p| value > p);
        if value > STALL_TRANSIENT * lowest || (self.since > 0 && rising) {
            *self = StallWatch {
                lowest: Some(value),
                peak: Some(value),
                before_rows: row + 1,
                since: row,
                ..StallWatch::default()
            };
            return false;
        }
        self.lowest = Some(lowest);
        self.peak = Some(self.peak.map_or(value, |p| p.max(value)));
        while self.window.back().is_some_and(|&(_, v)| v >= value) {
            self.window.pop_back();
        }
        self.window.push_back((row, value));
        self.start = iteration.saturating_sub(shortest.max(iteration / 2));
        while self.before_rows < row && history[self.before_rows].iteration <= self.start {
            let v = largest(&history[self.before_rows].relative);
            self.before = Some(self.before.map_or(v, |b| b.min(v)));
            if self
                .window
                .front()
                .is_some_and(|&(r, _)| r == self.before_rows)
            {
                self.window.pop_front();
            }
            self.before_rows += 1;
        }
        match (self.before, self.window.front()) {
            (Some(before), Some(&(_, inside))) => inside >= (1.0 - STALL_DROP) * before,
            _ => false,
        }
    }

    /// The window's lowest value: the level a stalled run stays at.
    fn level(&self) -> f64 {
        self.window.front().map_or(f64::INFINITY, |&(_, v)| v)
    }
}

/// A norm usable as a normaliser: finite, and its square (as the backends sum it) normal.
fn measurable(r: f64) -> bool {
    r.is_finite() && r * r >= f64::MIN_POSITIVE
}

/// First-iteration norms as normalisers. An equation at rest in the first iteration (e.g. v
/// in a cavity started from rest), or whose norm is too small to measure, is normalised by the
/// largest first norm; none if no norm is measurable (see [`SolveError::Unmeasurable`]).
fn normalisers(first: &[f64]) -> Option<Vec<f64>> {
    let largest = first
        .iter()
        .cloned()
        .filter(|r| measurable(*r))
        .reduce(f64::max)?;
    Some(
        first
            .iter()
            .map(|&r| if measurable(r) { r } else { largest })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    use ferroflow_core::{Points, Residuals, Snapshot};

    /// An empty 5 x 5 grid's snapshot of `vars` variables.
    fn snapshot<R>(vars: usize) -> Snapshot<R> {
        Snapshot {
            points: Points::grid(2, [5, 5, 1]),
            vars: (0..vars).map(|_| Vec::new()).collect(),
        }
    }

    /// Residuals that halve every iteration.
    struct Halving(f64);

    impl Solver for Halving {
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
        fn snapshot(&mut self) -> Result<Snapshot<f64>, BackendError> {
            Ok(snapshot(1))
        }
        fn piece_points(&self) -> Vec<Points> {
            vec![snapshot::<f64>(1).points]
        }
        fn restore_pieces(&mut self, _: &[Snapshot<f64>]) -> Result<(), BackendError> {
            Ok(())
        }
        fn restore(&mut self, _: &Snapshot<f64>) -> Result<(), BackendError> {
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
            stall_checks: STALL_CHECKS,
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
    fn unmeasurable_first_residuals_fall_back_to_the_largest() {
        assert_eq!(normalisers(&[2.0, 0.0, 0.5]), Some(vec![2.0, 2.0, 0.5]));
        // A norm whose square underflows normalises nothing.
        assert_eq!(normalisers(&[1e-160, 3.0]), Some(vec![3.0, 3.0]));
        assert_eq!(normalisers(&[0.0, 0.0]), None);
        assert_eq!(normalisers(&[1e-160, f64::NAN]), None);
    }

    /// Residual norms given as a function of the iteration count.
    struct Scripted<F: Fn(usize) -> f64> {
        iteration: usize,
        norm: F,
    }

    fn scripted<F: Fn(usize) -> f64>(norm: F) -> Scripted<F> {
        Scripted { iteration: 0, norm }
    }

    impl<F: Fn(usize) -> f64> Solver for Scripted<F> {
        type Real = f32;
        fn name(&self) -> &'static str {
            "scripted"
        }
        fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
            self.iteration += iterations;
            let r = (self.norm)(self.iteration);
            Ok(Residuals {
                sum_sq: vec![r * r, 0.5 * r * r],
                nodes: 1,
            })
        }
        fn snapshot(&mut self) -> Result<Snapshot<f32>, BackendError> {
            Ok(snapshot(2))
        }
        fn piece_points(&self) -> Vec<Points> {
            vec![snapshot::<f32>(2).points]
        }
        fn restore_pieces(&mut self, _: &[Snapshot<f32>]) -> Result<(), BackendError> {
            Ok(())
        }
        fn restore(&mut self, _: &Snapshot<f32>) -> Result<(), BackendError> {
            Ok(())
        }
    }

    fn criteria(tolerance: f64) -> StopCriteria {
        StopCriteria {
            tolerance,
            max_iterations: 100_000,
            check_interval: 10,
            stall_checks: STALL_CHECKS,
        }
    }

    #[test]
    fn zero_first_residuals_are_not_convergence() {
        for first in [0.0, 1e-170] {
            let mut sim = Simulation::new(criteria(1e-3));
            let e = sim
                .run_plain(&mut scripted(|_| first), &["p", "u"])
                .unwrap_err();
            assert!(matches!(e, SolveError::Unmeasurable { .. }), "{e}");
            assert!(e.to_string().contains("zero or subnormal"), "{e}");
        }
    }

    #[test]
    fn constant_residuals_stall_after_the_shortest_window() {
        let mut sim = Simulation::new(criteria(1e-3));
        let outcome = sim.run_plain(&mut scripted(|_| 2.0), &["p", "u"]).unwrap();
        let stall = outcome.stalled.unwrap();
        assert!(!outcome.converged);
        // Checks at 1, 11, ...: the first whose window of 1000 iterations starts at the first.
        assert_eq!((stall.iteration, stall.window), (1001, 1000));
        assert_eq!((stall.level, stall.level_at), (1.0, 1));
        assert_eq!(stall.variable, "p");
        assert!(!stall.at_round_off());
        let text = stall.to_string();
        assert!(text.contains("far above its round-off"), "{text}");
        assert!(
            text.contains("a tolerance of 1.0e0 would have been reached"),
            "{text}"
        );
    }

    #[test]
    fn plateaus_shorter_than_half_the_run_are_no_stall() {
        // Steps of 10 % after plateaus of 900 iterations, down to the tolerance at 59k.
        let staircase = |i: usize| 0.9f64.powi((i / 900) as i32) * 1e-2;
        let mut sim = Simulation::new(criteria(1e-3));
        let outcome = sim
            .run_plain(&mut scripted(staircase), &["p", "u"])
            .unwrap();
        assert!(outcome.converged && outcome.stalled.is_none());
        // The same steps once they take longer than half the run: a stall, at the plateau.
        let slowing = |i: usize| 0.9f64.powi((i as f64).sqrt() as i32 / 30);
        let mut sim = Simulation::new(criteria(1e-6));
        let outcome = sim.run_plain(&mut scripted(slowing), &["p", "u"]).unwrap();
        let stall = outcome.stalled.unwrap();
        assert!(stall.window >= stall.iteration / 2);
        assert!(sim.iteration < 100_000);
    }

    #[test]
    fn transients_are_no_stall() {
        // Grows 388-fold over 1500 iterations, then falls tenfold every 4000, as the residual
        // of the buoyancy-driven cavity does.
        let transient = |i: usize| match i {
            0..1500 => 1.0 + 387.0 * i as f64 / 1500.0,
            _ => 388.0 * 10f64.powf(-((i - 1500) as f64) / 4000.0),
        };
        // Or first falls thirtyfold, then grows twelvefold over 4500 iterations, as at Ra = 1e3.
        let dip = |i: usize| match i {
            0..100 => 1.0 - 0.97 * i as f64 / 100.0,
            100..4600 => 0.03 + 0.33 * (i - 100) as f64 / 4500.0,
            _ => 0.36 * 10f64.powf(-((i - 4600) as f64) / 4000.0),
        };
        for norm in [&transient as &dyn Fn(usize) -> f64, &dip] {
            let mut sim = Simulation::new(criteria(1e-3));
            let outcome = sim.run_plain(&mut scripted(norm), &["p", "u"]).unwrap();
            assert!(outcome.converged && outcome.stalled.is_none());
        }
        // Stuck after the transient: a stall, at its level.
        let stuck = |i: usize| transient(i.min(12_000));
        let mut sim = Simulation::new(criteria(1e-3));
        let stall = sim
            .run_plain(&mut scripted(stuck), &["p", "u"])
            .unwrap()
            .stalled;
        assert_eq!(
            stall.map(|s| s.level),
            Some(transient(12_000) / transient(1))
        );
    }

    #[test]
    fn a_run_stuck_above_an_earlier_low_stalls_at_its_level() {
        // Falls to 0.2, grows to 0.56 and stays there, within 1 %: as the implicit relaxation
        // with an infinite pseudo-time step on the 17^3 cavity at Re = 1000.
        let stuck = |i: usize| match i {
            0..500 => 1.0 - 0.8 * i as f64 / 500.0,
            500..1000 => 0.2 + 0.36 * (i - 500) as f64 / 500.0,
            _ => 0.56 * (1.0 + 0.004 * ((i / 50) as f64).sin()),
        };
        let mut sim = Simulation::new(criteria(1e-6));
        let stall = sim
            .run_plain(&mut scripted(stuck), &["p", "u"])
            .unwrap()
            .stalled
            .expect("a stall");
        assert!(stall.iteration < 20_000, "{}", stall.iteration);
        assert!((stall.level - 0.56).abs() < 0.01, "{}", stall.level);
        // Where it came back up to that level, not the early low.
        assert!(stall.level_at >= 500, "{}", stall.level_at);
    }

    #[test]
    fn a_continued_run_stalls_where_an_unbroken_one_does() {
        let noisy =
            |i: usize| 1e-7 * (1.0 + 0.3 * ((i / 10) as f64).sin()) + 10f64.powi(-(i as i32) / 300);
        let mut whole = Simulation::new(criteria(1e-9));
        let expected = whole.run_plain(&mut scripted(noisy), &["p", "u"]).unwrap();
        let expected = expected.stalled.unwrap();

        let mut parts = Simulation::new(criteria(1e-9));
        let mut backend = scripted(noisy);
        let mut stop_at = |p: &Progress, _: &mut Scripted<_>| -> Result<Flow, ()> {
            Ok(match p.iteration() == 2001 {
                true => Flow::Stop,
                false => Flow::Continue,
            })
        };
        let first = parts
            .run(
                &mut backend,
                &["p", "u"],
                &mut [Callback::new(Schedule::EveryCheck, &mut stop_at)],
            )
            .unwrap();
        assert!(first.interrupted && first.stalled.is_none());
        let rest = parts.run_plain(&mut backend, &["p", "u"]).unwrap();
        assert_eq!(rest.stalled.unwrap(), expected);
        // A level near the round-off of f32, and the tolerance that it reached.
        assert!(expected.at_round_off(), "{expected}");
        assert!(expected.reachable_tolerance() >= expected.level);
        assert!(expected.reachable_tolerance() < 1.1 * expected.level);
        assert!(expected
            .to_string()
            .contains("round-off level of the precision"));
    }

    #[test]
    fn reachable_tolerances_round_up_to_two_digits() {
        let stall = |level| Stall {
            iteration: 0,
            window: 0,
            level,
            level_at: 0,
            variable: "p".into(),
            epsilon: f32::EPSILON as f64,
            precision: "f32",
        };
        assert_eq!(
            format!("{:e}", stall(3.561e-7).reachable_tolerance()),
            "3.6e-7"
        );
        assert_eq!(
            format!("{:.1e}", stall(3.6e-7).reachable_tolerance()),
            "3.6e-7"
        );
        assert!(stall(3e-4).at_round_off() && !stall(4e-4).at_round_off());
    }
}
