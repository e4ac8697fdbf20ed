//! What a run tells while it iterates: a live bar on a terminal, plain lines when output is
//! not a terminal (CI, nohup), nothing on the terminal with `--quiet`; the plain lines always
//! go to `run.log` too.
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::fs::{File, OpenOptions};
use std::io::{self, IsTerminal, LineWriter, Write};
use std::path::Path;
use std::time::Instant;

/// How progress reaches the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A live progress line (stderr is a terminal).
    Bar,
    /// Plain lines at an interval.
    Lines,
    /// Nothing.
    Quiet,
}

impl Mode {
    /// `Quiet` if asked, else `Bar` on a terminal and `Lines` otherwise.
    pub fn detect(quiet: bool) -> Mode {
        if quiet {
            Mode::Quiet
        } else if io::stderr().is_terminal() {
            Mode::Bar
        } else {
            Mode::Lines
        }
    }
}

/// Seconds between plain progress lines.
const LINE_INTERVAL: f64 = 5.0;
/// Most recent checks used to extrapolate the residual's slope.
const TREND_WINDOW: usize = 400;

/// Progress of one run, on the terminal and in its log.
pub struct Reporter {
    mode: Mode,
    bar: Option<ProgressBar>,
    /// `run.log`; none in the other processes of an MPI job.
    log: Option<LineWriter<File>>,
    names: &'static [&'static str],
    tolerance: f64,
    max_iterations: usize,
    nodes: f64,
    start: Instant,
    start_iteration: usize,
    next_line: f64,
    /// `(iteration, log10 of the largest relative residual)` at each check.
    trend: Vec<(f64, f64)>,
}

/// What the run iterates on, for rates and estimates.
pub struct Work {
    /// Equation names.
    pub names: &'static [&'static str],
    /// Interior nodes updated per iteration.
    pub nodes: usize,
    /// Convergence tolerance.
    pub tolerance: f64,
    /// Iteration limit.
    pub max_iterations: usize,
    /// Iterations already done (restart).
    pub start_iteration: usize,
}

impl Reporter {
    /// Opens the log at `log_path` (appending when continuing a run) and, on a terminal, the bar.
    pub fn new(mode: Mode, log_path: &Path, append: bool, work: Work) -> io::Result<Reporter> {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .append(append)
            .truncate(!append)
            .open(log_path)?;
        Ok(Reporter::with(mode, Some(LineWriter::new(file)), work))
    }

    /// A reporter that shows and logs nothing: the other processes of an MPI job.
    pub fn silent(work: Work) -> Reporter {
        Reporter::with(Mode::Quiet, None, work)
    }

    fn with(mode: Mode, log: Option<LineWriter<File>>, work: Work) -> Reporter {
        let bar = (mode == Mode::Bar).then(|| {
            let bar = ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{elapsed:>4} [{bar:24}] {msg}")
                    .expect("valid template")
                    .progress_chars("=> "),
            );
            bar
        });
        Reporter {
            mode,
            bar,
            log,
            names: work.names,
            tolerance: work.tolerance,
            max_iterations: work.max_iterations,
            nodes: work.nodes as f64,
            start: Instant::now(),
            start_iteration: work.start_iteration,
            next_line: 0.0,
            trend: Vec::new(),
        }
    }

    /// Writes `text` to the log only.
    pub fn log(&mut self, text: &str) {
        // The log is a convenience copy; a full disk must not stop the run.
        if let Some(log) = &mut self.log {
            let _ = writeln!(log, "{text}");
        }
    }

    /// Writes `text` to the log and, unless quiet, to the terminal.
    pub fn note(&mut self, text: &str) {
        self.log(text);
        match (&self.bar, self.mode) {
            (Some(bar), _) => bar.println(text),
            (None, Mode::Lines) => eprintln!("{text}"),
            _ => {}
        }
    }

    /// Records a residual check and shows it: on the bar at once, as a line at intervals.
    pub fn update(&mut self, iteration: usize, relative: &[f64]) {
        let worst = relative.iter().cloned().fold(f64::MIN_POSITIVE, f64::max);
        self.trend.push((iteration as f64, worst.log10()));
        let elapsed = self.start.elapsed().as_secs_f64();
        let status = self.status(iteration, relative, elapsed);
        if let Some(bar) = &self.bar {
            // Position: the fraction of the decades from 1 down to the tolerance.
            let fraction = (worst.log10() / self.tolerance.log10()).clamp(0.0, 1.0);
            bar.set_position((1000.0 * fraction) as u64);
            bar.set_message(status.clone());
        }
        if elapsed >= self.next_line {
            self.next_line = elapsed + LINE_INTERVAL;
            if self.mode == Mode::Lines {
                eprintln!("{status}");
            }
            self.log(&status);
        }
    }

    /// One status line: iteration, residuals, throughput, estimated time to the tolerance.
    fn status(&self, iteration: usize, relative: &[f64], elapsed: f64) -> String {
        let residuals: Vec<String> = self
            .names
            .iter()
            .zip(relative)
            .map(|(n, r)| format!("{n} {r:.2e}"))
            .collect();
        let done = (iteration - self.start_iteration) as f64;
        let per_second = if elapsed > 0.0 { done / elapsed } else { 0.0 };
        let eta = match iterations_to_tolerance(&self.trend, self.tolerance) {
            Some(n) if iteration as f64 + n > self.max_iterations as f64 => {
                "tolerance beyond max_iterations".to_string()
            }
            Some(n) if per_second > 0.0 => format!("ETA {}", duration(n / per_second)),
            _ => "ETA -".to_string(),
        };
        format!(
            "iter {iteration:>8}  {}  {:.1} M node-updates/s  {eta}",
            residuals.join("  "),
            self.nodes * per_second / 1e6
        )
    }

    /// Removes the bar; later notes print as plain lines.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
            self.mode = Mode::Lines;
        }
    }
}

/// Iterations until the largest residual reaches `tolerance`, from the least-squares slope of
/// its logarithm over the recent half of the checks; `None` while it is not falling.
fn iterations_to_tolerance(trend: &[(f64, f64)], tolerance: f64) -> Option<f64> {
    let recent = &trend[trend.len() / 2..];
    let recent = &recent[recent.len().saturating_sub(TREND_WINDOW)..];
    if recent.len() < 3 {
        return None;
    }
    let n = recent.len() as f64;
    let (mx, my) = recent
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (sxy, sxx) = recent.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    let slope = sxy / sxx;
    let (_, last) = recent[recent.len() - 1];
    (slope < 0.0).then(|| ((tolerance.log10() - last) / slope).max(0.0))
}

/// `s` seconds as a short human duration.
fn duration(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else if s < 5400.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{:.1} h", s / 3600.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_extrapolates_the_log_residual_slope() {
        // One decade per 1000 iterations, now at 1e-3: 4000 more to 1e-7.
        let trend: Vec<(f64, f64)> = (0..=30)
            .map(|k| (100.0 * k as f64, -(k as f64) / 10.0))
            .collect();
        let n = iterations_to_tolerance(&trend, 1e-7).unwrap();
        assert!((n - 4000.0).abs() < 1e-6, "{n}");
        let flat: Vec<(f64, f64)> = (0..10).map(|k| (k as f64, -1.0)).collect();
        assert_eq!(iterations_to_tolerance(&flat, 1e-7), None);
        assert_eq!(iterations_to_tolerance(&trend[..3], 1e-7), None);
        assert_eq!(duration(42.0), "42 s");
        assert_eq!(duration(600.0), "10 min");
    }
}
