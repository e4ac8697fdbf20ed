//! Checkpoints: everything needed to continue a run bitwise as if it had never stopped (the
//! resolved case, the driver's record, the state's node values), in one file written atomically
//! ([`ferroflow_io::file`]) with a CRC-32 checksum, so that a kill or a full disk at any moment
//! leaves the previous checkpoint intact.
//!
//! Format 2 (`FFLOWCK2`, written): magic, resolved case, precision, wall time, the driver's
//! record, then the grid (dimension, nodes per axis, variable count) and per variable the values
//! at the nodes (boundary nodes included) in the order of a [`Snapshot`] (x fastest), in the
//! run's precision (4 bytes a value in f32, 8 in f64), then the CRC-32 of everything before it.
//! Integers are u64, everything little-endian. Ghosts and row padding are not stored: a
//! solver's `restore` fills every ghost the scheme reads from the nodes (wall extrapolation, and
//! halos cut from the neighbouring blocks' nodes), as each iteration does, so the continuation is
//! still bitwise the same.
//!
//! Format 3 (`FFLOWCK3`, written by a run over several processes): the same up to the grid and
//! its variable count, then instead of the values an index of piece files, each written by the
//! process that holds its blocks ([`save_piece`]: magic `FFLOWPC1`, the piece's first global
//! node and nodes per axis, variable count, values as in format 2, CRC-32): per piece its file
//! name relative to the checkpoint, its first node, its nodes per axis and the file's CRC-32.
//! No process gathers the state to write one; [`Checkpoint::state`] reads the pieces back.
//!
//! Format 1 (`FFLOWCK1`, written by earlier versions, still read): the same up to the grid,
//! which also gives the array length, then the whole padded arrays (ghosts included) widened to
//! f64; only their node values are used.
use crate::simulation::{HistoryRow, Simulation, StopCriteria};
use ferroflow_core::{Layout, Points, Real, Snapshot};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use thiserror::Error;

/// File name of the checkpoint in an output directory.
pub const FILE_NAME: &str = "checkpoint.ffcp";

/// First bytes of a checkpoint: format name and version (the one written).
const MAGIC: &[u8; 8] = b"FFLOWCK2";

/// First bytes of a checkpoint of piece files (format 3).
const MAGIC_PIECES: &[u8; 8] = b"FFLOWCK3";

/// First bytes of a piece file of a format 3 checkpoint.
const MAGIC_PIECE: &[u8; 8] = b"FFLOWPC1";

/// First bytes of a format 1 checkpoint (whole padded arrays in f64).
const MAGIC_V1: &[u8; 8] = b"FFLOWCK1";

/// A checkpoint read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// Format version of the file (1 or 2).
    pub version: u32,
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
    /// Number of active axes of the grid.
    dim: usize,
    /// Nodes per axis (1 on axis 2 in 2D).
    n: [usize; 3],
    /// The raw state's node values (pressure not referenced); none in format 3.
    nodes: Nodes,
    /// Format 3: the directory the piece files are named from, and the pieces.
    pieces: Option<(PathBuf, Vec<PieceFile>)>,
}

/// One piece file of a format 3 checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PieceFile {
    /// Path relative to the checkpoint's directory, `/`-separated.
    pub file: String,
    /// The piece's points.
    pub points: Points,
    /// CRC-32 of the whole file.
    pub crc: u32,
}

/// Node values per variable in a snapshot's order, in the checkpoint's precision.
#[derive(Debug, Clone, PartialEq)]
enum Nodes {
    F64(Vec<Vec<f64>>),
    F32(Vec<Vec<f32>>),
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

/// Bytes per stored value of a precision; `None` for an unknown one.
fn width(precision: &str) -> Option<usize> {
    match precision {
        "f32" => Some(4),
        "f64" => Some(8),
        _ => None,
    }
}

/// Writes a checkpoint of `sim` and the solver's raw `state` to `path`, atomically.
pub fn save<R: Real>(
    path: &Path,
    case_toml: &str,
    sim: &Simulation,
    wall_seconds: f64,
    state: &Snapshot<R>,
) -> io::Result<()> {
    let Points::Grid { dim, n, offset } = state.points;
    debug_assert_eq!(offset, [0; 3], "a checkpoint holds a whole grid");
    let w = width(R::NAME).expect("states are f32 or f64");
    let mut b = header(
        MAGIC,
        case_toml,
        R::NAME,
        sim,
        wall_seconds,
        w * state.vars.len() * state.points.len(),
    );
    for x in [dim, n[0], n[1], n[2], state.vars.len()] {
        put_u64(&mut b, x);
    }
    put_values(&mut b, &state.vars);
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    ferroflow_io::file::write(path, &b)
}

/// The values of `vars` in their precision (4 bytes a value in f32, 8 in f64).
fn put_values<R: Real>(b: &mut Vec<u8>, vars: &[Vec<R>]) {
    let w = width(R::NAME).expect("states are f32 or f64");
    for var in vars {
        // Exact in either width: f32 values go through f64 and back.
        for v in var {
            match w {
                4 => b.extend_from_slice(&(v.f64() as f32).to_le_bytes()),
                _ => put_f64(b, v.f64()),
            }
        }
    }
}

/// Writes the piece `state` of a format 3 checkpoint to `path`, atomically; returns the file's
/// CRC-32 for the index.
pub fn save_piece<R: Real>(path: &Path, state: &Snapshot<R>) -> io::Result<u32> {
    let Points::Grid { dim, n, offset } = state.points;
    let mut b = Vec::with_capacity(96 + R::BYTES * state.vars.len() * state.points.len());
    b.extend_from_slice(MAGIC_PIECE);
    for x in [dim, offset[0], offset[1], offset[2], n[0], n[1], n[2]] {
        put_u64(&mut b, x);
    }
    put_u64(&mut b, state.vars.len());
    put_values(&mut b, &state.vars);
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    ferroflow_io::file::write(path, &b)?;
    Ok(crc32fast::hash(&b))
}

/// Writes the index of a format 3 checkpoint of `sim` to `path`, atomically: the grid `whole`
/// with `vars` variables in precision `R`, held in `pieces` (written before by [`save_piece`]).
pub fn save_index<R: Real>(
    path: &Path,
    case_toml: &str,
    sim: &Simulation,
    wall_seconds: f64,
    (whole, vars): (Points, usize),
    pieces: &[PieceFile],
) -> io::Result<()> {
    let Points::Grid { dim, n, .. } = whole;
    let mut b = header(MAGIC_PIECES, case_toml, R::NAME, sim, wall_seconds, 0);
    for x in [dim, n[0], n[1], n[2], vars, pieces.len()] {
        put_u64(&mut b, x);
    }
    for p in pieces {
        let Points::Grid { n, offset, .. } = p.points;
        put_str(&mut b, &p.file);
        for x in offset.into_iter().chain(n) {
            put_u64(&mut b, x);
        }
        put_u64(&mut b, p.crc as usize);
    }
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&crc.to_le_bytes());
    ferroflow_io::file::write(path, &b)
}

/// The part both formats share: magic, case, precision, wall time and the driver's record, in
/// a buffer with room for `state` more bytes.
fn header(
    magic: &[u8; 8],
    case_toml: &str,
    precision: &str,
    sim: &Simulation,
    wall_seconds: f64,
    state: usize,
) -> Vec<u8> {
    let rows: usize = sim.history.iter().map(|r| 16 + 8 * r.relative.len()).sum();
    let mut b = Vec::with_capacity(128 + case_toml.len() + rows + state);
    b.extend_from_slice(magic);
    put_str(&mut b, case_toml);
    put_str(&mut b, precision);
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
    b
}

/// Reads and verifies the checkpoint at `path` (format 2, or format 1 of earlier versions).
pub fn load(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let bytes = fs::read(path)?;
    let version = match bytes.get(..MAGIC.len()) {
        Some(m) if m == MAGIC => 2,
        Some(m) if m == MAGIC_PIECES => 3,
        Some(m) if m == MAGIC_V1 => 1,
        _ => return Err(CheckpointError::Corrupt("unknown format")),
    };
    if bytes.len() < MAGIC.len() + 4 {
        return Err(CheckpointError::Corrupt("truncated"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(CheckpointError::Corrupt("checksum mismatch"));
    }
    let mut r = Reader(&body[MAGIC.len()..]);
    let case_toml = r.str()?;
    let precision = r.str()?;
    let w = width(&precision).ok_or(CheckpointError::Corrupt("unknown precision"))?;
    let wall_seconds = r.f64()?;
    let iteration = r.u64()?;
    let initial = match r.u64()? {
        usize::MAX => None,
        n => Some(r.f64s(n)?),
    };
    let rows = r.u64()?;
    let history = r.many(rows, |r| {
        let iteration = r.u64()?;
        let n = r.u64()?;
        Ok(HistoryRow {
            iteration,
            relative: r.f64s(n)?,
        })
    })?;
    let [dim, n0, n1, n2, count] = [(); 5].map(|_| r.u64());
    let (dim, count) = (dim?, count?);
    if !(2..=3).contains(&dim) {
        return Err(CheckpointError::Corrupt("bad grid"));
    }
    let mut n = [n0?, n1?, n2?];
    // As in `Layout::n`: one node on the inactive axis of a 2D grid.
    if dim == 2 {
        n[2] = 1;
    }
    let mut pieces = None;
    let nodes = match version {
        1 => nodes_v1(&mut r, v1_layout(dim, n), count, w)?,
        3 => {
            let files = r.u64()?;
            let index = r.many(files, |r| {
                let file = r.str()?;
                let [o0, o1, o2, n0, n1, n2, crc] = [(); 7].map(|_| r.u64());
                let crc =
                    u32::try_from(crc?).map_err(|_| CheckpointError::Corrupt("bad checksum"))?;
                Ok(PieceFile {
                    file,
                    points: Points::Grid {
                        dim,
                        n: [n0?, n1?, n2?],
                        offset: [o0?, o1?, o2?],
                    },
                    crc,
                })
            })?;
            let dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
            pieces = Some((dir, index));
            Nodes::F64(vec![Vec::new(); count])
        }
        _ => {
            let nodes = n[0]
                .checked_mul(n[1])
                .and_then(|x| x.checked_mul(n[2]))
                .ok_or(CheckpointError::Corrupt("bad size"))?;
            match w {
                4 => Nodes::F32(r.many(count, |r| r.f32s(nodes))?),
                _ => Nodes::F64(r.many(count, |r| r.f64s(nodes))?),
            }
        }
    };
    if !r.0.is_empty() {
        return Err(CheckpointError::Corrupt("trailing bytes"));
    }
    Ok(Checkpoint {
        version,
        case_toml,
        precision,
        wall_seconds,
        iteration,
        initial,
        history,
        dim,
        n,
        nodes,
        pieces,
    })
}

/// The layout format 1's whole arrays had: rows rounded up to groups of 8 elements, plus 8 where
/// that made a multiple of 512; planes unpadded. Later versions pad otherwise, so a format 1
/// file is unpicked with the rule it was written with, not with [`Layout::new`]'s.
fn v1_layout(dim: usize, n: [usize; 3]) -> Layout {
    let ghost = Layout::new(dim, n).ghost;
    let m = |d: usize| n[d] + 2 * ghost[d];
    let groups = m(0).div_ceil(8);
    let row = 8 * (groups + usize::from(groups.is_multiple_of(64)));
    let plane = row * m(1);
    Layout {
        dim,
        n,
        ghost,
        stride: [1, row, plane],
        len: plane * m(2),
    }
}

/// The node values of format 1's whole arrays (after the grid: the array length, then `count`
/// arrays of f64), narrowed back to the stored precision (exact: they were widened from it).
fn nodes_v1(
    r: &mut Reader,
    layout: Layout,
    count: usize,
    width: usize,
) -> Result<Nodes, CheckpointError> {
    if r.u64()? != layout.len {
        return Err(CheckpointError::Corrupt(
            "grid layout differs from this version's",
        ));
    }
    let arrays = r.many(count, |r| r.f64s(layout.len))?;
    let pick = |a: &Vec<f64>| {
        let mut v = Vec::with_capacity(layout.nodes());
        layout.for_each_node(|_, _, _, o| v.push(a[o]));
        v
    };
    Ok(match width {
        4 => Nodes::F32(
            arrays
                .iter()
                .map(|a| pick(a).into_iter().map(|x| x as f32).collect())
                .collect(),
        ),
        _ => Nodes::F64(arrays.iter().map(pick).collect()),
    })
}

impl Checkpoint {
    /// The state in precision `R` at `points`, checked against the points and variable count
    /// the run needs.
    pub fn state<R: Real>(
        &self,
        points: Points,
        vars: usize,
    ) -> Result<Snapshot<R>, CheckpointError> {
        self.state_checks::<R>(points, vars)?;
        if let Some((dir, index)) = &self.pieces {
            return assemble(dir, index, points, vars);
        }
        // Exact: the precisions are the same.
        let vars = match &self.nodes {
            Nodes::F64(v) => convert(v),
            Nodes::F32(v) => convert(v),
        };
        Ok(Snapshot { points, vars })
    }

    /// Whether the checkpoint's precision, grid and variable count are the run's.
    fn state_checks<R: Real>(&self, points: Points, vars: usize) -> Result<(), CheckpointError> {
        let Points::Grid { dim, n, .. } = points;
        if self.precision != R::NAME {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint holds an {} state, the run is in {}",
                self.precision,
                R::NAME
            )));
        }
        if self.dim != dim || self.n != n {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint's grid is {:?} ({}D), the run's is {:?} ({dim}D)",
                &self.n[..self.dim],
                self.dim,
                &n[..dim],
            )));
        }
        if self.nodes.count() != vars {
            return Err(CheckpointError::Mismatch(format!(
                "the checkpoint holds {} variables, the run has {vars}",
                self.nodes.count()
            )));
        }
        Ok(())
    }

    /// A checkpoint of pieces whose index holds exactly the pieces `wanted` (of a grid of
    /// `points`, `vars` variables) among its own: those pieces in precision `R`, in the order
    /// of `wanted`. `None` if the checkpoint is not of pieces or was cut otherwise (then
    /// [`Checkpoint::state`] assembles the whole grid).
    pub fn pieces_at<R: Real>(
        &self,
        points: Points,
        vars: usize,
        wanted: &[Points],
    ) -> Result<Option<Vec<Snapshot<R>>>, CheckpointError> {
        let Some((dir, index)) = &self.pieces else {
            return Ok(None);
        };
        let found: Option<Vec<&PieceFile>> = wanted
            .iter()
            .map(|w| index.iter().find(|p| p.points == *w))
            .collect();
        let Some(found) = found else {
            return Ok(None);
        };
        // The same checks as for the whole state.
        self.state_checks::<R>(points, vars)?;
        let Points::Grid { n: whole, .. } = points;
        found
            .into_iter()
            .map(|p| read_piece(dir, p, whole, vars))
            .collect::<Result<_, _>>()
            .map(Some)
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

impl Nodes {
    fn count(&self) -> usize {
        match self {
            Nodes::F64(v) => v.len(),
            Nodes::F32(v) => v.len(),
        }
    }
}

/// The piece `piece` of the index, from its file in `dir` (a grid of `whole` nodes per axis,
/// `vars` variables), checked against the index's checksum and its own.
fn read_piece<R: Real>(
    dir: &Path,
    piece: &PieceFile,
    whole: [usize; 3],
    vars: usize,
) -> Result<Snapshot<R>, CheckpointError> {
    let path = dir.join(&piece.file);
    let bad = |what: &str| CheckpointError::Mismatch(format!("piece {}: {what}", path.display()));
    let bytes = fs::read(&path)
        .map_err(|e| CheckpointError::Mismatch(format!("piece {}: {e}", path.display())))?;
    if crc32fast::hash(&bytes) != piece.crc {
        return Err(bad(
            "its checksum differs from the one the checkpoint recorded",
        ));
    }
    if bytes.len() < MAGIC_PIECE.len() + 4 || &bytes[..MAGIC_PIECE.len()] != MAGIC_PIECE {
        return Err(bad("not a piece file"));
    }
    let (body, crc) = bytes.split_at(bytes.len() - 4);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader(&body[MAGIC_PIECE.len()..]);
    let head = [(); 8].map(|_| r.u64());
    let [_, o0, o1, o2, n0, n1, n2, count] = head.map(|x| x.unwrap_or(usize::MAX));
    let Points::Grid { n, offset, .. } = piece.points;
    if [o0, o1, o2] != offset || [n0, n1, n2] != n || count != vars {
        return Err(bad(
            "its grid or variables differ from the checkpoint's index",
        ));
    }
    if (0..3).any(|a| offset[a] + n[a] > whole[a]) {
        return Err(bad("it lies outside the grid"));
    }
    let len = n.iter().product();
    let values = (0..vars)
        .map(|_| {
            Ok(match R::BYTES {
                4 => r.f32s(len)?.into_iter().map(|x| R::of(x.into())).collect(),
                _ => r.f64s(len)?.into_iter().map(R::of).collect(),
            })
        })
        .collect::<Result<Vec<Vec<R>>, CheckpointError>>()?;
    if !r.0.is_empty() {
        return Err(bad("trailing bytes"));
    }
    Ok(Snapshot {
        points: piece.points,
        vars: values,
    })
}

/// The state at `points` (a whole grid) with `vars` variables from the piece files `index` in
/// `dir`.
fn assemble<R: Real>(
    dir: &Path,
    index: &[PieceFile],
    points: Points,
    vars: usize,
) -> Result<Snapshot<R>, CheckpointError> {
    let Points::Grid { n: whole, .. } = points;
    let mut values = vec![vec![R::zero(); points.len()]; vars];
    let mut covered = vec![false; points.len()];
    for piece in index {
        let part = read_piece::<R>(dir, piece, whole, vars)?;
        let Points::Grid { n, offset, .. } = part.points;
        for (var, from) in values.iter_mut().zip(&part.vars) {
            let mut at = from.iter();
            for k in 0..n[2] {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        let g =
                            offset[0] + i + whole[0] * (offset[1] + j + whole[1] * (offset[2] + k));
                        var[g] = *at.next().expect("a value per point");
                        covered[g] = true;
                    }
                }
            }
        }
    }
    if covered.iter().any(|c| !c) {
        return Err(CheckpointError::Corrupt("its pieces do not cover the grid"));
    }
    Ok(Snapshot {
        points,
        vars: values,
    })
}

/// `vars` in precision `R`.
fn convert<R: Real, S: Real>(vars: &[Vec<S>]) -> Vec<Vec<R>> {
    vars.iter()
        .map(|a| a.iter().map(|x| R::of(x.f64())).collect())
        .collect()
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

    /// `n` values of `N` bytes each, decoded by `from`.
    fn values<const N: usize, T>(
        &mut self,
        n: usize,
        from: fn([u8; N]) -> T,
    ) -> Result<Vec<T>, CheckpointError> {
        let bytes = self.take(
            n.checked_mul(N)
                .ok_or(CheckpointError::Corrupt("bad size"))?,
        )?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| from(c.try_into().expect("N bytes")))
            .collect())
    }

    fn f64s(&mut self, n: usize) -> Result<Vec<f64>, CheckpointError> {
        self.values(n, f64::from_le_bytes)
    }

    fn f32s(&mut self, n: usize) -> Result<Vec<f32>, CheckpointError> {
        self.values(n, f32::from_le_bytes)
    }

    /// `count` items, each read by `item`; stops at the first error.
    fn many<T>(
        &mut self,
        count: usize,
        mut item: impl FnMut(&mut Self) -> Result<T, CheckpointError>,
    ) -> Result<Vec<T>, CheckpointError> {
        (0..count).map(|_| item(self)).collect()
    }

    fn str(&mut self) -> Result<String, CheckpointError> {
        let n = self.u64()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| CheckpointError::Corrupt("bad text"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_core::Fields;
    use std::path::PathBuf;

    fn simulation() -> Simulation {
        let mut sim = Simulation::new(StopCriteria {
            tolerance: 1e-6,
            max_iterations: 10,
            check_interval: 2,
            stall_checks: crate::STALL_CHECKS,
        });
        sim.iteration = 3;
        sim.initial = Some(vec![0.3, 1.0 / 3.0, 2.0]);
        sim.history.push(HistoryRow {
            iteration: 3,
            relative: vec![0.1, 0.2, 1e-300],
        });
        sim
    }

    /// A fresh directory for one test's files.
    fn temp_dir(test: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("ferroflow-ck-{test}-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A format 1 file of `state`, as earlier versions wrote it.
    fn v1_bytes<R: Real>(sim: &Simulation, state: &Fields<R>) -> Vec<u8> {
        let mut b = header(MAGIC_V1, "[grid]\n", R::NAME, sim, 1.5, 0);
        let (l, v1) = (state.layout, v1_layout(state.layout.dim, state.layout.n));
        for x in [l.dim, l.n[0], l.n[1], l.n[2], state.vars.len(), v1.len] {
            put_u64(&mut b, x);
        }
        for var in &state.vars {
            // Ghosts and padding: values no node may be read from.
            let mut whole = vec![f64::NAN; v1.len];
            l.for_each_node(|i, j, k, o| {
                let (i, j, k) = (i as isize, j as isize, k as isize);
                whole[v1.index(i, j, k)] = var[o].f64();
            });
            for x in whole {
                put_f64(&mut b, x);
            }
        }
        let crc = crc32fast::hash(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    /// Three variables of random finite values of any magnitude and sign (random bits, from
    /// `from`), ghosts and padding included.
    fn random<R: Real>(layout: Layout, seed: u64, from: fn(u64) -> R) -> Fields<R> {
        let mut x = seed;
        let mut state = Fields::zeros(layout, 3);
        for v in state.vars.iter_mut().flatten() {
            *v = loop {
                // xorshift64
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if from(x).is_finite() {
                    break from(x);
                }
            };
        }
        state
    }

    fn points(layout: Layout) -> Points {
        Points::grid(layout.dim, layout.n)
    }

    /// Whether `back` holds the node values of `state` bit for bit.
    fn same_nodes<R: Real>(back: &Snapshot<R>, state: &Fields<R>) -> bool {
        let s = state.snapshot();
        let bits = |v: &Vec<Vec<R>>| -> Vec<u64> {
            v.iter().flatten().map(|x| x.f64().to_bits()).collect()
        };
        back.points == s.points
            && back.vars.len() == s.vars.len()
            && bits(&back.vars) == bits(&s.vars)
    }

    fn mismatch<R>(result: Result<Snapshot<R>, CheckpointError>) -> bool {
        matches!(result, Err(CheckpointError::Mismatch(_)))
    }

    /// Saves `state` as format 2 and reads it back, also as format 1; checks both give its
    /// node values exactly and returns the sizes of the two files.
    fn round_trips<R: Real>(state: &Fields<R>, dir: &Path) -> (u64, usize) {
        let (sim, path) = (simulation(), dir.join(FILE_NAME));
        save(&path, "[grid]\n", &sim, 1.5, &state.snapshot()).unwrap();
        let ck = load(&path).unwrap();
        assert_eq!((ck.version, ck.simulation(sim.stop)), (2, sim.clone()));
        assert!(same_nodes(
            &ck.state::<R>(points(state.layout), 3).unwrap(),
            state
        ));
        let v2 = fs::metadata(&path).unwrap().len();

        let v1 = v1_bytes(&sim, state);
        fs::write(&path, &v1).unwrap();
        let ck = load(&path).unwrap();
        assert_eq!((ck.version, ck.simulation(sim.stop)), (1, sim));
        assert!(same_nodes(
            &ck.state::<R>(points(state.layout), 3).unwrap(),
            state
        ));
        (v2, v1.len())
    }

    #[test]
    fn v2_round_trip_of_random_node_values_is_exact_and_smaller_than_v1() {
        let dir = temp_dir("random");
        // Among them grids whose rows ([12, 9], [6, 7, 5]) or planes ([6, 6, 5]) format 1
        // padded otherwise than this version.
        let grids = [
            (2, [17, 13, 0]),
            (2, [12, 9, 0]),
            (3, [6, 7, 5]),
            (3, [6, 6, 5]),
        ];
        for (i, layout) in grids
            .map(|(d, n)| Layout::new(d, n))
            .into_iter()
            .enumerate()
        {
            let seed = 0x9e37_79b9_7f4a_7c15 + i as u64;
            let f64s = random(layout, seed, f64::from_bits);
            let f32s = random(layout, seed, |x| f32::from_bits((x >> 32) as u32));
            for (w, (v2, v1)) in [(8, round_trips(&f64s, &dir)), (4, round_trips(&f32s, &dir))] {
                // Format 1 also stores the array length, and whole padded arrays in f64.
                let v1_len = v1_layout(layout.dim, layout.n).len;
                let saved = 8 + 3 * (8 * v1_len - w * layout.nodes());
                assert_eq!(v1 as u64 - v2, saved as u64, "{layout:?}, {w} bytes");
                assert!(v2 < v1 as u64);
            }
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn round_trip_is_exact_and_damage_is_detected() {
        let layout = Layout::new(2, [6, 5, 1]);
        let mut state = Fields::<f32>::zeros(layout, 3);
        state.vars[1]
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = 0.1 * i as f32);
        let sim = simulation();
        let dir = temp_dir("damage");
        let path = dir.join(FILE_NAME);
        save(&path, "[grid]\n", &sim, 1.5, &state.snapshot()).unwrap();
        let ck = load(&path).unwrap();
        assert_eq!(ck.simulation(sim.stop), sim);
        assert!(same_nodes(
            &ck.state::<f32>(points(layout), 3).unwrap(),
            &state
        ));
        assert_eq!((ck.case_toml.as_str(), ck.wall_seconds), ("[grid]\n", 1.5));
        assert!(mismatch(ck.state::<f64>(points(layout), 3)));
        assert!(mismatch(
            ck.state::<f32>(points(Layout::new(2, [7, 5, 1])), 3)
        ));
        assert!(mismatch(
            ck.state::<f32>(points(Layout::new(3, [6, 5, 5])), 3)
        ));
        assert!(mismatch(ck.state::<f32>(points(layout), 4)));

        let bytes = fs::read(&path).unwrap();
        let corrupt = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut b = bytes.clone();
            edit(&mut b);
            fs::write(&path, &b).unwrap();
            matches!(load(&path), Err(CheckpointError::Corrupt(_)))
        };
        assert!(corrupt(&|b| b[40] ^= 1));
        assert!(corrupt(&|b| b.truncate(b.len() - 9)));
        assert!(corrupt(&|b| b[7] = b'9'));
        assert!(corrupt(&|b| b.truncate(3)));
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_format_1_file_of_an_earlier_version_is_read() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../test_data/checkpoint-v1")
            .join(FILE_NAME);
        let ck = load(&path).unwrap();
        assert_eq!((ck.version, ck.iteration), (1, 301));
        assert_eq!(ck.history.last().map(|r| r.iteration), Some(301));
        let layout = Layout::new(2, [17, 17, 0]);
        let snapshot = ck.state::<f64>(points(layout), 3).unwrap();
        let state = Fields::from_snapshot(layout, &snapshot).unwrap();
        // The lid: u = 1 along the top wall, corners included.
        assert!((0..17).all(|i| state.at(1, i, 16, 0) == 1.0));
        assert_eq!(state.first_non_finite(), None);
        assert!(ck.state::<f32>(points(layout), 3).is_err());
    }

    /// The box of `state` (a whole grid) from `offset`, `n` nodes per axis.
    fn cut<R: Real>(state: &Snapshot<R>, offset: [usize; 3], n: [usize; 3]) -> Snapshot<R> {
        let Points::Grid { dim, n: whole, .. } = state.points;
        let vars = state
            .vars
            .iter()
            .map(|v| {
                let mut out = Vec::new();
                for k in 0..n[2] {
                    for j in 0..n[1] {
                        for i in 0..n[0] {
                            let (x, y, z) = (offset[0] + i, offset[1] + j, offset[2] + k);
                            out.push(v[x + whole[0] * (y + whole[1] * z)]);
                        }
                    }
                }
                out
            })
            .collect();
        Snapshot {
            points: Points::Grid { dim, n, offset },
            vars,
        }
    }

    #[test]
    fn a_checkpoint_of_pieces_gives_the_state_back_and_names_a_bad_piece() {
        let dir = temp_dir("pieces");
        let layout = Layout::new(3, [6, 7, 5]);
        let whole = random(layout, 0x5eed, f64::from_bits).snapshot();
        // Two pieces sharing the layer x = 3, as a run's pieces do.
        let parts = [
            cut(&whole, [0, 0, 0], [4, 7, 5]),
            cut(&whole, [3, 0, 0], [3, 7, 5]),
        ];
        fs::create_dir_all(dir.join("checkpoint/3")).unwrap();
        let index: Vec<PieceFile> = parts
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let file = format!("checkpoint/3/piece_{i}.ffcp");
                let crc = save_piece(&dir.join(&file), p).unwrap();
                PieceFile {
                    file,
                    points: p.points,
                    crc,
                }
            })
            .collect();
        let sim = simulation();
        let path = dir.join(FILE_NAME);
        let grid = (whole.points, 3);
        save_index::<f64>(&path, "[grid]\n", &sim, 1.5, grid, &index).unwrap();
        let ck = load(&path).unwrap();
        assert_eq!((ck.version, ck.simulation(sim.stop)), (3, sim.clone()));
        let back = ck.state::<f64>(whole.points, 3).unwrap();
        let bits = |s: &Snapshot<f64>| -> Vec<u64> {
            s.vars.iter().flatten().map(|x| x.to_bits()).collect()
        };
        assert_eq!(bits(&back), bits(&whole));
        assert!(mismatch(ck.state::<f32>(whole.points, 3)));
        assert!(mismatch(ck.state::<f64>(whole.points, 4)));
        // A process cut as the checkpoint was reads its own pieces only.
        let mine = ck
            .pieces_at::<f64>(whole.points, 3, &[parts[1].points])
            .unwrap()
            .unwrap();
        assert_eq!((mine.len(), mine[0].points), (1, parts[1].points));
        assert_eq!(bits(&mine[0]), bits(&parts[1]));
        let other = cut(&whole, [2, 0, 0], [4, 7, 5]).points;
        assert!(ck
            .pieces_at::<f64>(whole.points, 3, &[other])
            .unwrap()
            .is_none());
        assert!(mismatch(
            ck.pieces_at::<f32>(whole.points, 3, &[parts[1].points])
                .map(|_| whole.clone())
        ));

        // A damaged piece is named; so is a missing one.
        let piece = dir.join("checkpoint/3/piece_1.ffcp");
        let mut bytes = fs::read(&piece).unwrap();
        bytes[80] ^= 1;
        fs::write(&piece, &bytes).unwrap();
        let e = ck.state::<f64>(whole.points, 3).unwrap_err().to_string();
        assert!(e.contains("piece_1.ffcp") && e.contains("checksum"), "{e}");
        fs::remove_file(&piece).unwrap();
        let e = ck.state::<f64>(whole.points, 3).unwrap_err().to_string();
        assert!(e.contains("piece_1.ffcp"), "{e}");

        // Pieces that leave nodes out are refused.
        save_index::<f64>(&path, "[grid]\n", &sim, 1.5, grid, &index[..1]).unwrap();
        let ck = load(&path).unwrap();
        assert!(matches!(
            ck.state::<f64>(whole.points, 3),
            Err(CheckpointError::Corrupt(_))
        ));
        fs::remove_dir_all(&dir).unwrap();
    }
}
