//! Output directories keep results safe: one run at a time in a directory, results of another
//! case never replaced silently, earlier results untouched by a run that does not finish
//! (divergence, a kill, Ctrl-C, a failed write), paths that are not UTF-8 used as given.
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tempfile::TempDir;

mod common;
use common::{ferroflow, spawn, stderr_of, summary, wait_exit, wait_for};

/// Arguments of a run that goes on until it is stopped.
const ENDLESS: [&str; 7] = [
    "run",
    "--set",
    "numerics.tolerance=1e-15",
    "--set",
    "numerics.max_iterations=100000000",
    "--set",
    "output.checkpoint_interval=200",
];

/// Every file of output directory `dir` (the staging directory and the lock excluded) with
/// its bytes.
fn result_set(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != "partial" && name != ".ferroflow.lock")
        .map(|name| {
            let bytes = fs::read(dir.join(&name)).unwrap();
            (name, bytes)
        })
        .collect()
}

/// Names of the files in `dir` (and its staging directory) that end in `.tmp`.
fn temporaries(dir: &Path) -> Vec<String> {
    [dir.to_path_buf(), dir.join("partial")]
        .iter()
        .filter_map(|d| fs::read_dir(d).ok())
        .flatten()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".tmp"))
        .collect()
}

#[test]
fn a_second_run_into_a_directory_in_use_exits_2_naming_the_first() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("out");
    let mut first = spawn(tmp.path(), &[&ENDLESS[..], &["--out", "out"]].concat());
    wait_for(
        &out.join("partial/checkpoint.ffcp"),
        Duration::from_secs(60),
    );
    let pid = first.id().to_string();
    assert_eq!(
        fs::read_to_string(out.join(".ferroflow.lock"))
            .unwrap()
            .trim(),
        pid
    );
    // Another case started into the same directory, and the same case again.
    for set in ["physics.reynolds=400", "numerics.cfl=0.5"] {
        let (code, err) =
            stderr_of(ferroflow(tmp.path()).args(["run", "--set", set, "--out", "out"]));
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains("output directory out is in use by another run")
                && err.contains(&format!("process {pid}"))
                && err.contains(".ferroflow.lock"),
            "{err}"
        );
    }
    // The lock of a run that died is taken over.
    first.kill().unwrap();
    first.wait().unwrap();
    let second = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflow"))
        .current_dir(tmp.path())
        .args(["run", "-q", "--set", "mesh.nodes=[17,17]", "--overwrite"])
        .args(["--out", "out"])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let second_pid = second.id().to_string();
    let done = second.wait_with_output().unwrap();
    assert!(done.status.success());
    assert_eq!(summary(&out)["grid"], serde_json::json!([17, 17]));
    assert_eq!(
        fs::read_to_string(out.join(".ferroflow.lock"))
            .unwrap()
            .trim(),
        second_pid
    );
}

#[test]
fn set_variants_get_their_own_directory_and_another_case_needs_overwrite() {
    let tmp = TempDir::new().unwrap();
    let run = |args: &[&str]| {
        let mut cmd = ferroflow(tmp.path());
        cmd.args(["run", "-q", "--set", "mesh.nodes=[17,17]"])
            .args(args);
        stderr_of(&mut cmd)
    };
    let root = tmp.path().join("ferroflow-out");
    let re100 = root.join("cavity2d-re100--mesh.nodes=17_17");
    let re400 = root.join("cavity2d-re100--mesh.nodes=17_17--physics.reynolds=400.0");

    assert_eq!(run(&[]).0, Some(0));
    let s = summary(&re100);
    assert_eq!(s["physics"]["model"], "incompressible");
    assert_eq!(s["physics"]["reynolds"], 100.0);
    assert_eq!(s["physics"]["viscosity"], 0.01);
    assert_eq!(s["overrides"], serde_json::json!(["mesh.nodes=[17,17]"]));
    let before = result_set(&re100);

    // Another Reynolds number: another directory; the first results stay as they were.
    assert_eq!(run(&["--set", "physics.reynolds=400"]).0, Some(0));
    let s = summary(&re400);
    assert_eq!(s["physics"]["reynolds"], 400.0);
    assert_eq!(
        s["overrides"],
        serde_json::json!(["mesh.nodes=[17,17]", "physics.reynolds=400"])
    );
    assert!(result_set(&re100) == before);

    // Into the first directory: refused without --overwrite, naming both cases.
    let out = re100.display().to_string();
    let (code, err) = run(&["--set", "physics.reynolds=400", "--out", &out]);
    assert_eq!(code, Some(2), "{err}");
    for part in [
        &format!("{out} holds the results of case 'cavity2d-re100' with physics.reynolds = 100.0"),
        "this run is case 'cavity2d-re100' with physics.reynolds = 400.0",
        "--overwrite",
    ] {
        assert!(err.contains(part), "'{part}' not in: {err}");
    }
    assert!(result_set(&re100) == before);
    let (code, err) = run(&[
        "--set",
        "physics.reynolds=400",
        "--out",
        &out,
        "--overwrite",
    ]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(summary(&re100)["physics"]["reynolds"], 400.0);

    // How a case is solved does not make it another case: same directory, no --overwrite.
    let (code, err) = run(&["--set", "numerics.tolerance=1e-4", "--overwrite"]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run(&["--set", "numerics.tolerance=1e-3", "--threads", "1"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(summary(&re100)["physics"]["reynolds"], 100.0);
    assert_eq!(fs::read_dir(&root).unwrap().count(), 2);

    // The resolved physics of a buoyancy-driven cavity given dimensionally.
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "bdc3d",
        "--set",
        "mesh.nodes=[9,9,9]",
        "--set",
        "numerics.max_iterations=10",
    ]));
    assert_eq!(code, Some(0), "{err}");
    let s = summary(&root.join("bdc3d--mesh.nodes=9_9_9"));
    let physics = &s["physics"];
    assert_eq!(physics["model"], "boussinesq");
    assert!((physics["rayleigh"].as_f64().unwrap() / 1e5 - 1.0).abs() < 1e-5);
    assert_eq!(
        (physics["prandtl"].as_f64(), physics["length"].as_f64()),
        (Some(0.71), Some(0.05))
    );
}

#[test]
fn earlier_results_stay_when_a_run_diverges_is_killed_or_interrupted() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("out");
    let partial = out.join("partial");
    let grid = ["--set", "mesh.nodes=[33,33]", "--out", "out"];
    ferroflow(tmp.path())
        .args(["run", "-q"])
        .args(grid)
        .assert()
        .success();
    let before = result_set(&out);
    assert!(before.contains_key("fields.vti") && before.contains_key("checkpoint.ffcp"));

    // Diverged: the summary and its last good checkpoint in partial/.
    let (code, err) = stderr_of(
        ferroflow(tmp.path())
            .args([
                "run",
                "--set",
                "numerics.cfl=2",
                "--set",
                "numerics.c4=0.25",
                "--set",
                "numerics.method=\"explicit\"",
            ])
            .args(["--set", "output.checkpoint_interval=100"])
            .args(grid),
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("the results in out are unchanged"), "{err}");
    assert!(
        result_set(&out) == before,
        "a diverged run changed the results"
    );
    assert_eq!(summary(&partial)["status"], "diverged");
    assert!(partial.join("checkpoint.ffcp").exists());

    // Killed and interrupted: their checkpoint in partial/.
    let checkpoint = partial.join("checkpoint.ffcp");
    for signal in ["-KILL", "-INT"] {
        // Gone, so that the one waited for is the next run's.
        fs::remove_file(&checkpoint).unwrap();
        let mut child = spawn(tmp.path(), &[&ENDLESS[..], &grid].concat());
        wait_for(&checkpoint, Duration::from_secs(60));
        let pid = child.id().to_string();
        let sent = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .unwrap();
        assert!(sent.success());
        let status = wait_exit(&mut child, Duration::from_secs(30), signal);
        assert_ne!(status.code(), Some(0), "{signal}");
        assert!(result_set(&out) == before, "{signal} changed the results");
        assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));
        assert!(checkpoint.exists());
    }
    assert_eq!(summary(&partial)["status"], "interrupted");
}

#[test]
fn a_finished_run_continued_keeps_its_snapshots() {
    let tmp = TempDir::new().unwrap();
    let run = |out: &str, iterations: &str, restart: bool| {
        let mut cmd = ferroflow(tmp.path());
        cmd.args(["run", "-q"]);
        match restart {
            true => cmd.args(["--restart", out]),
            // The explicit scheme: its 500 iterations do not converge.
            false => cmd
                .args(["--out", out, "--set", "mesh.nodes=[17,17]"])
                .args(["--set", "numerics.method=\"explicit\""]),
        };
        cmd.args(["--set", "output.field_interval=100", "--set", iterations])
            .assert()
            .success();
    };
    run("whole", "numerics.max_iterations=500", false);
    run("continued", "numerics.max_iterations=300", false);
    run("continued", "numerics.max_iterations=500", true);
    let (a, b) = (tmp.path().join("whole"), tmp.path().join("continued"));
    let (whole, continued) = (result_set(&a), result_set(&b));
    // The snapshots before the restart, kept from the first part, and the final fields.
    let kept = ["fields_00000101.vti", "fields_00000201.vti"];
    for file in kept.iter().chain(&["fields.vti"]) {
        assert!(whole[*file] == continued[*file], "{file} differs");
    }
    let index = String::from_utf8_lossy(&continued["fields.pvd"]).into_owned();
    assert!(kept.iter().all(|f| index.contains(f)), "{index}");
    assert!(!b.join("partial").exists());
}

#[cfg(unix)]
#[test]
fn paths_that_are_not_utf8_are_used_as_given() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let tmp = TempDir::new().unwrap();
    let out = OsStr::from_bytes(b"out-\xff");
    let case = OsStr::from_bytes(b"case-\xfe.toml");
    fs::write(
        tmp.path().join(case),
        "[mesh]\nnodes = [17, 17]\n\n[numerics]\nmax_iterations = 300\nmethod = \"explicit\"\n",
    )
    .unwrap();
    ferroflow(tmp.path())
        .args([OsStr::new("run"), OsStr::new("-q"), case])
        .args([OsStr::new("--out"), out])
        .assert()
        .success();
    let dir = tmp.path().join(out);
    assert_eq!(summary(&dir)["iterations"], 300);
    // The log repeats the command as a shell reads it.
    let log = fs::read_to_string(dir.join("run.log")).unwrap();
    assert!(
        log.contains(r"run -q $'case-\xfe.toml' --out $'out-\xff'"),
        "{log}"
    );
    ferroflow(tmp.path())
        .args([
            OsStr::new("run"),
            OsStr::new("-q"),
            OsStr::new("--restart"),
            out,
        ])
        .args(["--set", "numerics.max_iterations=400"])
        .assert()
        .success();
    assert_eq!(summary(&dir)["iterations"], 400);
    let (code, err) = stderr_of(
        ferroflow(tmp.path())
            .arg("run")
            .args([OsStr::new("--restart"), OsStr::from_bytes(b"nowhere-\xfd")]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--restart nowhere-\u{fffd}"), "{err}");
}

/// `ferroflow ARGS` in `dir` with files limited to `bytes` (RLIMIT_FSIZE): a longer write
/// fails with EFBIG ("File too large"), as one on a full disk fails with ENOSPC.
#[cfg(target_os = "linux")]
fn with_file_size_limit(dir: &Path, bytes: u64, args: &[&str]) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflow"));
    cmd.current_dir(dir).args(args);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // Ignored, SIGXFSZ does not kill the process: the write returns the error.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            match libc::setrlimit(libc::RLIMIT_FSIZE, &limit) {
                0 => Ok(()),
                _ => Err(std::io::Error::last_os_error()),
            }
        });
    }
    let done = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr).into_owned();
    (done.status.code(), err)
}

#[cfg(target_os = "linux")]
#[test]
fn a_failed_write_names_the_file_and_leaves_the_earlier_results() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("out");
    let args = [
        "run",
        "-q",
        "--set",
        "mesh.nodes=[65,65]",
        "--set",
        "numerics.max_iterations=2000",
        "--out",
        "out",
    ];
    ferroflow(tmp.path()).args(args).assert().success();
    let before = result_set(&out);
    // The checkpoint (about 104 kB) fits, fields.vti (136 kB) does not.
    let (checkpoint, fields) = (
        before["checkpoint.ffcp"].len() as u64,
        before["fields.vti"].len() as u64,
    );
    let limit = 120_000;
    assert!(
        checkpoint < limit && limit < fields,
        "{checkpoint} {fields}"
    );
    let (code, err) = with_file_size_limit(tmp.path(), limit, &args);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot write out/partial/fields.vti: File too large"),
        "{err}"
    );
    assert!(
        result_set(&out) == before,
        "the failed run changed the results"
    );
    assert!(temporaries(&out).is_empty(), "{:?}", temporaries(&out));
    assert!(out.join("partial/checkpoint.ffcp").exists());
}

/// A full disk: a tmpfs of 1 MiB holds the results of the first run, not the snapshots of the
/// second.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root: mounts a small tmpfs"]
fn a_full_disk_names_the_file_and_leaves_the_earlier_results() {
    let tmp = TempDir::new().unwrap();
    let disk = tmp.path().join("disk");
    fs::create_dir(&disk).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&disk)
        .status()
        .unwrap();
    assert!(mounted.success(), "mount -t tmpfs failed (root needed)");
    let args = [
        "run",
        "-q",
        "--set",
        "mesh.nodes=[65,65]",
        "--set",
        "numerics.max_iterations=2000",
        "--out",
        "disk/out",
    ];
    let (code, first) = stderr_of(ferroflow(tmp.path()).args(args));
    let out = disk.join("out");
    let before = (code == Some(0)).then(|| result_set(&out));
    let (code, err) = stderr_of(
        ferroflow(tmp.path())
            .args(args)
            .args(["--set", "output.field_interval=100"]),
    );
    let after = result_set(&out);
    let temporaries = temporaries(&out);
    let _ = std::process::Command::new("umount").arg(&disk).status();
    assert!(before.is_some(), "{first}");
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("cannot write disk/out/partial/") && err.contains("No space left"),
        "{err}"
    );
    assert!(before == Some(after), "the failed run changed the results");
    assert!(temporaries.is_empty(), "{temporaries:?}");
}
