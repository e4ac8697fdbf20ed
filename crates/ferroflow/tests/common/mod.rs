//! Helpers shared by the integration tests of `ferroflow` (cli.rs, output.rs, mpi.rs).
// Each test file compiles this module and uses a part of it.
#![allow(dead_code)]
use assert_cmd::cargo::cargo_bin_cmd;
use assert_cmd::Command;
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// `ferroflow` to be run in `dir`.
pub fn ferroflow(dir: &Path) -> Command {
    let mut cmd = cargo_bin_cmd!("ferroflow");
    cmd.current_dir(dir);
    cmd
}

/// `ferroflow ARGS` started in the background in `dir`, output discarded.
pub fn spawn(dir: &Path, args: &[&str]) -> Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_ferroflow"))
        .current_dir(dir)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ferroflow starts")
}

/// The exit code and standard error of `cmd`.
pub fn stderr_of(cmd: &mut Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The run's summary.json in `dir`.
pub fn summary(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

/// Asserts that each of `files` has the same bytes in directories `a` and `b`.
pub fn assert_same_files<S: AsRef<str>>(a: &Path, b: &Path, files: impl IntoIterator<Item = S>) {
    for file in files {
        let file = file.as_ref();
        let (x, y) = (
            fs::read(a.join(file)).unwrap(),
            fs::read(b.join(file)).unwrap(),
        );
        assert!(
            x == y,
            "{file} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

/// Waits until `path` exists; panics after `limit`.
pub fn wait_for(path: &Path, limit: Duration) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < limit, "{} did not appear", path.display());
        sleep(Duration::from_millis(5));
    }
}

/// Waits for `child` to exit; panics after `limit`, saying after `what`.
pub fn wait_exit(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < limit, "no exit after {what}");
        sleep(Duration::from_millis(20));
    }
}
