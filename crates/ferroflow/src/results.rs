//! The output directory of a run and the files in it: fields for ParaView, summary, residual
//! history, centreline profiles, plots, log, resolved case, checkpoint.
//!
//! A run writes everything into the staging directory `partial/` inside the output directory
//! and moves its files over the previous result set only once its own set is complete: a run
//! that fails, is killed, diverges or is interrupted leaves the earlier results as they were,
//! and its own files (checkpoint included) in `partial/`, where `--restart` continues it. An
//! advisory lock keeps a second run out of a directory while one uses it, and a run does not
//! replace the results of another case without `--overwrite`.
use crate::input::resolved_problem_keys;
use crate::plot;
use crate::run::Restart;
use crate::Failure;
use ferroflow_ac::Problem;
use ferroflow_cases::post::{post_process, Results};
use ferroflow_cases::summary::{write_profile, RunRecord, Summary};
use ferroflow_core::nodes::Sampled;
use ferroflow_core::{Fields, NodeValues, Points, Real};
use ferroflow_io::file::naming;
use ferroflow_io::table::write_json;
use ferroflow_io::vtk;
use ferroflow_solver::{checkpoint, write_residuals};
use std::ffi::OsString;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// The staging directory inside an output directory.
pub const STAGING: &str = "partial";

/// The lock file of an output directory: locked while a run uses the directory, it holds that
/// run's process id. It stays when the run ends (removing it would let two runs lock
/// different files).
const LOCK: &str = ".ferroflow.lock";

/// The resolved case of a result set.
pub const CASE_FILE: &str = "case.resolved.toml";

/// The run's log.
pub const LOG_FILE: &str = "run.log";

/// The summary: a directory with one holds a complete result set.
pub const SUMMARY: &str = "summary.json";

/// The directory of the final fields' pieces, one `.vti` per block, of a run over several
/// processes (indexed by `fields.pvti`).
pub const PIECES: &str = "fields";

/// The final fields of a run, as its results see them (pressure referenced).
pub enum Final<R: Real> {
    /// The whole grid, in this process.
    Whole(Fields<R>),
    /// Over several processes: every process's pieces (written into [`PIECES`]) as
    /// `(file, points)`, and the nodes the post-processing reads, gathered.
    Pieces(Vec<(String, Points)>, Sampled),
}

/// The files of a result set besides the snapshots `fields_<iteration>.vti`.
const RESULT_FILES: [&str; 15] = [
    SUMMARY,
    "residuals.csv",
    "centerline_u.csv",
    "centerline_v.csv",
    "fields.vti",
    "fields.vtu",
    "fields.pvti",
    PIECES,
    "fields.pvd",
    "residuals.png",
    "centerlines.png",
    LOG_FILE,
    CASE_FILE,
    checkpoint::FILE_NAME,
    CHECKPOINT_PIECES,
];

/// The directory of a run over several processes' checkpoint pieces (`<iteration>/`, one
/// generation kept), indexed by the checkpoint file.
pub const CHECKPOINT_PIECES: &str = "checkpoint";

/// A run's output directory, locked, with its staging directory and the field snapshots
/// written to it so far.
pub struct OutputDir {
    /// Where the complete result sets go.
    dir: PathBuf,
    /// Where this run writes.
    staging: PathBuf,
    /// `(iteration, file name)` of each snapshot, in iteration order.
    snapshots: Vec<(usize, String)>,
    /// Holds the directory's lock until the run ends (or dies: the OS then releases it).
    _lock: File,
}

/// The extensions of a snapshot's file: a grid's, several processes' pieces' index, a mesh's.
const SNAPSHOT_FILES: [&str; 3] = [".vti", ".pvti", ".vtu"];

/// Iteration of a snapshot `fields_<iteration>.vti` (or `.vtu`), or of the index
/// `fields_<iteration>.pvti` and directory `fields_<iteration>` of several processes' pieces
/// of one.
fn snapshot_iteration(name: &str) -> Option<usize> {
    let name = name.strip_prefix("fields_")?;
    let name = (SNAPSHOT_FILES.iter())
        .find_map(|e| name.strip_suffix(e))
        .unwrap_or(name);
    name.parse().ok()
}

/// Whether `name` is the file that names a snapshot (in `fields.pvd`), not its pieces.
fn snapshot_index(name: &str) -> bool {
    snapshot_iteration(name).is_some() && SNAPSHOT_FILES.iter().any(|e| name.ends_with(e))
}

/// The directory of the pieces of the snapshot at `iteration` over several processes.
pub fn snapshot_pieces(iteration: usize) -> String {
    format!("fields_{iteration:08}")
}

/// Whether `name` is a file of a result set, or what an interrupted write of one left.
fn is_result_file(name: &str) -> bool {
    let name = name.strip_suffix(".tmp").unwrap_or(name);
    // A finite-volume run's table of a wall patch.
    let surface = name.starts_with("surface_") && name.ends_with(".csv");
    RESULT_FILES.contains(&name) || snapshot_iteration(name).is_some() || surface
}

/// The message for an output directory that cannot be used.
fn cannot_use(dir: &Path) -> impl Fn(io::Error) -> Failure + '_ {
    move |e| {
        Failure::input(format!(
            "cannot use output directory {}: {e}",
            dir.display()
        ))
    }
}

impl OutputDir {
    /// Creates `dir` (bad input if it cannot be), locks it (bad input if another run holds
    /// it), refuses to replace what another case (its problem keys `case`) left there unless
    /// `overwrite`, and prepares
    /// the staging directory: for a run continued from the checkpoint in it, its files up to
    /// the checkpoint; else afresh, with the snapshots up to a `restart`'s iteration and the
    /// log from `dir`.
    pub fn open(
        dir: &Path,
        case: &[(String, String)],
        overwrite: bool,
        restart: Option<&Restart>,
    ) -> Result<OutputDir, Failure> {
        fs::create_dir_all(dir).map_err(cannot_use(dir))?;
        let lock = lock(dir)?;
        // Again under the lock: another run may have ended in the directory since the first look.
        check_replaceable(dir, case, overwrite)?;
        let staging = dir.join(STAGING);
        let snapshots = stage(dir, &staging, restart).map_err(cannot_use(dir))?;
        Ok(OutputDir {
            dir: dir.to_path_buf(),
            staging,
            snapshots,
            _lock: lock,
        })
    }

    /// Path of `name` in the staging directory, where the run writes it.
    pub fn join(&self, name: &str) -> PathBuf {
        self.staging.join(name)
    }

    /// Writes the snapshot `fields_<iteration>.vti` (zlib-compressed with `compress`) and the
    /// updated `fields.pvd`.
    pub fn write_snapshot<R: Real>(
        &mut self,
        problem: &Problem<R>,
        fields: &Fields<R>,
        iteration: usize,
        compress: bool,
    ) -> io::Result<()> {
        let name = format!("{}.vti", snapshot_pieces(iteration));
        let names = problem.variable_names();
        let snapshot = fields.snapshot();
        vtk::write_image_data(
            &self.join(&name),
            names,
            problem.spacing,
            &snapshot,
            compress,
        )?;
        self.add_snapshot(iteration, name)
    }

    /// Writes the index `fields_<iteration>.pvti` of a snapshot whose `pieces` (`(file,
    /// points)`) every process wrote into [`snapshot_pieces`], and adds it to `fields.pvd`.
    pub fn write_snapshot_index<R: Real>(
        &mut self,
        problem: &Problem<R>,
        pieces: &[(String, Points)],
        iteration: usize,
    ) -> io::Result<()> {
        let name = format!("{}.pvti", snapshot_pieces(iteration));
        let (names, l) = (problem.variable_names(), problem.layout);
        let whole = Points::grid(l.dim, l.n);
        let path = self.join(&name);
        vtk::write_parallel_image_data::<R>(&path, names, problem.spacing, whole, pieces)?;
        self.add_snapshot(iteration, name)
    }

    /// Lists snapshot `name` (written into the staging directory) at `iteration` in
    /// `fields.pvd`.
    pub fn add_snapshot(&mut self, iteration: usize, name: String) -> io::Result<()> {
        self.snapshots.push((iteration, name));
        vtk::write_collection(&self.join("fields.pvd"), &self.snapshots)
    }

    /// Lists the final fields `file` at `iteration` in `fields.pvd` after the snapshots (in
    /// place of one of the same iteration), if there are snapshots.
    pub fn add_final(&self, iteration: usize, file: &str) -> io::Result<()> {
        if self.snapshots.is_empty() {
            return Ok(());
        }
        let mut all = self.snapshots.clone();
        if all.last().is_some_and(|(i, _)| *i == iteration) {
            all.pop();
        }
        all.push((iteration, file.into()));
        vtk::write_collection(&self.join("fields.pvd"), &all)
    }

    /// Writes the results of a run into the staging directory. `fields` (pressure referenced)
    /// are `None` after divergence: then only the summary and the residual history are
    /// written, no fields or profiles.
    pub fn write_results<R: Real>(
        &self,
        run: &RunRecord<R>,
        fields: Option<&Final<R>>,
    ) -> io::Result<Summary> {
        let results = fields.map(|f| self.write_fields(run, f)).transpose()?;
        let names = run.problem.variable_names();
        let history = &run.sim.history;
        write_residuals(&self.join("residuals.csv"), names, history)?;
        let tolerance = run.sim.stop.tolerance;
        plot::residuals(&self.join("residuals.png"), names, history, tolerance)?;
        let summary = Summary::new(run, results).map_err(io::Error::other)?;
        write_json(&self.join(SUMMARY), &summary)?;
        Ok(summary)
    }

    /// Writes the final fields (and the index of the snapshots with them), and what they show:
    /// the centreline profiles and their plot. Over several processes the fields are the
    /// index `fields.pvti` of the pieces each process wrote into [`PIECES`].
    fn write_fields<R: Real>(&self, run: &RunRecord<R>, fields: &Final<R>) -> io::Result<Results> {
        let compress = run.case.output.compress;
        let (names, spacing) = (run.problem.variable_names(), run.problem.spacing);
        let (file, values): (_, &dyn NodeValues) = match fields {
            Final::Pieces(pieces, sampled) => {
                let l = run.problem.layout;
                let path = self.join("fields.pvti");
                let whole = Points::grid(l.dim, l.n);
                vtk::write_parallel_image_data::<R>(&path, names, spacing, whole, pieces)?;
                ("fields.pvti", sampled)
            }
            Final::Whole(fields) => {
                let snapshot = fields.snapshot();
                let path = self.join("fields.vti");
                vtk::write_image_data(&path, names, spacing, &snapshot, compress)?;
                ("fields.vti", fields)
            }
        };
        self.add_final(run.sim.iteration, file)?;
        let results = post_process(run.case, run.problem, values).map_err(io::Error::other)?;
        write_profile(&self.join("centerline_u.csv"), ["y", "u"], &results.u)?;
        write_profile(&self.join("centerline_v.csv"), ["x", "v"], &results.v)?;
        plot::centrelines(
            &self.join("centerlines.png"),
            &format!("{}, centreline profiles", results.title),
            &results.u,
            &results.v,
            results.reference.as_ref(),
        )?;
        Ok(results)
    }

    /// Replaces the result set in the directory by the complete one in the staging
    /// directory, which is then removed. The earlier summary goes first and the new one comes
    /// last, so that a directory with a summary never holds a mixed set.
    pub fn commit(self) -> io::Result<()> {
        let (dir, staging) = (&self.dir, &self.staging);
        let at = |path: PathBuf| move |e| naming(&path, e);
        let summary = dir.join(SUMMARY);
        match fs::remove_file(&summary) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(naming(&summary, e)),
            _ => {}
        }
        let new = names(staging)?;
        for name in new.iter().filter(|n| *n != SUMMARY) {
            // A directory (the pieces) replaces the earlier set's whole.
            if staging.join(name).is_dir() {
                remove(&dir.join(name))?;
            }
            fs::rename(staging.join(name), dir.join(name)).map_err(at(dir.join(name)))?;
        }
        for name in names(dir)? {
            let stale = name.to_str().is_some_and(is_result_file) && !new.contains(&name);
            if stale {
                remove(&dir.join(&name))?;
            }
        }
        fs::rename(staging.join(SUMMARY), &summary).map_err(at(summary))?;
        // What is left are links to snapshots of the earlier set that this one kept: a rename
        // onto another link of the same file leaves both.
        fs::remove_dir_all(staging).map_err(at(staging.clone()))?;
        Ok(())
    }
}

/// Removes the file or directory `path`, if there is one; errors name it.
fn remove(path: &Path) -> io::Result<()> {
    remove_entry(path).map_err(|e| naming(path, e))
}

/// [`remove`], errors as the system gives them.
fn remove_entry(path: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Names of the entries of directory `dir`.
fn names(dir: &Path) -> io::Result<Vec<OsString>> {
    fs::read_dir(dir)?
        .map(|entry| entry.map(|e| e.file_name()))
        .collect()
}

/// Takes the lock of output directory `dir`, held while the returned file is open. A lock
/// left by a run that died was released by the OS with the process, and is taken over.
fn lock(dir: &Path) -> Result<File, Failure> {
    let path = dir.join(LOCK);
    let cannot = |e: io::Error| cannot_use(dir)(naming(&path, e));
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(cannot)?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Err(in_use(dir)),
        Err(TryLockError::Error(e)) => return Err(cannot(e)),
    }
    file.set_len(0)
        .and_then(|()| writeln!(file, "{}", std::process::id()))
        .map_err(cannot)?;
    Ok(file)
}

/// The refusal of output directory `dir` while another run holds its lock, naming that run's
/// process.
fn in_use(dir: &Path) -> Failure {
    let path = dir.join(LOCK);
    let pid = fs::read_to_string(&path).unwrap_or_default();
    // Empty for a moment while the holder starts.
    let holder = match pid.trim() {
        "" => "another process".to_string(),
        pid => format!("process {pid}"),
    };
    Failure::input(format!(
        "output directory {} is in use by another run: {holder} holds its lock {}; wait for \
         it to end, or choose another --out",
        dir.display(),
        path.display()
    ))
}

/// What [`OutputDir::open`] checks, without taking the lock or writing anything: that no
/// other run holds `dir`, and that a run of the case of problem keys `case` may replace what
/// is in it.
pub fn check_usable(dir: &Path, case: &[(String, String)], overwrite: bool) -> Result<(), Failure> {
    if let Ok(file) = File::open(dir.join(LOCK)) {
        // A lock taken here is released at once, when `file` is dropped (a run that tries to
        // lock in that instant is refused, as if this one had started first).
        if let Err(TryLockError::WouldBlock) = file.try_lock() {
            return Err(in_use(dir));
        }
    }
    check_replaceable(dir, case, overwrite)
}

/// Refuses (bad input) to let a run of the case of problem keys `ours` replace the results
/// of another case in `dir`, or the unfinished run of another case in its staging directory,
/// unless `overwrite`. The case is what the keys that define the problem say (not how it is
/// solved, see [`crate::input::problem_keys`]), as `case.resolved.toml` records it.
fn check_replaceable(
    dir: &Path,
    ours: &[(String, String)],
    overwrite: bool,
) -> Result<(), Failure> {
    if overwrite {
        return Ok(());
    }
    for (holder, what) in [
        (dir.to_path_buf(), "the results"),
        (dir.join(STAGING), "the unfinished run"),
    ] {
        let record = holder.join(CASE_FILE);
        let Ok(text) = fs::read_to_string(&record) else {
            continue;
        };
        let theirs = match resolved_problem_keys(&text, &record.display().to_string()) {
            Ok(theirs) => theirs,
            Err(e) => {
                return Err(Failure::input(format!(
                    "{} holds {what} of a case that cannot be read ({e}); use --overwrite \
                     to replace them, or choose another --out",
                    dir.display()
                )))
            }
        };
        if theirs == ours {
            continue;
        }
        // Each side's case by its name and the keys where it differs from the other.
        let describe = |keys: &[(String, String)], other: &[(String, String)]| {
            let name = keys.iter().find(|kv| kv.0 == "case.name");
            let name = name.map_or("", |kv| kv.1.trim_matches('"'));
            let differ: Vec<String> = keys
                .iter()
                .filter(|kv| !other.contains(kv) && kv.0 != "case.name")
                .map(|(k, v)| format!("{k} = {v}"))
                .collect();
            match differ.is_empty() {
                true => format!("'{name}'"),
                false => format!("'{name}' with {}", differ.join(", ")),
            }
        };
        return Err(Failure::input(format!(
            "{} holds {what} of case {}; this run is case {}: use --overwrite to replace \
             them, or choose another --out",
            dir.display(),
            describe(&theirs, ours),
            describe(ours, &theirs),
        )));
    }
    Ok(())
}

/// Prepares the staging directory `staging` of output directory `dir` (see
/// [`OutputDir::open`]); returns the snapshots it holds.
fn stage(
    dir: &Path,
    staging: &Path,
    restart: Option<&Restart>,
) -> io::Result<Vec<(usize, String)>> {
    let continued = restart.is_some_and(|r| is_in(&r.file, staging));
    if !continued {
        match fs::remove_dir_all(staging) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(naming(staging, e)),
            _ => {}
        }
        fs::create_dir(staging).map_err(|e| naming(staging, e))?;
    }
    let Some(restart) = restart else {
        return Ok(Vec::new());
    };
    // A continued run keeps its own files up to the checkpoint; a run continued from another
    // checkpoint starts from those of the result set in `dir`.
    let mut snapshots = Vec::new();
    for name in names(if continued { staging } else { dir })? {
        // Files ferroflow writes have plain names.
        let Ok(name) = name.into_string() else {
            continue;
        };
        let snapshot = snapshot_iteration(&name);
        let keep = match snapshot {
            Some(i) => i <= restart.checkpoint.iteration,
            None => name == LOG_FILE || (continued && name == checkpoint::FILE_NAME),
        };
        let (from, to) = (dir.join(&name), staging.join(&name));
        match (keep, continued) {
            // The log is appended to, so it is copied; snapshots are never rewritten.
            (true, false) if name == LOG_FILE => fs::copy(&from, &to).map(drop),
            (true, false) => link_or_copy(&from, &to),
            (false, true) => remove_entry(&to),
            _ => Ok(()),
        }
        .map_err(|e| naming(&to, e))?;
        if let (Some(i), true) = (snapshot, keep && snapshot_index(&name)) {
            snapshots.push((i, name));
        }
    }
    snapshots.sort();
    Ok(snapshots)
}

/// Links file `from` as `to` (copies it where links cannot be made); a directory (a
/// snapshot's pieces) is made anew with its files linked.
fn link_or_copy(from: &Path, to: &Path) -> io::Result<()> {
    if from.is_dir() {
        fs::create_dir(to)?;
        for name in names(from)? {
            link_or_copy(&from.join(&name), &to.join(&name))?;
        }
        return Ok(());
    }
    fs::hard_link(from, to).or_else(|_| fs::copy(from, to).map(drop))
}

/// The directory `path` names: "." for an empty one (the parent of a bare file name).
fn dir_or_dot(path: Option<&Path>) -> &Path {
    match path {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Whether `file` is in directory `dir`.
fn is_in(file: &Path, dir: &Path) -> bool {
    match (
        fs::canonicalize(dir_or_dot(file.parent())),
        fs::canonicalize(dir),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// The directory a checkpoint file belongs to as output directory: the one it is in, or for
/// a checkpoint in a staging directory, the output directory around it.
pub fn output_dir_of(checkpoint: &Path) -> PathBuf {
    let parent = dir_or_dot(checkpoint.parent());
    let around = dir_or_dot(parent.parent());
    match parent.ends_with(STAGING) && around.join(LOCK).is_file() {
        true => around.to_path_buf(),
        false => parent.to_path_buf(),
    }
}

/// The checkpoint a restart from directory `dir` continues: the unfinished run's in the
/// staging directory if there is one, else the result set's.
pub fn checkpoint_in(dir: &Path) -> PathBuf {
    let unfinished = dir.join(STAGING).join(checkpoint::FILE_NAME);
    match unfinished.is_file() {
        true => unfinished,
        false => dir.join(checkpoint::FILE_NAME),
    }
}
