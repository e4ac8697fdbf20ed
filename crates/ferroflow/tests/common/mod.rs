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

/// Starts `ferroflow run` of `case` with `args` into `dir`/out, checkpointing every 20
/// steps and far from its end, interrupts it with SIGINT once its first checkpoint is there,
/// checks exit code 130 and what it left in `out/partial`, then continues it with
/// `--restart` for one more step (`limit`: the key of the case's step limit).
pub fn interrupt_and_continue(dir: &Path, case: &str, args: &[&str], limit: &str) {
    let out = dir.join("out");
    let every = ["--set", "output.checkpoint_interval=20", "--out", "out"];
    let long = [&["run", case, "-q"], args, &every[..]].concat();
    let mut child = spawn(dir, &long);
    let partial = out.join("partial");
    wait_for(&partial.join("checkpoint.ffcp"), Duration::from_secs(60));
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    assert_eq!(
        wait_exit(&mut child, Duration::from_secs(30), "SIGINT").code(),
        Some(130)
    );
    let s = summary(&partial);
    assert_eq!(s["status"], "interrupted");
    assert!(partial.join("fields.vtu").exists() && !out.join("summary.json").exists());
    // It continues from there (one more step).
    let steps = s["steps"].as_u64().unwrap() + 1;
    let limit = format!("{limit}={steps}");
    ferroflow(dir)
        .args(["run", "-q", "--restart", "out", "--set", &limit])
        .assert()
        .success();
    assert_eq!(summary(&out)["steps"].as_u64(), Some(steps));
}

/// Asserts that `files` are in directory `dir` and that its `fields.pvd` lists `listed`.
pub fn assert_files_and_listed(dir: &Path, files: &[&str], listed: &[&str]) {
    for file in files {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let pvd = fs::read_to_string(dir.join("fields.pvd")).unwrap();
    for file in listed {
        assert!(pvd.contains(&format!("file=\"{file}\"")), "{pvd}");
    }
}

/// Runs `cmd`, which must diverge: exit code 3 with `message` in its error, the results in
/// `out` as they were (`fields.vtu`), and in `out/partial` its summary but no fields.
pub fn assert_diverges(cmd: &mut Command, out: &Path, message: &str) {
    let before = fs::read(out.join("fields.vtu")).unwrap();
    let (code, err) = stderr_of(cmd);
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains(message), "{err}");
    assert_eq!(fs::read(out.join("fields.vtu")).unwrap(), before);
    let partial = out.join("partial");
    assert_eq!(summary(&partial)["status"], "diverged");
    assert!(!partial.join("fields.vtu").exists());
}

/// The standard output of `cmd`, which must succeed (its output and error shown if not).
pub fn stdout_of(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// `bench --fem 4 --precision f64,f32` with `args` in `dir`: its row of the 4³ cube (125
/// nodes) in f64 and in f32, each printed once, both at f32's finest CG tolerance (32 ε).
pub fn fem_bench_rows(dir: &Path, args: &[&str]) -> [String; 2] {
    let cmd = &mut ferroflow(dir);
    let text = stdout_of(
        cmd.args(["bench", "--fem", "4", "--precision", "f64,f32"])
            .args(args),
    );
    assert!(text.contains("CG tolerance 3.814697265625e-6"), "{text}");
    ["f64", "f32"].map(|precision| {
        let row = format!("| 4 | {precision} | 125 | ");
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with(&row)).collect();
        assert_eq!(rows.len(), 1, "{text}");
        rows[0].to_string()
    })
}
