//! Helpers shared by the integration tests of `ferroflow` (cli.rs, mpi.rs).
use serde_json::Value;
use std::fs;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::thread::sleep;
use std::time::{Duration, Instant};

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
