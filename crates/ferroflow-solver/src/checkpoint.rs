//! Checkpoints: everything needed to continue a run bitwise as if it had never stopped (the
//! resolved case, the raw backend state, the driver's record), in one file written atomically
//! (temporary file, CRC-32 checksum, rename) so that a kill at any moment leaves the previous
//! checkpoint intact.
use crate::simulation::{HistoryRow, Simulation, StopCriteria};
use ferroflow_core::{Fields, Layout, Real};
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;
use thiserror::Error;

/// File name of the checkpoint in an output directory.
pub const FILE_NAME: &str = "checkpoint.ffcp";

/// First bytes of a checkpoint: format name and version.
const MAGIC: &[u8; 8] = b"FFLOWCK1";

/// A checkpoint read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// The resolved case (TOML) the run was started with.
    pub case_toml: String,
    /// Precision of the state (`f64` or `f32`).
    pub precision: String,
    /// Wall time of the iterations so far, seconds.
    pub wall_seconds: f64,
    /// Iterations done.
    pub iteration: usize,
    /// Residual normalisers.
    pub initial: Option<Vec<f64>>,
    /// Residual history.
    pub history: Vec<HistoryRow>,
    /// The raw backend state (pressure not referenced), widened to f64 (exact for f32).
    state: Fields<f64>,
}

/// A checkpoint that cannot be used.
#[derive(Debug, Error)]
pub enum CheckpointError {
    /// The file cannot be read.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The file is not a complete ferroflow checkpoint.
    #[error("not a usable ferroflow checkpoint: {0}")]
    Corrupt(&'static str),
    /// The state does not fit the run.
    #[error("{0}")]
    Mismatch(String),
}

/// Writes a checkpoint of `sim` and the raw backend `state` to `path`, atomically.
pub fn save<R: Real>(
    path: &Path,
    case_toml: &str,
    sim: &Simulation,
    wall_seconds: f64,
    state: &Fields<R>,
) -> io::Result<()> {
    let mut b = Vec::with_capacity(64 + 8 * state.vars.len() * state.layout.len);
    b.extend_from_slice(MAGIC);
    put_str(&mut b, case_toml);
    put_str(&mut b, R::NAME);
    put_f64(&mut b, wall_seconds);
    put_u64(&mut b, sim.iteration);
    match &sim.initial {
        Some(v) => put_f64s(&mut b, v),
        None => put_u64(&mut b, usize::MAX),
    }
    put_u64(&mut b, sim.history.len());
    for row in &sim.history {
        put_u64(&mut b, row.iteration);
        put_f64s(&mut b, &row.relative);
    }
    let l = state.layout;
    for x in [l.dim, l.n[0], l.n[1], l.n[2], state.vars.len(), l.len] {
        put_u64(&mut b, x);
    }
    for var in &state.vars {
        for x in var {
            put_f64(&mut b, x.f64());
        }
    }
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());

    let name = path
        .file_name()
        .ok_or_else(|| io::Error::other("no file name"))?;
    let tmp = path.with_file_name(format!("{}.tmp", name.to_string_lossy()));
    let mut f = File::create(&tmp)?;
    f.write_all(&b)?;
    f.sync_all()?;
    fs::rename(&tmp, path)?;
    // Make the rename itself durable; not every platform can sync a directory.
    if let Some(dir) = path.parent().and_then(|d| File::open(d).ok()) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Reads and verifies the checkpoint at `path`.
pub fn load(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let bytes = fs::read(path)?;
    if bytes.len() < MAGIC.len() + 4 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(CheckpointError::Corrupt("unknown format"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(CheckpointError::Corrupt("checksum mismatch"));
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let case_toml = r.str()?;
    let precision = r.str()?;
    let wall_seconds = r.f64()?;
    let iteration = r.u64()?;
    let initial = match r.u64()? {
        usize::MAX => None,
        n => Some(r.f64s(n)?),
    };
    let rows = r.u64()?;
    let history = (0..rows)
        .map(|_| {
            let iteration = r.u64()?;
            let n = r.u64()?;
            Ok(HistoryRow {
                iteration,
                relative: r.f64s(n)?,
            })
        })
        .collect::<Result<_, CheckpointError>>()?;
    let [dim, n0, n1, n2, count, len] = [(); 6].map(|_| r.u64());
    let layout = Layout::new(dim?, [n0?, n1?, n2?]);
    let (count, len) = (count?, len?);
    if layout.len != len || !(2..=3).contains(&layout.dim) {
        return Err(CheckpointError::Corrupt(
            "grid layout differs from this version's",
        ));
    }
    let vars = (0..count).map(|_| r.f64s(len)).collect::<Result<_, _>>()?;
    Ok(Checkpoint {
        case_toml,
        precision,
        wall_seconds,
        iteration,
        initial,
        history,
        state: Fields { layout, vars },
    })
}

impl Checkpoint {
    /// The state in precision `R`, checked against the layout and variable count the run needs.
    pub fn state<R: Real>(
        &self,
        layout: Layout,
        vars: usize,
    ) -> Result<Fields<R>, CheckpointError> {
        if self.precision != R::NAME {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint holds an {} state, the run is in {}",
                self.precision,
                R::NAME
            )));
        }
        let l = self.state.layout;
        if l != layout || self.state.vars.len() != vars {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint's grid is {:?} ({}D), the run's is {:?} ({}D)",
                &l.n[..l.dim],
                l.dim,
                &layout.n[..layout.dim],
                layout.dim
            )));
        }
        Ok(self.state.cast())
    }

    /// The driver's record, continuing under `stop`.
    pub fn simulation(&self, stop: StopCriteria) -> Simulation {
        Simulation {
            stop,
            iteration: self.iteration,
            initial: self.initial.clone(),
            history: self.history.clone(),
        }
    }
}

fn put_u64(b: &mut Vec<u8>, x: usize) {
    b.extend_from_slice(&(x as u64).to_le_bytes());
}

fn put_f64(b: &mut Vec<u8>, x: f64) {
    b.extend_from_slice(&x.to_le_bytes());
}

fn put_f64s(b: &mut Vec<u8>, v: &[f64]) {
    put_u64(b, v.len());
    v.iter().for_each(|&x| put_f64(b, x));
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_u64(b, s.len());
    b.extend_from_slice(s.as_bytes());
}

/// Cursor over the checkpoint body; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], CheckpointError> {
        if n > self.0.len() {
            return Err(CheckpointError::Corrupt("truncated"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    fn u64(&mut self) -> Result<usize, CheckpointError> {
        let b = self.take(8)?.try_into().expect("8 bytes");
        usize::try_from(u64::from_le_bytes(b)).map_err(|_| CheckpointError::Corrupt("bad size"))
    }

    fn f64(&mut self) -> Result<f64, CheckpointError> {
        Ok(f64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    fn f64s(&mut self, n: usize) -> Result<Vec<f64>, CheckpointError> {
        let bytes = self.take(
            n.checked_mul(8)
                .ok_or(CheckpointError::Corrupt("bad size"))?,
        )?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect())
    }

    fn str(&mut self) -> Result<String, CheckpointError> {
        let n = self.u64()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| CheckpointError::Corrupt("bad text"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_is_exact_and_damage_is_detected() {
        let layout = Layout::new(2, [6, 5, 1]);
        let mut state = Fields::<f32>::zeros(layout, 3);
        state.vars[1]
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = 0.1 * i as f32);
        let mut sim = Simulation::new(StopCriteria {
            tolerance: 1e-6,
            max_iterations: 10,
            check_interval: 2,
        });
        sim.iteration = 3;
        sim.initial = Some(vec![0.3, 1.0 / 3.0, 2.0]);
        sim.history.push(HistoryRow {
            iteration: 3,
            relative: vec![0.1, 0.2, 1e-300],
        });
        let dir = std::env::temp_dir().join(format!("ferroflow-ck-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join(FILE_NAME);
        save(&path, "[grid]\n", &sim, 1.5, &state).unwrap();
        let ck = load(&path).unwrap();
        assert_eq!(ck.simulation(sim.stop), sim);
        assert_eq!(ck.state::<f32>(layout, 3).unwrap(), state);
        assert_eq!((ck.case_toml.as_str(), ck.wall_seconds), ("[grid]\n", 1.5));
        assert!(ck.state::<f64>(layout, 3).is_err());
        assert!(ck.state::<f32>(Layout::new(2, [7, 5, 1]), 3).is_err());

        let mut bytes = fs::read(&path).unwrap();
        bytes[40] ^= 1;
        fs::write(&path, &bytes).unwrap();
        assert!(matches!(load(&path), Err(CheckpointError::Corrupt(_))));
        fs::remove_dir_all(&dir).unwrap();
    }
}
