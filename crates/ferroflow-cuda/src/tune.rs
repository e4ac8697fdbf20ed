//! Autotuning of a kernel's launch shape, for any kernel a crate describes as [`Tunable`]. The
//! candidates are compiled in parallel, then each is timed with CUDA events (median of several
//! samples after a warm-up) and the fastest is kept, unless the default shape (the first
//! candidate) is within 2 % of it, so that noise does not move a run off the default for
//! nothing. The choice is cached on disk, keyed by device name, the kernel's own key (grid,
//! precision, entry point) and a digest of its source and options.
use crate::cache;
use crate::compile::Build;
use crate::device::{median, Device, Timer};
use ferroflow_core::BackendError;
use serde::de::DeserializeOwned;
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

/// How a launch shape of type `S` is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TuneMode<S> {
    /// The cached choice for this device, kernel and source; on a miss, tune and cache the
    /// result.
    #[default]
    Cached,
    /// Time every candidate and update the cache (what `ferroflow tune` does).
    Always,
    /// The default shape, nothing timed (`no_tune`).
    Off,
    /// This shape, nothing timed (the tests run every candidate this way).
    Fixed(S),
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
pub struct TuneRow<S> {
    /// The launch shape.
    pub shape: S,
    /// Median seconds per timed pass ([`Tunable::queue`]).
    pub seconds: f64,
}

/// How the launch shape of a kernel was chosen, with the full timing table.
#[derive(Debug, Clone, PartialEq)]
pub struct TuneReport<S> {
    /// What was tuned, e.g. `interior kernel launch shape`.
    pub what: String,
    /// The shape in use.
    pub chosen: S,
    /// Where it came from.
    pub source: TuneSource,
    /// Every candidate's timing, in candidate order (from the cache when `source` is `Cache`;
    /// empty when `Default` or `Fixed`).
    pub rows: Vec<TuneRow<S>>,
    /// Wall time this run spent choosing (compiling and timing candidates), seconds.
    pub seconds: f64,
    /// Nodes (or other items) updated per pass, for rates.
    pub nodes: usize,
    /// The cache file consulted or written, if any.
    pub cache_file: Option<PathBuf>,
    /// Why the cache could not be read or written, if so (the run goes on without it).
    pub cache_error: Option<String>,
}

impl<S: fmt::Display + PartialEq> fmt::Display for TuneReport<S> {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let source = match self.source {
            TuneSource::Measured => "measured",
            TuneSource::Cache => "from the cache",
            TuneSource::Default => "default, not tuned",
            TuneSource::Fixed => "given, not tuned",
        };
        writeln!(
            f,
            "{} {} ({source}; {:.2} s)",
            self.what, self.chosen, self.seconds
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

/// Index of the chosen row: the fastest, unless the first (the default shape) is within
/// `REPLACE_BELOW` of it. Unlike a running incumbent, the choice does not depend on the order
/// of the other candidates.
fn pick<S>(rows: &[TuneRow<S>]) -> usize {
    let fastest = (0..rows.len())
        .min_by(|&a, &b| rows[a].seconds.total_cmp(&rows[b].seconds))
        .unwrap_or(0);
    if rows[fastest].seconds < REPLACE_BELOW * rows[0].seconds {
        fastest
    } else {
        0
    }
}

/// A kernel whose launch shape can be tuned: how to build, load and time it.
pub trait Tunable {
    /// A launch shape (serialised into the cache).
    type Shape: Copy + PartialEq + fmt::Display + Serialize + DeserializeOwned;
    /// The loaded kernel for one shape.
    type Kernel;

    /// What is tuned, for the report (e.g. `interior kernel launch shape`).
    fn what(&self) -> String;
    /// The shapes to time that fit the problem, the default first; an error if none does.
    fn candidates(&self) -> Result<Vec<Self::Shape>, BackendError>;
    /// The shape used untuned.
    fn default_shape(&self) -> Self::Shape;
    /// The build for `shape`.
    fn build(&self, shape: Self::Shape) -> Build;
    /// The kernel of a compiled `build(shape)`.
    fn load(&self, cubin: Vec<u8>, shape: Self::Shape) -> Result<Self::Kernel, BackendError>;
    /// Queues one timed pass of `kernel`; it must leave the state as it was.
    fn queue(&self, kernel: &Self::Kernel) -> Result<(), BackendError>;
    /// Nodes updated per pass (for rates).
    fn nodes(&self) -> usize;
    /// What the choice depends on besides the device and the source, for the cache key (e.g.
    /// `3D 257x257x257 | F64 | entry point`).
    fn cache_key(&self) -> String;
}

/// Chooses the launch shape of `kernel` on `device` as `mode` says; returns the kernel loaded
/// for it and how it was chosen.
pub fn tune<T: Tunable>(
    device: &Device,
    kernel: &T,
    mode: TuneMode<T::Shape>,
) -> Result<(T::Kernel, TuneReport<T::Shape>), BackendError> {
    let start = Instant::now();
    let mut report = TuneReport {
        what: kernel.what(),
        chosen: kernel.default_shape(),
        source: TuneSource::Default,
        rows: Vec::new(),
        seconds: 0.0,
        nodes: kernel.nodes(),
        cache_file: None,
        cache_error: None,
    };
    let compiled = |shape| kernel.load(device.compile(&kernel.build(shape))?, shape);
    let chosen = match mode {
        TuneMode::Off => compiled(report.chosen)?,
        TuneMode::Fixed(shape) => {
            report.chosen = shape;
            report.source = TuneSource::Fixed;
            compiled(shape)?
        }
        TuneMode::Cached | TuneMode::Always => {
            let path = cache::dir().join(CACHE_FILE);
            let key = cache_key(device, kernel);
            let cached = match read_cache(&path) {
                Ok(cache) => cache
                    .entries
                    .get(&key)
                    .and_then(|v| serde_json::from_value::<CacheEntry<T::Shape>>(v.clone()).ok()),
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
                    compiled(report.chosen)?
                }
                _ => {
                    let (chosen, shape, rows) = measure(device, kernel)?;
                    report.source = TuneSource::Measured;
                    report.chosen = shape;
                    report.rows = rows;
                    let entry = CacheEntry {
                        chosen: report.chosen,
                        rows: report.rows.clone(),
                    };
                    if let Err(e) = write_cache(&path, key, entry) {
                        report.cache_error = Some(e);
                    }
                    chosen
                }
            }
        }
    };
    report.seconds = start.elapsed().as_secs_f64();
    tracing::debug!(
        shape = %report.chosen,
        source = ?report.source,
        seconds = report.seconds,
        "{}", report.what
    );
    Ok((chosen, report))
}

/// Compiles and times every candidate; returns the chosen one's kernel and shape, and the
/// table.
#[allow(clippy::type_complexity)]
fn measure<T: Tunable>(
    device: &Device,
    kernel: &T,
) -> Result<(T::Kernel, T::Shape, Vec<TuneRow<T::Shape>>), BackendError> {
    let shapes = kernel.candidates()?;
    let builds: Vec<Build> = shapes.iter().map(|&s| kernel.build(s)).collect();
    let mut kernels = Vec::new();
    let mut rows = Vec::new();
    for (cubin, &shape) in device.compile_many(&builds).into_iter().zip(&shapes) {
        let k = kernel.load(cubin?, shape)?;
        rows.push(TuneRow {
            shape,
            seconds: time(device, kernel, &k)?,
        });
        kernels.push(k);
    }
    let chosen = pick(&rows);
    Ok((kernels.swap_remove(chosen), rows[chosen].shape, rows))
}

/// Median seconds per pass of `k`, after a warm-up.
fn time<T: Tunable>(device: &Device, kernel: &T, k: &T::Kernel) -> Result<f64, BackendError> {
    let timer = Timer::new(device)?;
    let sample = |launches: usize| -> Result<f64, BackendError> {
        let seconds = timer.seconds(&device.stream, || {
            (0..launches).try_for_each(|_| kernel.queue(k))
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

/// The cache key: the device, the kernel's own key, and a digest of the source and options
/// of its default build (FNV-1a: stable across Rust versions, unlike `DefaultHasher`).
fn cache_key<T: Tunable>(device: &Device, kernel: &T) -> String {
    let build = kernel.build(kernel.default_shape());
    let source = cache::fnv1a(cache::FNV_OFFSET, build.source.expanded().as_bytes());
    let digest = cache::fnv1a(source, build.options("").join(" ").as_bytes());
    format!("{} | {} | {digest:016x}", device.name, kernel.cache_key())
}

/// The cache: one entry per key, each of its kernel's shape type.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct CacheFile {
    entries: BTreeMap<String, serde_json::Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct CacheEntry<S> {
    chosen: S,
    rows: Vec<TuneRow<S>>,
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
fn write_cache<S: Serialize>(path: &Path, key: String, entry: CacheEntry<S>) -> Result<(), String> {
    let mut cache = read_cache(path).unwrap_or_default();
    let value = serde_json::to_value(entry).map_err(|e| e.to_string())?;
    cache.entries.insert(key, value);
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

    /// A stand-in shape: threads per block.
    type Threads = u32;

    fn row(x: Threads, seconds: f64) -> TuneRow<Threads> {
        TuneRow { shape: x, seconds }
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
    fn cache_round_trips_and_replaces_entries_of_any_shape_type() {
        let dir = std::env::temp_dir().join(format!("ferroflow-cuda-test-{}", std::process::id()));
        let path = dir.join(CACHE_FILE);
        let entry = |x| CacheEntry {
            chosen: x,
            rows: vec![row(x, 1e-5)],
        };
        let read = |key: &str| -> Option<CacheEntry<Threads>> {
            let value = read_cache(&path).unwrap().entries.get(key)?.clone();
            serde_json::from_value(value).ok()
        };
        assert!(read_cache(&path).unwrap().entries.is_empty());
        write_cache(&path, "a".into(), entry(32)).unwrap();
        write_cache(&path, "b".into(), entry(64)).unwrap();
        write_cache(&path, "a".into(), entry(128)).unwrap();
        // Another kernel's shapes share the file.
        write_cache(
            &path,
            "other".into(),
            CacheEntry {
                chosen: [1, 2],
                rows: vec![],
            },
        )
        .unwrap();
        assert_eq!(read_cache(&path).unwrap().entries.len(), 3);
        assert_eq!(read("a").unwrap().chosen, 128);
        assert_eq!(read("b").unwrap().rows, vec![row(64, 1e-5)]);
        assert!(
            read("other").is_none(),
            "a [u32; 2] entry read as a u32 one"
        );
        std::fs::write(&path, "not json").unwrap();
        assert!(read_cache(&path).is_err());
        write_cache(&path, "c".into(), entry(32)).unwrap();
        assert_eq!(read_cache(&path).unwrap().entries.len(), 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn report_prints_every_row_and_marks_the_choice() {
        let report = TuneReport {
            what: "test launch shape".into(),
            chosen: 64,
            source: TuneSource::Measured,
            rows: vec![row(32, 2e-5), row(64, 1e-5)],
            seconds: 0.5,
            nodes: 1_000_000,
            cache_file: None,
            cache_error: None,
        };
        let text = report.to_string();
        assert!(
            text.starts_with("test launch shape 64 (measured; 0.50 s)"),
            "{text}"
        );
        assert!(text.contains("* 64 "), "{text}");
        assert!(text.contains("  32 "), "{text}");
        assert!(text.contains("100.000"), "{text}");
    }
}
