//! Autotuning of the `ac_step` launch shape. The candidates are compiled in parallel, then each
//! is timed with CUDA events (median of several samples after a warm-up) and the fastest is
//! kept, unless the default shape is within 2 % of it, so that noise does not move a run off
//! the default for nothing. The choice is cached on disk, keyed by device name, grid,
//! precision, kernel variant and a digest of the kernel source and options.
//!
//! The timed passes read the current buffer and write the interior nodes and walls of the
//! other one, which the next iteration overwrites before anything reads them: tuning leaves
//! the state unchanged and needs no scratch memory.
use crate::cache;
use crate::compile::{self, Build, Program, Scalar, Variant};
use crate::device::{median, Device, Timer};
use crate::launch::{BoundaryKernel, LaunchShape, StepArgs, StepKernel, Vars};
use ferroflow_core::{BackendError, Layout, Real};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Timed samples per candidate (the median is kept).
const SAMPLES: usize = 7;
/// Launches per sample are chosen so that a sample lasts about this long (event resolution is
/// about a microsecond).
const SAMPLE_SECONDS: f64 = 2e-3;
/// The fastest candidate replaces the default shape only when its time is below this fraction
/// of the default's.
const REPLACE_BELOW: f64 = 0.98;
/// File name of the cache in the cache directory.
const CACHE_FILE: &str = "cuda-tuning.json";

/// How the `ac_step` launch shape is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TuneMode {
    /// The cached choice for this device, grid, precision and kernel source; on a miss, tune
    /// and cache the result.
    #[default]
    Cached,
    /// Time every candidate and update the cache (what `ferroflow tune` does).
    Always,
    /// The default shape, nothing timed (`no_tune`).
    Off,
    /// This shape, nothing timed (the tests run every candidate this way).
    Fixed(LaunchShape),
}

/// Where a chosen shape came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TuneSource {
    /// Timed in this run.
    Measured,
    /// Read from the cache.
    Cache,
    /// The default shape (tuning off).
    Default,
    /// The shape of `TuneMode::Fixed`.
    Fixed,
}

/// The timing of one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TuneRow {
    /// The launch shape.
    pub shape: LaunchShape,
    /// Median seconds per pass: the `ac_step` launch and the wall fills after it (residual
    /// norms off, as in most iterations); shapes differ in which x walls they leave to the
    /// wall fills.
    pub seconds: f64,
}

/// How the launch shape of a backend was chosen, with the full timing table.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneReport {
    /// The shape in use.
    pub chosen: LaunchShape,
    /// Where it came from.
    pub source: TuneSource,
    /// Every candidate's timing, in candidate order (from the cache when `source` is `Cache`;
    /// empty when `Default` or `Fixed`).
    pub rows: Vec<TuneRow>,
    /// Wall time this run spent choosing (compiling and timing candidates), seconds.
    pub seconds: f64,
    /// Interior nodes updated per launch (for rates).
    pub nodes: usize,
    /// The cache file consulted or written, if any.
    pub cache_file: Option<PathBuf>,
    /// Why the cache could not be read or written, if so (the run goes on without it).
    pub cache_error: Option<String>,
}

impl fmt::Display for TuneReport {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let source = match self.source {
            TuneSource::Measured => "measured",
            TuneSource::Cache => "from the cache",
            TuneSource::Default => "default, not tuned",
            TuneSource::Fixed => "given, not tuned",
        };
        writeln!(
            f,
            "ac_step launch shape {} ({source}; {:.2} s)",
            self.chosen, self.seconds
        )?;
        if !self.rows.is_empty() {
            writeln!(
                f,
                "  {:<12} {:>12} {:>16}",
                "shape", "us/pass", "G node-updates/s"
            )?;
        }
        for row in &self.rows {
            let mark = if row.shape == self.chosen { '*' } else { ' ' };
            writeln!(
                f,
                "{mark} {:<12} {:>12.2} {:>16.3}",
                row.shape.to_string(),
                row.seconds * 1e6,
                self.nodes as f64 / row.seconds / 1e9
            )?;
        }
        if let Some(file) = &self.cache_file {
            writeln!(f, "  cache: {}", file.display())?;
        }
        if let Some(e) = &self.cache_error {
            writeln!(f, "  cache not used: {e}")?;
        }
        Ok(())
    }
}

/// The shape used without tuning, in 2D and 3D: a warp along x reads contiguous rows.
pub const DEFAULT_SHAPE: LaunchShape = LaunchShape::new([32, 4, 1], 1);

/// The launch shapes tuning times for a `dim`-dimensional grid, the default first (it is the
/// first incumbent).
pub fn candidates(dim: usize) -> Vec<LaunchShape> {
    let s = LaunchShape::new;
    let t = LaunchShape::tiled;
    let rest: &[LaunchShape] = if dim == 2 {
        &[
            s([16, 2, 1], 1),
            s([16, 4, 1], 1),
            s([16, 8, 1], 1),
            s([32, 1, 1], 1),
            s([32, 2, 1], 1),
            s([32, 8, 1], 1),
            s([64, 1, 1], 1),
            s([64, 2, 1], 1),
            s([64, 4, 1], 1),
            s([128, 1, 1], 1),
            s([128, 2, 1], 1),
            s([256, 1, 1], 1),
            s([32, 2, 1], 2),
            s([32, 4, 1], 2),
            s([32, 8, 1], 2),
            s([64, 2, 1], 2),
            s([64, 4, 1], 2),
            s([32, 2, 1], 4),
            s([32, 4, 1], 4),
            s([64, 2, 1], 4),
            s([32, 4, 1], 8),
        ]
    } else {
        &[
            s([32, 2, 2], 1),
            s([32, 8, 1], 1),
            s([64, 2, 1], 1),
            s([64, 4, 1], 1),
            s([128, 1, 1], 1),
            s([16, 4, 4], 1),
            s([16, 8, 2], 1),
            s([32, 4, 2], 1),
            s([32, 4, 1], 2),
            s([32, 4, 1], 4),
            s([32, 4, 1], 8),
            s([32, 8, 1], 2),
            s([32, 8, 1], 4),
            s([64, 2, 1], 4),
            s([64, 4, 1], 4),
            s([32, 4, 1], 16),
            s([32, 2, 1], 2),
            s([64, 2, 1], 2),
            s([32, 2, 1], 4),
            s([32, 4, 1], 1).with_min_blocks(6),
            s([32, 4, 1], 1).with_min_blocks(7),
            s([64, 2, 1], 1).with_min_blocks(6),
            s([32, 4, 1], 2).with_min_blocks(5),
            s([32, 4, 1], 4).with_min_blocks(5),
            t([32, 8], 8).with_min_blocks(2),
            t([32, 8], 16).with_min_blocks(2),
            t([32, 8], 32).with_min_blocks(2),
            t([32, 4], 16).with_min_blocks(4),
            t([64, 4], 16).with_min_blocks(2),
            t([64, 4], 8).with_min_blocks(2),
            t([64, 4], 32).with_min_blocks(2),
            t([64, 4], 64).with_min_blocks(2),
            t([64, 4], 128).with_min_blocks(2),
            t([64, 2], 16).with_min_blocks(4),
            t([64, 2], 32).with_min_blocks(4),
        ]
    };
    std::iter::once(DEFAULT_SHAPE)
        .chain(rest.iter().copied())
        .collect()
}

/// Index of the chosen row: the fastest, unless the first (the default shape) is within
/// `REPLACE_BELOW` of it. Unlike a running incumbent, the choice does not depend on the order
/// of the other candidates.
fn pick(rows: &[TuneRow]) -> usize {
    let fastest = (0..rows.len())
        .min_by(|&a, &b| rows[a].seconds.total_cmp(&rows[b].seconds))
        .unwrap_or(0);
    if rows[fastest].seconds < REPLACE_BELOW * rows[0].seconds {
        fastest
    } else {
        0
    }
}

/// Everything the timed launches of one backend need.
pub(crate) struct Tuner<'a, R> {
    pub device: &'a Device,
    pub layout: Layout,
    pub precision: Scalar,
    pub fmad: bool,
    /// The entry point the problem needs.
    pub variant: Variant,
    pub args: &'a StepArgs<R>,
    /// The wall fills that follow each pass.
    pub boundary: &'a BoundaryKernel,
    pub cur: Vars,
    pub next: Vars,
}

impl<R: Real> Tuner<'_, R> {
    /// Chooses the launch shape as `mode` says; returns the kernel compiled for it.
    pub fn choose(&self, mode: TuneMode) -> Result<(StepKernel, TuneReport), BackendError> {
        let start = Instant::now();
        let mut report = TuneReport {
            chosen: DEFAULT_SHAPE,
            source: TuneSource::Default,
            rows: Vec::new(),
            seconds: 0.0,
            nodes: self.layout.interior_nodes(),
            cache_file: None,
            cache_error: None,
        };
        let kernel = if mode == TuneMode::Off {
            self.kernel(report.chosen)?
        } else if let TuneMode::Fixed(shape) = mode {
            report.chosen = shape;
            report.source = TuneSource::Fixed;
            self.kernel(shape)?
        } else {
            let path = cache::dir().join(CACHE_FILE);
            let key = self.cache_key();
            let cached = match read_cache(&path) {
                Ok(cache) => cache.entries.get(&key).cloned(),
                Err(e) => {
                    report.cache_error = Some(e);
                    None
                }
            };
            report.cache_file = Some(path.clone());
            match cached {
                Some(entry) if mode == TuneMode::Cached => {
                    report.source = TuneSource::Cache;
                    report.chosen = entry.chosen;
                    report.rows = entry.rows;
                    self.kernel(report.chosen)?
                }
                _ => {
                    let (kernel, rows) = self.measure()?;
                    report.source = TuneSource::Measured;
                    report.chosen = kernel.shape;
                    report.rows = rows;
                    let entry = CacheEntry {
                        chosen: report.chosen,
                        rows: report.rows.clone(),
                    };
                    if let Err(e) = write_cache(&path, key, entry) {
                        report.cache_error = Some(e);
                    }
                    kernel
                }
            }
        };
        report.seconds = start.elapsed().as_secs_f64();
        tracing::debug!(
            shape = %report.chosen,
            source = ?report.source,
            seconds = report.seconds,
            "launch shape of the interior kernel"
        );
        Ok((kernel, report))
    }

    fn build(&self, shape: LaunchShape) -> Build {
        Build {
            program: Program::AcStep {
                dim: self.layout.dim,
                shape,
                variant: self.variant,
            },
            precision: self.precision,
            fmad: self.fmad,
        }
    }

    fn load(&self, cubin: Vec<u8>, shape: LaunchShape) -> Result<StepKernel, BackendError> {
        let function = self.device.load(cubin, self.variant.entry())?;
        StepKernel::new(function, shape, &self.layout)
    }

    fn kernel(&self, shape: LaunchShape) -> Result<StepKernel, BackendError> {
        self.load(self.device.compile(&self.build(shape))?, shape)
    }

    /// Compiles and times every candidate that fits the grid; returns the fastest's kernel.
    fn measure(&self) -> Result<(StepKernel, Vec<TuneRow>), BackendError> {
        let shapes: Vec<LaunchShape> = candidates(self.layout.dim)
            .into_iter()
            .filter(|s| s.grid(&self.layout).is_ok())
            .collect();
        let builds: Vec<Build> = shapes.iter().map(|&s| self.build(s)).collect();
        let mut kernels = Vec::new();
        let mut rows = Vec::new();
        for (cubin, &shape) in self.device.compile_many(&builds).into_iter().zip(&shapes) {
            let kernel = self.load(cubin?, shape)?;
            rows.push(TuneRow {
                shape,
                seconds: self.time(&kernel)?,
            });
            kernels.push(kernel);
        }
        if kernels.is_empty() {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!("a {:?}-node grid: no launch shape fits", self.layout.n),
            });
        }
        Ok((kernels.swap_remove(pick(&rows)), rows))
    }

    /// Median seconds per pass of `kernel` and the wall fills, after a warm-up.
    fn time(&self, kernel: &StepKernel) -> Result<f64, BackendError> {
        let stream = &self.device.stream;
        let timer = Timer::new(self.device)?;
        let sample = |launches: usize| -> Result<f64, BackendError> {
            let seconds = timer.seconds(stream, || {
                (0..launches).try_for_each(|_| {
                    // Any value serves as the pressure shift while timing.
                    let done = kernel.launch(
                        stream,
                        self.args,
                        &self.cur,
                        &self.next,
                        None,
                        self.cur.v[0],
                        false,
                    )?;
                    self.boundary
                        .launch(stream, &self.next, &self.args.grid, done)
                })
            })?;
            Ok(seconds / launches as f64)
        };
        sample(2)?;
        let one = sample(1)?;
        let launches = ((SAMPLE_SECONDS / one).ceil() as usize).clamp(1, 1000);
        let times = (0..SAMPLES)
            .map(|_| sample(launches))
            .collect::<Result<Vec<f64>, _>>()?;
        Ok(median(times))
    }

    fn cache_key(&self) -> String {
        let [n0, n1, n2] = self.layout.n;
        format!(
            "{} | {}D {n0}x{n1}x{n2} | {:?} | {} | {:016x}",
            self.device.name,
            self.layout.dim,
            self.precision,
            self.variant.entry(),
            compile::source_digest(self.precision, self.layout.dim, self.variant, self.fmad)
        )
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct CacheFile {
    entries: BTreeMap<String, CacheEntry>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CacheEntry {
    chosen: LaunchShape,
    rows: Vec<TuneRow>,
}

/// The cache's entries; a missing file is an empty cache.
fn read_cache(path: &Path) -> Result<CacheFile, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(CacheFile::default()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

/// Adds or replaces one entry, writing a temporary file and renaming it so that readers never
/// see half a file. An unreadable cache is replaced.
fn write_cache(path: &Path, key: String, entry: CacheEntry) -> Result<(), String> {
    let mut cache = read_cache(path).unwrap_or_default();
    cache.entries.insert(key, entry);
    let text = serde_json::to_string_pretty(&cache).map_err(|e| e.to_string())?;
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(&tmp, text).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(x: u32, seconds: f64) -> TuneRow {
        TuneRow {
            shape: LaunchShape::new([x, 1, 1], 1),
            seconds,
        }
    }

    #[test]
    fn the_default_stays_unless_clearly_beaten_by_the_fastest() {
        assert_eq!(pick(&[row(32, 1.0), row(64, 0.99), row(128, 0.985)]), 0);
        assert_eq!(pick(&[row(32, 1.0), row(64, 0.97), row(128, 0.96)]), 2);
        assert_eq!(pick(&[row(32, 1.0), row(64, 0.96), row(128, 0.97)]), 1);
        // Order-independent: a candidate 1 % faster than another still wins.
        assert_eq!(pick(&[row(32, 1.0), row(64, 0.95), row(128, 0.94)]), 2);
    }

    #[test]
    fn candidates_start_with_the_default_and_fit_a_block() {
        for dim in [2, 3] {
            let c = candidates(dim);
            assert_eq!(c[0], DEFAULT_SHAPE);
            for (i, s) in c.iter().enumerate() {
                assert!(s.threads() <= 256 && s.threads() % 32 == 0, "{s}");
                assert!(!c[..i].contains(s), "{s} twice");
                if dim == 2 {
                    assert_eq!(s.block[2], 1);
                    assert!(!s.tile, "{s}");
                }
                if s.tile {
                    // Two f64 plane tiles of five variables with a ring two nodes deep fit
                    // the 48 KiB of static shared memory.
                    let [x, y, _] = s.block;
                    assert!((x + 4) * (y + 4) * 8 * 5 * 2 <= 48 * 1024, "{s}");
                }
            }
        }
    }

    #[test]
    fn cache_round_trips_and_replaces_entries() {
        let dir = std::env::temp_dir().join(format!("ferroflow-cuda-test-{}", std::process::id()));
        let path = dir.join(CACHE_FILE);
        let entry = |x| CacheEntry {
            chosen: LaunchShape::new([x, 2, 1], 1),
            rows: vec![row(x, 1e-5)],
        };
        assert!(read_cache(&path).unwrap().entries.is_empty());
        write_cache(&path, "a".into(), entry(32)).unwrap();
        write_cache(&path, "b".into(), entry(64)).unwrap();
        write_cache(&path, "a".into(), entry(128)).unwrap();
        let cache = read_cache(&path).unwrap();
        assert_eq!(cache.entries.len(), 2);
        assert_eq!(cache.entries["a"].chosen.block[0], 128);
        assert_eq!(cache.entries["b"].rows, vec![row(64, 1e-5)]);
        std::fs::write(&path, "not json").unwrap();
        assert!(read_cache(&path).is_err());
        write_cache(&path, "c".into(), entry(32)).unwrap();
        assert_eq!(read_cache(&path).unwrap().entries.len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn report_prints_every_row_and_marks_the_choice() {
        let report = TuneReport {
            chosen: LaunchShape::new([64, 1, 1], 1),
            source: TuneSource::Measured,
            rows: vec![row(32, 2e-5), row(64, 1e-5)],
            seconds: 0.5,
            nodes: 1_000_000,
            cache_file: None,
            cache_error: None,
        };
        let text = report.to_string();
        assert!(text.contains("* 64x1x1"), "{text}");
        assert!(text.contains("  32x1x1"), "{text}");
        assert!(text.contains("100.000"), "{text}");
    }
}
