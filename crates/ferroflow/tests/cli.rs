//! The `ferroflow` program as a user meets it: runs and their files, case input and its errors,
//! restarts after SIGKILL, Ctrl-C, divergence, and the VTK output read back by VTK itself.
//! Runs use small grids so that the suite stays fast on two cores.
use ferroflow_cases::case::{builtin, MethodKind, KEYS};
use ferroflow_cases::docs;
use ferroflow_cases::Case;
use ferroflow_core::Points;
use ferroflow_solver::checkpoint;
use std::fs;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;
use tempfile::TempDir;

mod common;
use common::{
    assert_same_files, fem_bench_rows, ferroflow, spawn, stderr_of, stdout_of, summary, wait_exit,
    wait_for,
};

#[test]
fn default_run_writes_every_result_into_the_default_directory() {
    let tmp = TempDir::new().unwrap();
    ferroflow(tmp.path())
        .args(["run", "--set", "mesh.nodes=[33,33]"])
        .assert()
        .success();
    // The override changes what the case solves: its results have a directory of their own.
    let out = tmp
        .path()
        .join("ferroflow-out/cavity2d-re100--mesh.nodes=33_33");
    let s = summary(&out);
    for key in [
        "case",
        "physics",
        "overrides",
        "dim",
        "grid",
        "precision",
        "backend",
        "iterations",
        "converged",
        "residuals",
        "wall_seconds",
        "node_updates_per_second",
    ] {
        assert!(s.get(key).is_some(), "summary.json lacks {key}");
    }
    assert_eq!(s["case"], "cavity2d-re100");
    assert_eq!(
        (s["converged"].as_bool(), s["precision"].as_str()),
        (Some(true), Some("f64"))
    );
    assert_eq!(s["grid"], serde_json::json!([33, 33]));
    let deviations = s["reference"].as_array().unwrap();
    assert!(deviations
        .iter()
        .all(|d| d["max_abs_deviation"].as_f64().unwrap() < 0.02));

    let first_line = |name: &str| {
        let text = fs::read_to_string(out.join(name)).unwrap();
        text.lines().next().unwrap().to_string()
    };
    assert_eq!(first_line("residuals.csv"), "iteration,p,u,v");
    assert_eq!(first_line("centerline_u.csv"), "y,u");
    assert_eq!(first_line("centerline_v.csv"), "x,v");
    for png in ["residuals.png", "centerlines.png"] {
        assert!(
            fs::read(out.join(png)).unwrap().starts_with(b"\x89PNG"),
            "{png}"
        );
    }
    assert!(fs::read(out.join("fields.vti"))
        .unwrap()
        .starts_with(b"<?xml"));

    // The resolved case reproduces the run: every default filled in, the override applied.
    let resolved = fs::read_to_string(out.join("case.resolved.toml")).unwrap();
    let case = Case::from_toml(&resolved, "case.resolved.toml").unwrap();
    assert_eq!(case.mesh.nodes, [33, 33]);
    // `numerics.method = "auto"` and the unset `numerics.c4` resolved to what ran.
    let mut default = builtin("cavity2d-re100").unwrap();
    default.resolve_method(false, 1);
    default.resolve_dissipation();
    assert_eq!(case.numerics, default.numerics);
    assert_eq!(case.numerics.method, MethodKind::Implicit);
    assert_eq!(case.numerics.c4, Some(0.02));
    let log = fs::read_to_string(out.join("run.log")).unwrap();
    assert!(log.contains("checkpoint_interval = 1000") && log.contains("converged after"));
}

#[test]
fn buoyancy_driven_cavity_reports_ra_pr_and_nusselt_numbers() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("bdc");
    let run = ferroflow(tmp.path())
        .args([
            "run",
            "bdc3d",
            "--set",
            "mesh.nodes=[13,13,13]",
            "--out",
            "bdc",
        ])
        .output()
        .unwrap();
    assert!(run.status.success());
    let printed = String::from_utf8_lossy(&run.stderr) + String::from_utf8_lossy(&run.stdout);
    assert!(printed.contains("Ra = 9.99997"), "{printed}");
    let s = summary(&out);
    let h = &s["heat_transfer"];
    assert!((h["rayleigh"].as_f64().unwrap() / 1e5 - 1.0).abs() < 1e-5);
    assert_eq!(h["prandtl"], 0.71);
    for wall in ["hot_wall", "cold_wall"] {
        for key in ["mean", "max", "max_at", "min", "min_at"] {
            assert!(h[wall].get(key).is_some(), "{wall} lacks {key}");
        }
    }
    // The walls' heat fluxes balance to about the tolerance (1e-7 relative residuals): the
    // implicit method's answer is 1e-7 from it, the explicit one's happened to be 3e-16.
    assert!(h["energy_imbalance"].as_f64().unwrap().abs() < 1e-6);
    assert_eq!(h["velocity_maxima"].as_array().unwrap().len(), 3);
    assert_eq!(h["reference"]["nusselt"], 4.337);
    assert_eq!(s["residuals"].as_object().unwrap().len(), 5);
    let vti = fs::read(out.join("fields.vti")).unwrap();
    assert!(String::from_utf8_lossy(&vti).contains("Name=\"T\""));
}

#[test]
fn every_builtin_case_is_listed_and_prints_in_full() {
    let tmp = TempDir::new().unwrap();
    let list = ferroflow(tmp.path()).arg("cases").output().unwrap();
    let list = String::from_utf8(list.stdout).unwrap();
    for (name, _) in ferroflow_cases::case::BUILTIN {
        assert!(
            list.lines().any(|l| l.starts_with(name)),
            "{name} not listed"
        );
        let shown = ferroflow(tmp.path())
            .args(["cases", "show", name])
            .output()
            .unwrap();
        assert!(shown.status.success());
        let text = String::from_utf8(shown.stdout).unwrap();
        assert_eq!(Case::from_toml(&text, name), Ok(builtin(name).unwrap()));
        assert!(text.lines().filter(|l| l.starts_with('#')).count() > KEYS.len());
    }
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["cases", "show", "nope"]));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("'nope' is neither a case file nor a built-in case"),
        "{err}"
    );
}

#[test]
fn bad_inputs_exit_2_naming_the_problem_and_create_no_output() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    fs::write(dir.join("a-file"), "").unwrap();
    let files = [
        ("syntax.toml", "[numerics\ncfl = 1.0\n"),
        (
            "unknown.toml",
            "[mesh]\nnodes = [33, 33]\n\n[numerics]\ncfll = 0.5\n",
        ),
        ("type.toml", "[numerics]\ncfl = \"fast\"\n"),
        ("reynolds.toml", "[physics]\nreynolds = -100.0\n"),
        ("zero.toml", "[grid]\nnodes = [0, 0]\n"),
        (
            "cfl.toml",
            "[case]\nname = \"x\"\n\n[numerics]\ncfl = 2.5\n",
        ),
        ("backend.toml", "[backend]\nkind = \"gpu\"\n"),
        ("blocks.toml", "[parallel]\nblocks = [2, 2, 2]\n"),
        ("twice.toml", "[numerics]\ncfl = 1.0\ncfl = 0.5\n"),
    ];
    for (name, text) in files {
        fs::write(dir.join(name), text).unwrap();
    }
    let cases: &[(&[&str], &[&str])] = &[
        (&["syntax.toml"], &["syntax.toml:1:", "`]`"]),
        (
            &["unknown.toml"],
            &["unknown.toml:5:", "numerics.cfll", "expected one of `cfl`"],
        ),
        (
            &["type.toml"],
            &["type.toml:2:", "numerics.cfl", "expected f64"],
        ),
        (
            &["reynolds.toml"],
            &["reynolds.toml:2:", "physics.reynolds = -100", "> 0"],
        ),
        (
            &["zero.toml"],
            &["zero.toml:2:", "grid.nodes", "at least 5"],
        ),
        (
            &["cfl.toml"],
            &["cfl.toml:5:", "numerics.cfl = 2.5", "0 < cfl <= 2"],
        ),
        (
            &["--set", "numerics.cfl=0"],
            &["--set numerics.cfl=0", "0 < cfl <= 2"],
        ),
        (
            &["missing.toml"],
            &["missing.toml", "cannot read case file"],
        ),
        (
            &["--out", "a-file/out"],
            &["cannot use output directory a-file/out"],
        ),
        (
            &["backend.toml"],
            &["backend.toml:2:", "backend.kind", "`cpu`, `cuda`, `auto`"],
        ),
        (
            &["--backend", "cuda"],
            // CI machines have no CUDA driver.
            &["backend.kind = \"cuda\"", "no CUDA driver"],
        ),
        (
            &["no-such-case"],
            &["'no-such-case'", "built-in: cavity2d-re100"],
        ),
        (
            &["--set", "numerics.kappa=abc"],
            &["--set numerics.kappa=abc", "expected f64"],
        ),
        (
            &["--set", "boundary.ymax.velocity=[0,1,0]"],
            &["--set boundary.ymax.velocity=[0,1,0]", "crosses the wall"],
        ),
        (
            &["--set", "physics.rayleigh=1e4"],
            &["physics.rayleigh", "not of \"incompressible\""],
        ),
        (
            &["--set", "numerics.max_iterations=-1"],
            &["numerics.max_iterations", "usize"],
        ),
        (&["--restart", "nowhere"], &["--restart nowhere"]),
        (
            &["twice.toml"],
            &["twice.toml:3: numerics.cfl: set twice (first on line 2)"],
        ),
        (
            &["--set", "mesh.nodes=[33,33"],
            &["--set mesh.nodes=[33,33: the value is not valid TOML"],
        ),
        (
            &[
                "bdc2d",
                "--set",
                "physics.rayleigh=1e308",
                "--set",
                "physics.prandtl=10",
            ],
            &["physics.rayleigh: 1e308 with Pr = 10: Ra Pr overflows"],
        ),
        (&["--precision", "f16"], &["invalid value 'f16'"]),
        (
            &["blocks.toml"],
            &[
                "blocks.toml:2:",
                "parallel.blocks: [2, 2, 2] has 3 values",
                "one block count per axis",
            ],
        ),
        (
            &["--blocks", "2,50"],
            &[
                "--set parallel.blocks=[2, 50]",
                "each block owns >= 3 nodes",
            ],
        ),
        (
            &["--set", "parallel.count=43"],
            &[
                "--set parallel.count=43",
                "a block count the grid can be cut into",
            ],
        ),
        (
            &[
                "--set",
                "parallel.blocks=[2,2]",
                "--set",
                "parallel.count=2",
            ],
            &[
                "--set parallel.count=2",
                "the number of blocks parallel.blocks makes",
            ],
        ),
        (
            &["--set", "parallel.exchange=fast"],
            &["parallel.exchange", "expected `peer` or `host`"],
        ),
    ];
    for (args, expected) in cases {
        let mut cmd = ferroflow(dir);
        cmd.arg("run").args(*args);
        if !args.contains(&"--out") {
            cmd.args(["--out", "out"]);
        }
        let (code, err) = stderr_of(&mut cmd);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        for e in *expected {
            assert!(err.contains(e), "{args:?}: '{e}' not in: {err}");
        }
        assert!(
            !dir.join("out").exists(),
            "{args:?} created the output directory"
        );
    }
}

#[test]
fn decomposed_runs_write_the_fields_of_one_block_bit_for_bit() {
    let tmp = TempDir::new().unwrap();
    let common = [
        "run",
        "-q",
        "--set",
        "mesh.nodes=[33,33]",
        "--set",
        "numerics.max_iterations=1000",
        "--set",
        "output.field_interval=400",
        // Blocks of the explicit scheme (the implicit method's: `implicit` tests).
        "--set",
        "numerics.method=\"explicit\"",
    ];
    let runs: [(&str, &[&str]); 3] = [
        ("one", &[]),
        ("set", &["--set", "parallel.blocks=[2,2]"]),
        ("flag", &["--blocks", "3,1", "--threads", "3"]),
    ];
    for (out, args) in runs {
        ferroflow(tmp.path())
            .args(common)
            .args(args)
            .args(["--out", out])
            .assert()
            .success();
    }
    let one = tmp.path().join("one");
    // The blocks take turns on one pool of the process's threads (by default, one per core).
    let cores = std::thread::available_parallelism().unwrap().get();
    let shared = format!("{cores} thread{} shared", if cores == 1 { "" } else { "s" });
    for (run, line) in [
        ("set", format!("cpu, 4 blocks [2, 2], {shared}")),
        ("flag", "cpu, 3 blocks [3, 1], 3 threads shared".into()),
    ] {
        let dir = tmp.path().join(run);
        // The residual norms are summed in another order: only the fields are bitwise equal.
        for file in ["fields.vti", "fields_00000401.vti", "centerline_u.csv"] {
            let (a, b) = (fs::read(one.join(file)), fs::read(dir.join(file)));
            assert!(a.unwrap() == b.unwrap(), "{run}: {file} differs");
        }
        assert_eq!(summary(&dir)["iterations"], 1000);
        let log = fs::read_to_string(dir.join("run.log")).unwrap();
        assert!(log.contains(&format!("backend: {line}")), "{log}");
    }
}

#[test]
fn restart_after_sigkill_ends_bitwise_as_an_uninterrupted_run() {
    let tmp = TempDir::new().unwrap();
    let args = [
        "run",
        "--quiet",
        "--set",
        "mesh.nodes=[129,129]",
        "--set",
        "numerics.tolerance=1e-9",
        "--set",
        "output.checkpoint_interval=200",
        "--set",
        "output.field_interval=800",
        "--out",
    ];
    let whole = [&args[..], &["whole"]].concat();
    let killed = [&args[..], &["killed"]].concat();
    ferroflow(tmp.path()).args(whole).assert().success();

    let mut child = spawn(tmp.path(), &killed);
    // Killed after the first snapshot, so that the restart must keep it.
    wait_for(
        &tmp.path().join("killed/partial/fields_00000801.vti"),
        Duration::from_secs(60),
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    assert!(
        !tmp.path().join("killed/summary.json").exists(),
        "the run ended before it was killed: make it longer"
    );
    ferroflow(tmp.path())
        .args(["run", "--quiet", "--restart", "killed"])
        .assert()
        .success();

    let (a, b) = (tmp.path().join("whole"), tmp.path().join("killed"));
    let files = [
        "fields.vti",
        "residuals.csv",
        "centerline_u.csv",
        "fields.pvd",
    ];
    assert_same_files(&a, &b, files);
    let snapshots = fs::read_dir(&a)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("fields_"));
    assert_same_files(&a, &b, snapshots);
    assert_eq!(summary(&a)["iterations"], summary(&b)["iterations"]);
    let log = fs::read_to_string(b.join("run.log")).unwrap();
    assert!(log.contains("restart: from iteration"));
}

#[test]
fn sigint_stops_with_a_checkpoint_results_and_exit_130() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("out");
    let mut child = spawn(
        tmp.path(),
        &[
            "run",
            "--set",
            "numerics.tolerance=1e-12",
            "--set",
            "output.checkpoint_interval=200",
            "--out",
            "out",
        ],
    );
    // Iterating once the first periodic checkpoint is there.
    let partial = out.join("partial");
    wait_for(&partial.join("checkpoint.ffcp"), Duration::from_secs(60));
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = wait_exit(&mut child, Duration::from_secs(30), "SIGINT");
    assert_eq!(status.code(), Some(130));
    // The results of an interrupted run stay in partial/; the directory holds none yet.
    let s = summary(&partial);
    assert_eq!(
        (s["status"].as_str(), s["converged"].as_bool()),
        (Some("interrupted"), Some(false))
    );
    assert!(partial.join("fields.vti").exists());
    assert!(!out.join("summary.json").exists());
    // The checkpoint continues the run (a loose tolerance ends it at once).
    let iterations = s["iterations"].clone();
    ferroflow(tmp.path())
        .args([
            "run",
            "-q",
            "--restart",
            "out",
            "--set",
            "numerics.tolerance=0.9",
        ])
        .assert()
        .success();
    assert_eq!(summary(&out)["iterations"], iterations);
    assert_eq!(summary(&out)["status"], "converged");
    // A case of another physical model cannot continue it, and is told why.
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "bdc2d",
        "--restart",
        "out",
        "--set",
        "mesh.nodes=[33,33]",
    ]));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("physics.model = \"incompressible\"")
            && err.contains("has physics.model = \"boussinesq\""),
        "{err}"
    );
    assert!(out.join("fields.vti").exists() && !partial.exists());
}

#[test]
fn restart_from_an_earlier_versions_checkpoint_ends_bitwise_as_an_uninterrupted_run() {
    let tmp = TempDir::new().unwrap();
    // Format 1, written by an earlier version after 301 iterations of the run below (see
    // test_data/checkpoint-v1/README.md).
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/checkpoint-v1");
    fs::create_dir(tmp.path().join("old")).unwrap();
    fs::copy(
        old.join("checkpoint.ffcp"),
        tmp.path().join("old/checkpoint.ffcp"),
    )
    .unwrap();
    let iterations = "numerics.max_iterations=600";
    ferroflow(tmp.path())
        .args(["run", "-q", "--restart", "old", "--set", iterations])
        .assert()
        .success();
    ferroflow(tmp.path())
        .args([
            "run",
            "-q",
            "--set",
            "mesh.nodes=[17,17]",
            "--set",
            iterations,
            // The old run's method: before `numerics.method`, the only one.
            "--set",
            "numerics.method=\"explicit\"",
        ])
        .args(["--out", "whole"])
        .assert()
        .success();

    let (a, b) = (tmp.path().join("whole"), tmp.path().join("old"));
    let files = [
        "fields.vti",
        "residuals.csv",
        "centerline_u.csv",
        "centerline_v.csv",
    ];
    assert_same_files(&a, &b, files);
    assert_eq!(summary(&a)["iterations"], 600);
    assert_eq!(summary(&b)["iterations"], 600);
    let log = fs::read_to_string(b.join("run.log")).unwrap();
    assert!(log.contains("restart: from iteration 301"), "{log}");
    assert!(log.contains("method = \"explicit\""), "{log}");
    // The checkpoint written since is in the current format.
    assert_eq!(
        &fs::read(b.join("checkpoint.ffcp")).unwrap()[..8],
        b"FFLOWCK2"
    );
}

#[test]
fn divergence_exits_3_naming_iteration_and_variable_without_fields() {
    let tmp = TempDir::new().unwrap();
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "--set",
        "mesh.nodes=[17,17]",
        "--set",
        "numerics.cfl=2",
        "--set",
        "numerics.c4=0.25",
        "--set",
        "numerics.method=\"explicit\"",
        "--set",
        "output.checkpoint_interval=100",
        "--out",
        "out",
    ]));
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("diverged at iteration") && err.contains("residual of"),
        "{err}"
    );
    assert!(err.contains("the last good checkpoint is kept"), "{err}");
    // A diverged run's files stay in partial/.
    let out = tmp.path().join("out/partial");
    let s = summary(&out);
    assert_eq!(s["status"], "diverged");
    // It really blew up: growth by a million is the driver's threshold.
    let last: Vec<f64> = fs::read_to_string(out.join("residuals.csv"))
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .split(',')
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    assert!(
        last.iter().any(|r| *r > 1e3),
        "residuals before divergence: {last:?}"
    );
    assert!(s["iterations"].as_u64().unwrap() < 200_000);
    assert!(!out.join("fields.vti").exists() && !out.join("centerline_u.csv").exists());
    assert!(out.join("checkpoint.ffcp").exists());
    assert!(!tmp.path().join("out/summary.json").exists());
}

/// The python with VTK that FERROFLOW_VTK_PYTHON names; fails where it is unset (these tests
/// are ignored unless asked for).
fn vtk_python() -> String {
    std::env::var("FERROFLOW_VTK_PYTHON")
        .expect("FERROFLOW_VTK_PYTHON must name a python with vtk (see README.md)")
}

/// Runs `ferroflow run ARGS` into `tmp/out` and checks its `.vti` files with VTK itself
/// (`tests/vtk_readback.py`), with `reference` also against the arrays of `tmp/reference`.
fn run_and_read_back(
    python: &str,
    tmp: &Path,
    out: &str,
    precision: &str,
    args: &[&str],
    reference: Option<&str>,
) {
    ferroflow(tmp)
        .args(["run", "-q", "--out", out])
        .args(args)
        .assert()
        .success();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vtk_readback.py");
    let check = std::process::Command::new(python)
        .arg(&script)
        .arg(tmp.join(out))
        .arg(precision)
        .args(reference.map(|r| tmp.join(r)))
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
#[ignore = "needs VTK for Python (FERROFLOW_VTK_PYTHON): run with --ignored, see README.md"]
fn vtk_files_read_back_with_the_vtk_library() {
    let python = vtk_python();
    let tmp = TempDir::new().unwrap();
    let runs: [(&str, &[&str]); 2] = [
        (
            "f64",
            &[
                "--set",
                "mesh.nodes=[33,33]",
                "--set",
                "output.field_interval=3000",
            ],
        ),
        (
            "f32",
            &[
                "cavity3d-re100",
                "--precision",
                "f32",
                "--set",
                "mesh.nodes=[9,11,13]",
                "--set",
                "numerics.tolerance=1e-4",
            ],
        ),
    ];
    for (precision, args) in runs {
        run_and_read_back(&python, tmp.path(), precision, precision, args, None);
    }
}

#[test]
#[ignore = "needs VTK for Python (FERROFLOW_VTK_PYTHON): run with --ignored, see README.md"]
fn compressed_vtk_files_read_back_as_the_raw_ones() {
    let python = vtk_python();
    let tmp = TempDir::new().unwrap();
    // Velocity (81 kB) spans three zlib blocks, p (27 kB) fits in one; snapshots too.
    let args = [
        "cavity3d-re100",
        "--precision",
        "f32",
        "--set",
        "mesh.nodes=[17,19,21]",
        "--set",
        "numerics.max_iterations=600",
        "--set",
        "output.field_interval=200",
        // 600 iterations that do not converge, with snapshots.
        "--set",
        "numerics.method=\"explicit\"",
    ];
    run_and_read_back(&python, tmp.path(), "raw", "f32", &args, None);
    let compressed = [&args[..], &["--set", "output.compress=true"]].concat();
    run_and_read_back(&python, tmp.path(), "zlib", "f32", &compressed, Some("raw"));
    for file in ["fields.vti", "fields_00000201.vti"] {
        let (raw, zlib) = (
            fs::read(tmp.path().join("raw").join(file)).unwrap(),
            fs::read(tmp.path().join("zlib").join(file)).unwrap(),
        );
        let compressor = b"compressor=\"vtkZLibDataCompressor\"";
        assert!(
            zlib.windows(compressor.len()).any(|w| w == compressor),
            "{file}"
        );
        assert!(zlib.len() < raw.len(), "{file} is not smaller compressed");
    }
}

#[test]
fn info_help_and_auto_backend_say_what_they_do() {
    let tmp = TempDir::new().unwrap();
    let info = ferroflow(tmp.path()).arg("info").output().unwrap();
    let info = String::from_utf8(info.stdout).unwrap();
    assert!(info.contains(env!("CARGO_PKG_VERSION")) && info.contains("cpu threads:"));
    assert!(info.contains("cuda  unavailable: no CUDA driver"), "{info}");
    // Every command and subcommand, as each --help lists them.
    let mut commands: Vec<Vec<String>> = vec![vec![]];
    let mut seen = 0;
    while let Some(command) = commands.get(seen).cloned() {
        seen += 1;
        let help = ferroflow(tmp.path())
            .args(&command)
            .arg("--help")
            .output()
            .unwrap();
        let help = String::from_utf8(help.stdout).unwrap();
        assert!(
            help.contains("Example"),
            "{command:?} --help has no examples"
        );
        let listed = help.lines().skip_while(|l| *l != "Commands:").skip(1);
        for line in listed.take_while(|l| !l.is_empty()) {
            let name = line.split_whitespace().next().unwrap();
            if name != "help" {
                commands.push([&command[..], &[name.to_string()]].concat());
            }
        }
    }
    let names: Vec<String> = commands.iter().map(|c| c.join(" ")).collect();
    for expected in [
        "run",
        "check",
        "cases show",
        "cases docs",
        "verify mms",
        "bench",
        "info",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "--backend",
        "auto",
        "--set",
        "mesh.nodes=[17,17]",
        "--set",
        "numerics.tolerance=1e-3",
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("cpu, ") && err.contains("auto: backend cuda is not available"),
        "{err}"
    );
}

#[test]
fn verify_mms_checks_its_output_first_and_says_pass_or_fail() {
    let tmp = TempDir::new().unwrap();
    fs::write(tmp.path().join("file"), "").unwrap();
    // A directory that cannot be created: refused before any grid is computed.
    let (code, err) = stderr_of(
        ferroflow(tmp.path()).args(["verify", "mms", "--sizes", "9,17", "--out", "file/mms"]),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("cannot write file/mms/mms.csv"), "{err}");
    assert!(!err.contains("iterations"), "a grid was computed: {err}");
    let (code, err) =
        stderr_of(ferroflow(tmp.path()).args(["verify", "mms", "--sizes", "17", "--out", "one"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("at least two grids"), "{err}");
    // 9 -> 17 is short of the asymptotic range: the pressure's order is 2.28 (L2) and 2.75
    // (Linf); the table is still written.
    let out = ferroflow(tmp.path())
        .args(["verify", "mms", "--sizes", "9,17", "--out", "coarse"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let verdict = stdout.lines().last().unwrap();
    assert!(
        verdict.starts_with("FAIL: observed orders on n = 17 not within 2 ± 0.1: p L2 2.2"),
        "{stdout}"
    );
    let table = fs::read_to_string(tmp.path().join("coarse/mms.csv")).unwrap();
    assert_eq!(table.lines().count(), 7, "{table}");
    assert!(!tmp.path().join("coarse/mms.csv.tmp").exists());
    // By multigrid, the skew-symmetric form: second order from 33 to 65 (1.96 to 2.02).
    let out = ferroflow(tmp.path())
        .args(["verify", "mms", "--sizes", "17,33,65", "--multigrid"])
        .args(["--convection", "skew-symmetric", "--out", "mg"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("PASS: observed orders on n = 65"),
        "{stdout}"
    );
}

#[test]
fn total_wall_seconds_covers_set_up_iterations_and_output() {
    let tmp = TempDir::new().unwrap();
    // One iteration of a large grid: most of the time goes to set-up and output.
    let start = std::time::Instant::now();
    ferroflow(tmp.path())
        .args(["run", "-q", "--out", "out"])
        .args(["--set", "mesh.nodes=[1025,1025]"])
        .args(["--set", "numerics.max_iterations=1"])
        .assert()
        .success();
    let elapsed = start.elapsed().as_secs_f64();
    let s = summary(&tmp.path().join("out"));
    let (wall, total) = (
        s["wall_seconds"].as_f64().unwrap(),
        s["total_wall_seconds"].as_f64().unwrap(),
    );
    assert!(wall < total && total < elapsed, "{wall} {total} {elapsed}");
    // What it leaves out: starting the process and writing summary.json.
    assert!(total > 0.75 * elapsed, "{total} of {elapsed} s");
}

#[test]
fn bench_projects_scaling_from_the_measured_rate() {
    let tmp = TempDir::new().unwrap();
    let bench = ["bench", "--backend", "cpu", "--n2d", "66", "--n3d"];
    let quick = ["--precision", "f64", "--repeats", "1", "--seconds", "0.01"];
    let out = ferroflow(tmp.path())
        .args(bench)
        .args(quick)
        .args(["--project", "4,1024"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    // 64 owned nodes per axis cut 2 x 2: 32^2 each, two faces of 32 nodes (p two deep).
    let row = |ranks: &str, kind: &str| {
        let start = format!("| {ranks} | {kind} |");
        stdout
            .lines()
            .find(|l| l.starts_with(&start))
            .unwrap_or_else(|| panic!("no {start} row in {stdout}"))
            .to_string()
    };
    assert!(
        row("4", "strong").contains("| [2, 2] | 1024 | 0.002 | 2 |"),
        "{stdout}"
    );
    assert!(row("4", "weak").contains("| [2, 2] | 4096 |"), "{stdout}");
    // 64 nodes per axis cannot be cut for 1024 ranks; each rank of a weak run still can.
    assert!(row("1024", "strong").contains("cannot be cut"), "{stdout}");
    assert!(
        row("1024", "weak").contains("| [32, 32] | 4096 |"),
        "{stdout}"
    );
    // The buoyant cases are measured with the explicit pass too, whatever the default.
    let out = ferroflow(tmp.path())
        .args(bench)
        .args(quick)
        .arg("--energy")
        .output()
        .unwrap();
    let energy = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && energy.contains("G node-updates/s"),
        "{energy}"
    );
    assert!(!energy.contains("implicit"), "{energy}");
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(bench).args(quick).args([
        "--project",
        "4",
        "--blocks",
        "2,1",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--project") && err.contains("--blocks"),
        "{err}"
    );
}

#[test]
fn bench_solve_times_both_methods_to_the_tolerance() {
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args([
            "bench",
            "--backend",
            "cpu",
            "--solve",
            "cavity2d-re100,bdc2d",
        ])
        .args(["--nodes", "17"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    for case in ["cavity2d-re100", "bdc2d"] {
        let rows: Vec<&str> = stdout.lines().filter(|l| l.contains(case)).collect();
        assert_eq!(rows.len(), 2, "{stdout}");
        assert!(rows[0].contains("| explicit |") && rows[1].contains("| implicit |"));
        assert!(rows.iter().all(|r| r.contains("converged")), "{stdout}");
        // The implicit row ends with the explicit time over its own.
        let last = rows[1]
            .trim_end_matches([' ', '|'])
            .rsplit('|')
            .next()
            .unwrap();
        let ratio: f64 = last.trim().parse().unwrap();
        assert!(ratio > 0.0, "{}", rows[1]);
    }
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["bench", "--solve", "cavity9d"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("\"cavity9d\"") && err.contains("cavity2d-re100"),
        "{err}"
    );
}

#[test]
fn bench_flags_cache_resident_grids() {
    let tmp = TempDir::new().unwrap();
    for differences in ["second-order", "fourth-order"] {
        let out = ferroflow(tmp.path())
            .args(["bench", "--n2d", "17", "--n3d", "--precision", "f64"])
            .args(["--repeats", "1", "--seconds", "0.01"])
            .args(["--differences", differences])
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{differences}: {stdout}");
        assert!(stdout.contains("last-level cache"), "{stdout}");
        let row = stdout.lines().find(|l| l.contains("[17, 17]")).unwrap();
        assert!(
            row.contains("% of roofline [cache-resident: ") && row.contains("MB of cache"),
            "{row}"
        );
    }
}

/// Rerun `ferroflow cases docs --update` on `docs/cases.md` when `KEYS` changes; this fails
/// until then, so the docs' key tables stay those of the program.
#[test]
fn docs_key_tables_are_those_generated_from_keys() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/cases.md");
    let docs = fs::read_to_string(path).unwrap();
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args(["cases", "docs"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let generated = String::from_utf8(out.stdout).unwrap();
    let fix = "regenerate them in the workspace root with \
               `cargo run -p ferroflow -- cases docs --update docs/cases.md`";
    let Some(region) = docs::region(&docs) else {
        panic!(
            "docs/cases.md lacks the lines around its generated key tables, '{}' and '{}': \
             put them back, then {fix}",
            docs::BEGIN,
            docs::END
        );
    };
    let before = docs[..region.start].lines().count();
    let written = &docs[region];
    if let Some((i, (a, b))) = written
        .lines()
        .zip(generated.lines())
        .enumerate()
        .find(|(_, (a, b))| a != b)
    {
        panic!(
            "docs/cases.md:{}: the key tables differ from KEYS in \
             crates/ferroflow-cases/src/case.rs\n  docs:      {a}\n  generated: {b}\n{fix}",
            before + i + 1
        );
    }
    assert_eq!(
        format!("{written}\n"),
        generated,
        "docs/cases.md: the key tables differ from KEYS in length; {fix}"
    );

    // --update rewrites only the region, and refuses a file without one.
    let stale = tmp.path().join("cases.md");
    let edited = docs.replacen("| `mesh.dim` | integer |", "| `mesh.dim` | float |", 1);
    assert_ne!(edited, docs);
    fs::write(&stale, format!("{edited}\nmore prose\n")).unwrap();
    ferroflow(tmp.path())
        .args(["cases", "docs", "--update", "cases.md"])
        .assert()
        .success();
    assert_eq!(
        fs::read_to_string(&stale).unwrap(),
        format!("{docs}\nmore prose\n")
    );
    fs::write(&stale, "# no tables\n").unwrap();
    let (code, err) =
        stderr_of(ferroflow(tmp.path()).args(["cases", "docs", "--update", "cases.md"]));
    assert_eq!(code, Some(2));
    assert!(err.contains("no generated region"), "{err}");
}

#[test]
fn check_validates_and_sizes_a_case_without_running_or_writing() {
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args(["check", "cavity3d-re100", "--set", "mesh.nodes=[65,65,65]"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    // 4 variables × 5 copies (the initial state, the two buffers iterated between, and at
    // checkpoints a downloaded state and its encoding) of (65 + 4)³ padded to 72-value rows,
    // 8 bytes each, and the implicit relaxation's arrays (the default method): two in f64,
    // 3 × 4 + 10 in f32.
    let bytes = (20 * 8 + 2 * 8 + 22 * 4) * 72 * 69 * 69;
    let gib = format!("{:.3} GiB", bytes as f64 / (1u64 << 30) as f64);
    assert!(text.contains(&gib), "{gib} not in: {text}");
    assert!(text.contains("will be created"), "{text}");
    // `numerics.method = "auto"` as the run would resolve it: explicit on GPU blocks.
    assert!(text.contains("method: implicit"), "{text}");
    let gpu_blocks = ferroflow(tmp.path())
        .args(["check", "--backend", "cuda", "--blocks", "2,2"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&gpu_blocks.stdout);
    assert!(text.contains("method: explicit"), "{text}");
    assert!(!tmp.path().join("ferroflow-out").exists());
    let (code, err) =
        stderr_of(ferroflow(tmp.path()).args(["check", "--set", "physics.reynolds=-1"]));
    assert_eq!(code, Some(2));
    assert!(err.contains("physics.reynolds"), "{err}");
    // A grid beyond the address space is bad input, not a panic.
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "check",
        "--set",
        "mesh.nodes=[9223372036854775807,5]",
    ]));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("mesh.nodes") && err.contains("address space"),
        "{err}"
    );
    assert!(!tmp.path().join("ferroflow-out").exists());
    // The schema v1 name of the key still works, with a note.
    let out = ferroflow(tmp.path())
        .args(["check", "--set", "grid.nodes=[33,33]"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("read as mesh.nodes"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("[33, 33]"));
}

#[test]
fn case_files_of_an_earlier_version_still_run() {
    let tmp = TempDir::new().unwrap();
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/cases-v1");
    for (file, nodes) in [
        ("cavity2d-re100.toml", "[17,17]"),
        ("bdc3d.toml", "[9,9,9]"),
    ] {
        let case = old.join(file);
        let out = tmp.path().join(file);
        let run = ferroflow(tmp.path())
            .arg("run")
            .arg(&case)
            .arg("--out")
            .arg(&out)
            .args(["--set", &format!("grid.nodes={nodes}")])
            .args(["--set", "numerics.max_iterations=100"])
            .output()
            .unwrap();
        assert!(run.status.success(), "{file}");
        let err = String::from_utf8_lossy(&run.stderr);
        assert!(err.contains("schema v1"), "{file}: {err}");
        assert_eq!(summary(&out)["iterations"], 100, "{file}");
        // `cases show` prints it in the current schema, which reads back as the same case.
        let shown = ferroflow(tmp.path())
            .args(["cases", "show"])
            .arg(&case)
            .output()
            .unwrap();
        assert!(shown.status.success(), "{file}");
        let text = String::from_utf8(shown.stdout).unwrap();
        assert!(
            text.contains("[mesh]") && text.contains("[boundary.xmax]"),
            "{text}"
        );
        // v1 files name c4 (0.02), which the built-in cases leave to its default (0.02 too).
        let mut expected = builtin(file.trim_end_matches(".toml")).unwrap();
        expected.numerics.c4 = Some(0.02);
        assert_eq!(Case::from_toml(&text, file), Ok(expected));
    }
}

#[test]
fn case_names_that_are_not_plain_file_names_are_refused() {
    let tmp = TempDir::new().unwrap();
    let inside = tmp.path().join("inside");
    fs::create_dir(&inside).unwrap();
    let outside = tmp.path().join("escape");
    for name in [
        "\"../escape\"".to_string(),
        format!("{:?}", outside.display().to_string()),
        "\"..\"".to_string(),
        "\"\"".to_string(),
    ] {
        let (code, err) = stderr_of(ferroflow(&inside).args([
            "run",
            "--set",
            &format!("case.name={name}"),
            "--set",
            "mesh.nodes=[9,9]",
        ]));
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(
            err.contains("case.name") && err.contains("plain file name"),
            "{err}"
        );
        assert!(!outside.exists(), "{name} wrote outside ferroflow-out/");
        assert!(
            !inside.join("ferroflow-out").exists(),
            "{name}: output created"
        );
    }
}

#[cfg(target_os = "linux")]
#[test]
fn thread_counts_are_bounded_and_blocks_share_one_pool() {
    let tmp = TempDir::new().unwrap();
    let start = std::time::Instant::now();
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["run", "--threads", "100000"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("backend.threads = 100000") && err.contains("per core"),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(10));
    // 1764 blocks on one thread: once set up, the process has one pool thread ("cpu-0"),
    // not one per block, beside its main and signal threads and rayon's global pool (one
    // thread per core, for parallel copies).
    let mut child = spawn(
        tmp.path(),
        &["run", "--blocks", "42,42", "--threads", "1", "--out", "out"],
    );
    let log = tmp.path().join("out/partial/run.log");
    let start = std::time::Instant::now();
    while !fs::read_to_string(&log).is_ok_and(|l| l.contains("1764 blocks")) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no backend line in run.log"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let names: Vec<String> = fs::read_dir(format!("/proc/{}/task", child.id()))
        .unwrap()
        .map(|t| fs::read_to_string(t.unwrap().path().join("comm")).unwrap())
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    let pool: Vec<&String> = names.iter().filter(|n| n.starts_with("cpu-")).collect();
    assert_eq!(pool, ["cpu-0\n"], "{names:?}");
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(names.len() <= 3 + cores, "{names:?}");
    let log = fs::read_to_string(&log).unwrap();
    assert!(
        log.contains("cpu, 1764 blocks [42, 42], 1 thread shared"),
        "{log}"
    );
}

#[test]
fn a_state_larger_than_memory_is_refused_before_it_is_allocated() {
    let tmp = TempDir::new().unwrap();
    for command in ["run", "check"] {
        let start = std::time::Instant::now();
        let (code, err) = stderr_of(ferroflow(tmp.path()).args([
            command,
            "--set",
            "grid.nodes=[100000,100000]",
            "--out",
            "out",
        ]));
        assert_eq!(code, Some(2), "{command}: {err}");
        assert!(
            err.contains("the state needs") && err.contains("GiB are available"),
            "{err}"
        );
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{command} allocated"
        );
        assert!(!tmp.path().join("out").exists());
    }
}

#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root and a writable memory cgroup (v1 or v2)"]
fn a_state_larger_than_the_cgroup_limit_is_refused() {
    let tmp = TempDir::new().unwrap();
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let (group, limit) = match v2 {
        true => (Path::new("/sys/fs/cgroup/ferroflow-test"), "memory.max"),
        false => (
            Path::new("/sys/fs/cgroup/memory/ferroflow-test"),
            "memory.limit_in_bytes",
        ),
    };
    fs::create_dir_all(group).unwrap();
    fs::write(group.join(limit), (2u64 << 30).to_string()).unwrap();
    // Under 2 GiB, [20000, 20000] was killed by the kernel (137) without a word.
    let out = std::process::Command::new("sh")
        .current_dir(tmp.path())
        .arg("-c")
        .arg(format!(
            "echo $$ > {}/cgroup.procs && exec {} run --set 'grid.nodes=[20000,20000]' --out out",
            group.display(),
            env!("CARGO_BIN_EXE_ferroflow")
        ))
        .output()
        .unwrap();
    let _ = fs::remove_dir(group);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("2.0 GiB are available"), "{err}");
}

#[test]
fn ctrl_c_is_acknowledged_at_once_and_a_second_aborts_without_a_checkpoint() {
    let tmp = TempDir::new().unwrap();
    // A running run logs into the staging directory.
    let out = tmp.path().join("out");
    let log = out.join("partial/run.log");
    // Checks (and so the stop the first Ctrl-C asks for) a million iterations apart.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ferroflow"))
        .current_dir(tmp.path())
        .args(["run", "--set", "numerics.check_interval=1000000"])
        .args(["--set", "numerics.max_iterations=100000000", "--out", "out"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (lines, seen) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines() {
            let _ = lines.send(line.unwrap());
        }
    });
    // Iterating once the first check is logged.
    wait_for(&log, Duration::from_secs(60));
    let first_check = Duration::from_secs(60);
    let start = std::time::Instant::now();
    while !fs::read_to_string(&log).unwrap().contains("iter ") {
        assert!(start.elapsed() < first_check, "no first check");
        std::thread::sleep(Duration::from_millis(20));
    }
    let interrupt = || {
        let pid = child.id().to_string();
        assert!(std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success());
    };
    interrupt();
    let acknowledged = loop {
        let line = seen
            .recv_timeout(Duration::from_secs(5))
            .expect("no acknowledgement");
        if line.contains("Ctrl-C:") {
            break line;
        }
    };
    assert!(
        acknowledged.contains("stopping at the next residual check")
            && acknowledged.contains("press Ctrl-C again to abort"),
        "{acknowledged}"
    );
    interrupt();
    let status = wait_exit(&mut child, Duration::from_secs(10), "the second Ctrl-C");
    assert_eq!(status.code(), Some(130));
    let said: Vec<String> = seen.try_iter().collect();
    assert!(
        said.iter().any(|l| l.contains("aborted at once")),
        "{said:?}"
    );
    // As --help says: without a checkpoint or results.
    for dir in [out.clone(), out.join("partial")] {
        assert!(!dir.join("checkpoint.ffcp").exists() && !dir.join("summary.json").exists());
    }
    let help = ferroflow(tmp.path())
        .args(["run", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    assert!(
        help.contains("a second Ctrl-C aborts at once without them"),
        "{help}"
    );
}

/// The tolerance a stalled run's message says it would have reached.
fn reachable_tolerance(err: &str) -> f64 {
    let (_, rest) = err.split_once("a tolerance of ").expect(err);
    rest.split_whitespace().next().unwrap().parse().unwrap()
}

/// The largest relative residual of each row of `residuals.csv` in `dir`.
fn largest_residuals(dir: &Path) -> Vec<f64> {
    let text = fs::read_to_string(dir.join("residuals.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .skip(1)
                .map(|x| x.parse::<f64>().unwrap())
                .fold(0.0, f64::max)
        })
        .collect()
}

#[test]
fn an_implicit_f32_run_stalls_at_its_round_off_within_a_short_window() {
    // The implicit relaxation reaches the f32 floor in a few hundred iterations (301 here);
    // its stall window is 20 checks, not 100: reported at 1,301, not 5,301.
    let tmp = TempDir::new().unwrap();
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "--precision",
        "f32",
        "--set",
        "mesh.nodes=[33,33]",
        "--set",
        "numerics.method=\"implicit\"",
        "--out",
        "f32",
    ]));
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("epsilon of f32, the round-off level"), "{err}");
    let iterations = summary(&tmp.path().join("f32/partial"))["iterations"]
        .as_u64()
        .unwrap();
    assert!(iterations <= 2_000, "{iterations}");
}

#[test]
fn stalled_runs_exit_4_saying_their_level_and_the_tolerance_they_reached() {
    let tmp = TempDir::new().unwrap();
    // f32 stops falling at its round-off, long before 1e-9.
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "--precision",
        "f32",
        "--set",
        "grid.nodes=[33,33]",
        "--set",
        "numerics.tolerance=1e-9",
        "--out",
        "f32",
    ]));
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("stalled at iteration"), "{err}");
    assert!(err.contains("epsilon of f32, the round-off level"), "{err}");
    // A stalled run is not a result: everything stays in the staging directory.
    assert!(!tmp.path().join("f32/summary.json").exists());
    let out = tmp.path().join("f32/partial");
    let s = summary(&out);
    assert_eq!(
        (s["status"].as_str(), s["converged"].as_bool()),
        (Some("stalled"), Some(false))
    );
    assert!(
        s["iterations"].as_u64().unwrap() < 200_000,
        "ran to the limit"
    );
    assert!(out.join("fields.vti").exists() && out.join("checkpoint.ffcp").exists());
    // The tolerance it names is the lowest level of its history, rounded up.
    let lowest = largest_residuals(&out)
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    let tolerance = reachable_tolerance(&err);
    assert!(
        (lowest..1.1 * lowest).contains(&tolerance),
        "{tolerance} vs {lowest}"
    );

    // A CFL number so small that the residuals barely move: not round-off.
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "run",
        "--set",
        "grid.nodes=[33,33]",
        "--set",
        "numerics.cfl=1e-9",
        "--set",
        "numerics.method=\"explicit\"",
        "--out",
        "cfl",
    ]));
    assert_eq!(code, Some(4), "{err}");
    assert!(err.contains("far above its round-off"), "{err}");
    assert_eq!(
        summary(&tmp.path().join("cfl/partial"))["status"],
        "stalled"
    );
    let help = ferroflow(tmp.path())
        .args(["run", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8(help.stdout)
        .unwrap()
        .contains("4 stalled"));
}

/// Runs `ferroflow run ARGS` into `out` and asserts that it converged.
fn assert_converges(dir: &Path, args: &[&str], out: &str) {
    let (code, err) = stderr_of(ferroflow(dir).arg("run").args(args).args(["--out", out]));
    assert_eq!(code, Some(0), "{args:?}: {err}");
    assert_eq!(summary(&dir.join(out))["status"], "converged", "{args:?}");
}

#[test]
fn default_cases_converge_without_a_false_stall_or_bound() {
    let tmp = TempDir::new().unwrap();
    assert_converges(tmp.path(), &["-q"], "re100");
    assert_converges(tmp.path(), &["-q", "bdc3d"], "bdc3d");
}

#[test]
#[ignore = "heavy: the slow built-in cases to their tolerance, minutes in release"]
fn slow_default_cases_converge_without_a_false_stall_or_bound() {
    let tmp = TempDir::new().unwrap();
    // With the default (implicit) method and explicitly: Re = 1000 on 129^2 takes 387k
    // explicit iterations with plateaus of thousands.
    let explicit = ["--set", "numerics.method=\"explicit\""];
    for case in ["cavity2d-re1000", "bdc2d"] {
        let out = format!("explicit-{case}");
        assert_converges(tmp.path(), &[&["-q", case][..], &explicit].concat(), &out);
    }
    for case in [
        "cavity2d-re1000",
        "cavity3d-re100",
        "cavity3d-re1000",
        "bdc2d",
    ] {
        assert_converges(tmp.path(), &["-q", case], case);
    }
}

#[test]
fn inputs_whose_residuals_would_vanish_are_refused_before_anything_is_written() {
    let tmp = TempDir::new().unwrap();
    // Each once converged "after 1 iteration" with a fluid at rest: the first residuals
    // underflowed to zero.
    let cases: [(&[&str], &str); 4] = [
        (
            &["--set", "physics.reynolds=1e300"],
            "physics.reynolds: 1e300",
        ),
        (
            &["--set", "boundary.ymax.velocity=[1e-80,0,0]"],
            "boundary.ymax.velocity: 1e-80",
        ),
        (
            &["bdc3d", "--set", "physics.viscosity=1e-30"],
            "physics.viscosity: 1e-30",
        ),
        (&["--set", "numerics.cfl=1e-30"], "numerics.cfl: 1e-30"),
    ];
    for (args, named) in cases {
        for command in ["run", "check"] {
            let (code, err) = stderr_of(
                ferroflow(tmp.path())
                    .arg(command)
                    .args(args)
                    .args(["--out", "out"]),
            );
            assert_eq!(code, Some(2), "{command} {args:?}: {err}");
            assert!(err.contains(named), "{command} {args:?}: {err}");
            assert!(
                err.contains("round-off") || err.contains("underflow"),
                "{command} {args:?}: {err}"
            );
        }
        assert!(!tmp.path().join("out").exists(), "{args:?} wrote output");
    }
    // Smaller still, Ra itself overflows: refused with the inputs that made it.
    let (code, err) = stderr_of(ferroflow(tmp.path()).args([
        "check",
        "bdc3d",
        "--set",
        "physics.viscosity=1e-200",
    ]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("physics.viscosity = 1e-200") && err.contains("Ra = inf"),
        "{err}"
    );
}

/// Runs bdc2d with `args` and returns the exit code, standard error and temperatures of the
/// last checkpoint (none if none was written).
fn bdc2d(dir: &Path, n: usize, args: &[&str], out: &str) -> (Option<i32>, String, Vec<f64>) {
    let nodes = format!("grid.nodes=[{n},{n}]");
    // The explicit scheme, whose stability limit these runs are about.
    let explicit = "numerics.method=\"explicit\"";
    let (code, err) = stderr_of(
        ferroflow(dir)
            .args(["run", "-q", "bdc2d", "--set", &nodes, "--set", explicit])
            .args(args)
            .args(["--out", out]),
    );
    let temperatures = checkpoint::load(&dir.join(out).join("checkpoint.ffcp"))
        .map(|ck| {
            let points = Points::grid(2, [n, n, 1]);
            ck.state::<f64>(points, 4).unwrap().vars.swap_remove(3)
        })
        .unwrap_or_default();
    (code, err, temperatures)
}

/// Whether every temperature is within the walls' ±0.5 and 10 % of their difference.
fn bounded(temperatures: &[f64]) -> bool {
    !temperatures.is_empty() && temperatures.iter().all(|t| t.abs() <= 0.6)
}

#[test]
fn bdc_defaults_stay_bounded_where_the_old_cfl_made_a_checkerboard() {
    let tmp = TempDir::new().unwrap();
    // cfl = 1.2 made T a checkerboard far outside the wall temperatures within 1000
    // iterations at Ra = 1e4 on 129^2 (limit 1.11 at rest) and 2000 at Ra = 1e5 on 257^2
    // (limit 1.18); the default stays bounded three times as long.
    for (n, ra, iterations) in [(129, "1e4", "3000"), (257, "1e5", "6000")] {
        let ra = format!("physics.rayleigh={ra}");
        let limit = format!("numerics.max_iterations={iterations}");
        let out = format!("default-{n}");
        let (code, err, t) = bdc2d(tmp.path(), n, &["--set", &ra, "--set", &limit], &out);
        assert_eq!(code, Some(0), "{n}^2, {ra}: {err}");
        assert!(
            bounded(&t),
            "{n}^2, {ra}: T reaches {:?}",
            t.iter().fold(0.0, |a: f64, b| a.max(b.abs()))
        );
    }
    // The old CFL number: the run ends as unstable, naming iteration and variable, and keeps
    // no checkpoint of the non-physical state.
    let (code, err, t) = bdc2d(
        tmp.path(),
        129,
        &["--set", "physics.rayleigh=1e4", "--set", "numerics.cfl=1.2"],
        "old",
    );
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains("unstable at iteration") && err.contains("T = "),
        "{err}"
    );
    assert!(
        t.is_empty() || bounded(&t),
        "a non-physical checkpoint was kept"
    );
    // Its summary and log stay in the staging directory; no result set was committed.
    let out = tmp.path().join("old");
    assert!(!out.join("summary.json").exists());
    let partial = out.join("partial");
    assert_eq!(summary(&partial)["status"], "unstable");
    assert!(!partial.join("fields.vti").exists());
    // The start said so: 1.11 is the limit of the state at rest there.
    let log = fs::read_to_string(partial.join("run.log")).unwrap();
    assert!(log.contains("numerics.cfl = 1.2 is above 1.11"), "{log}");
}

#[test]
#[ignore = "heavy: 513^2 for 3000 iterations at Ra = 1e3 and 1e6, half a minute in release"]
fn bdc_defaults_stay_bounded_on_513_squared() {
    let tmp = TempDir::new().unwrap();
    for ra in ["1e3", "1e6"] {
        let ra = format!("physics.rayleigh={ra}");
        let args = ["--set", &ra, "--set", "numerics.max_iterations=3000"];
        let (code, err, t) = bdc2d(tmp.path(), 513, &args, "fine");
        assert_eq!(code, Some(0), "{ra}: {err}");
        assert!(bounded(&t), "{ra}");
    }
}

/// The u values of run `dir`'s centreline profile.
fn centreline_u(dir: &Path) -> Vec<f64> {
    let text = fs::read_to_string(dir.join("centerline_u.csv")).unwrap();
    text.lines()
        .skip(1)
        .map(|l| l.split(',').nth(1).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn the_implicit_method_runs_on_blocks_and_says_where_it_cannot() {
    let tmp = TempDir::new().unwrap();
    let implicit = ["--set", "numerics.method=\"implicit\""];
    let run = |out: &str, args: &[&str]| {
        let (code, err) = stderr_of(
            ferroflow(tmp.path())
                .args(["run", "-q", "--set", "mesh.nodes=[33,33]", "--out", out])
                .args(implicit)
                .args(args),
        );
        assert_eq!(code, Some(0), "{err}");
        tmp.path().join(out)
    };
    let one = run("imp", &[]);
    // The explicit scheme needs 15,751 iterations here.
    let iterations = summary(&one)["iterations"].as_u64().unwrap();
    assert!(iterations < 1000, "{iterations}");
    let resolved = fs::read_to_string(one.join("case.resolved.toml")).unwrap();
    assert!(resolved.contains("method = \"implicit\""), "{resolved}");
    // Blocks relaxed one by one and coupled through their halos: Gauss–Seidel within them,
    // Jacobi across, so a few more iterations; the same answer to the tolerance.
    let blocks = run("blocks", &["--blocks", "2,2"]);
    let more = summary(&blocks)["iterations"].as_u64().unwrap();
    assert!((iterations..iterations * 3 / 2).contains(&more), "{more}");
    for (a, b) in centreline_u(&one).iter().zip(centreline_u(&blocks)) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
    // Only Jacobi sweeps on GPUs: bad input, named, nothing written.
    let (code, err) = stderr_of(
        ferroflow(tmp.path())
            .args(["run", "-q", "--out", "refused", "--backend", "cuda"])
            .args(["--set", "numerics.relaxation=\"sgs\""])
            .args(implicit),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("numerics.relaxation = \"sgs\""), "{err}");
    assert!(!tmp.path().join("refused/summary.json").exists());
}

#[test]
fn multigrid_runs_cycles_and_says_where_it_cannot() {
    let tmp = TempDir::new().unwrap();
    let grid = ["--set", "mesh.nodes=[65,65]"];
    let run = |out: &str, args: &[&str]| {
        stderr_of(
            ferroflow(tmp.path())
                .args(["run", "-q", "--out", out])
                .args(grid)
                .args(args),
        )
    };
    let (code, err) = run("one", &[]);
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = run("mg", &["--set", "numerics.multigrid=3"]);
    assert_eq!(code, Some(0), "{err}");
    let (one, mg) = (tmp.path().join("one"), tmp.path().join("mg"));
    let log = fs::read_to_string(mg.join("run.log")).unwrap();
    assert!(
        log.contains(
            "multigrid full-multigrid start, V(1, 1), 8 on the coarsest, 3 levels [65, 65] \
             [33, 33] [17, 17] (work of a cycle: 2.94 iterations of the finest grid; of the \
             full-multigrid start: 2.39)"
        ),
        "{log}"
    );
    // Cycles instead of iterations: far fewer, the same answer to the tolerance.
    let (cycles, iterations) = (
        summary(&mg)["iterations"].as_u64().unwrap(),
        summary(&one)["iterations"].as_u64().unwrap(),
    );
    assert!(
        4 * cycles < iterations,
        "{cycles} cycles against {iterations} iterations"
    );
    for (a, b) in centreline_u(&one).iter().zip(centreline_u(&mg)) {
        assert!((a - b).abs() < 1e-5, "{a} vs {b}");
    }
    // Every level cut into the same blocks (before node 33 = 1 + 4·8, which the coarsest
    // level keeps): the cycles of one block within two, the same answer to the tolerance.
    let (code, err) = run(
        "blocks",
        &["--set", "numerics.multigrid=3", "--blocks", "2,1"],
    );
    assert_eq!(code, Some(0), "{err}");
    let blocks = tmp.path().join("blocks");
    let log = fs::read_to_string(blocks.join("run.log")).unwrap();
    assert!(log.contains("cpu, 2 blocks [2, 1], "), "{log}");
    assert!(log.contains("3 levels [65, 65] [33, 33] [17, 17]"), "{log}");
    let cut = summary(&blocks)["iterations"].as_u64().unwrap();
    assert!(
        cut.abs_diff(cycles) <= 2,
        "{cut} cycles on blocks, {cycles} on one"
    );
    for (a, b) in centreline_u(&mg).iter().zip(centreline_u(&blocks)) {
        assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    }
    // The explicit method does not run: bad input, named, nothing written.
    let args = [
        "--set",
        "numerics.multigrid=3",
        "--set",
        "numerics.method=\"explicit\"",
    ];
    let (code, err) = run("explicit", &args);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("numerics.method = \"explicit\""), "{err}");
    assert!(!tmp.path().join("explicit/summary.json").exists());
    // Zero levels is no grid at all.
    let (code, err) = run("zero", &["--set", "numerics.multigrid=0"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("numerics.multigrid"), "{err}");
}

#[test]
fn fourth_order_differences_run_on_cpu_blocks_and_are_refused_with_skew_symmetric_convection() {
    let tmp = TempDir::new().unwrap();
    let run = |out: &str, args: &[&str]| {
        stderr_of(
            ferroflow(tmp.path())
                .args(["run", "-q", "--out", out, "--set", "mesh.nodes=[33,33]"])
                .args(["--set", "numerics.differences=\"fourth-order\""])
                .args(args),
        )
    };
    let (code, err) = run("fourth", &[]);
    assert_eq!(code, Some(0), "{err}");
    // Its dissipation's default, in the resolved case.
    let resolved = fs::read_to_string(tmp.path().join("fourth/case.resolved.toml")).unwrap();
    let case = Case::from_toml(&resolved, "case.resolved.toml").unwrap();
    assert_eq!(case.numerics.c4, Some(0.01));
    // Blocks take two layers of every variable from their neighbours: the explicit step on
    // 2 × 2 blocks gives the bits of one block (the residual norms add the blocks' sums in
    // another order).
    let explicit = [
        "--set",
        "numerics.method=\"explicit\"",
        "--set",
        "numerics.max_iterations=300",
    ];
    for (out, blocks) in [("one", "1,1"), ("four", "2,2")] {
        let (code, err) = run(out, &[&explicit[..], &["--blocks", blocks]].concat());
        assert_eq!(code, Some(0), "{out}: {err}");
    }
    let (one, four) = (tmp.path().join("one"), tmp.path().join("four"));
    assert_same_files(&one, &four, ["centerline_u.csv", "centerline_v.csv"]);
    let (code, err) = run("skew", &["--set", "numerics.convection=\"skew-symmetric\""]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("numerics.differences"), "{err}");
    assert!(!tmp.path().join("skew/summary.json").exists());
}

#[test]
fn meshes_are_generated_checked_measured_and_converted() {
    let tmp = TempDir::new().unwrap();
    let ok = |args: &[&str]| stdout_of(ferroflow(tmp.path()).args(args));
    ok(&[
        "mesh",
        "generate",
        "box",
        "--cells",
        "prism",
        "--n",
        "4,3,2",
        "--jitter",
        "0.1",
        "--shuffle",
        "5",
        "--out",
        "box.su2",
    ]);
    let info_shows = |file: &str, lines: &[&str]| {
        let info = ok(&["mesh", "info", file]);
        for line in lines {
            assert!(info.contains(line), "{line} not in\n{info}");
        }
    };
    info_shows(
        "box.su2",
        &[
            "box.su2: 3D, 60 nodes, 48 cells",
            "48 prism",
            "checks: passed",
            "patch zmin: 24 faces",
            "volume 1.000000000000e0",
        ],
    );
    ok(&["mesh", "convert", "box.su2", "box.vtu", "--renumber"]);
    let vtu = fs::read(tmp.path().join("box.vtu")).unwrap();
    assert!(vtu.starts_with(b"<?xml") || vtu.starts_with(b"<VTKFile"));
    // Prisms in two layers, without jitter: the mirror plane z = 0.5 is where they meet.
    let prisms = [
        "--cells",
        "prism",
        "--n",
        "4,3,2",
        "--shuffle",
        "5",
        "--out",
        "p.su2",
    ];
    ok(&[&["mesh", "generate", "box"][..], &prisms].concat());
    let split = ["p.su2", "tets.su2", "--tetrahedra", "--mirror", "0.5,0.5"];
    ok(&[&["mesh", "convert"][..], &split].concat());
    info_shows(
        "tets.su2",
        &[
            "60 nodes, 144 cells",
            "144 tetrahedron",
            "checks: passed",
            "patch zmin: 24 faces",
        ],
    );
    // Bad input: exit code 2, the file and what is wrong named, nothing written.
    fs::write(tmp.path().join("bad.su2"), "NDIME= 3\nNELEM= 1\n10 0 1 2\n").unwrap();
    for (args, why) in [
        (&["mesh", "info", "missing.msh"][..], "missing.msh"),
        (&["mesh", "info", "bad.su2"][..], "bad.su2, line 3"),
        (
            &["mesh", "convert", "box.su2", "box.obj"][..],
            "cannot write meshes of type \"obj\"",
        ),
        (
            &[
                "mesh", "generate", "box", "--n", "2,2,2", "--jitter", "0.4", "--out", "j.vtu",
            ][..],
            "--jitter",
        ),
        (
            &[
                "mesh",
                "convert",
                "box.su2",
                "t1.su2",
                "--tetrahedra",
                "--mirror",
                "0.5",
            ][..],
            "--mirror [0.5]: two finite numbers",
        ),
        (
            &["mesh", "convert", "box.vtu", "t1.su2", "--tetrahedra"][..],
            "cannot read meshes of type \"vtu\"",
        ),
    ] {
        let (code, err) = stderr_of(ferroflow(tmp.path()).args(args));
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    assert!(!tmp.path().join("box.obj").exists() && !tmp.path().join("j.vtu").exists());
    assert!(!tmp.path().join("t1.su2").exists());
}

/// Column `name` of every row of the CSV table `text`.
fn csv_column(text: &str, name: &str) -> Vec<String> {
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let at = header.iter().position(|h| *h == name).unwrap();
    lines
        .map(|l| l.split(',').nth(at).unwrap().to_string())
        .collect()
}

#[test]
fn ethier_steinman_is_verified_and_tabulated_in_either_precision() {
    let tmp = TempDir::new().unwrap();
    // The study on 4³ and 8³ into `out`, in f64 unless `extra` says otherwise: its output and
    // its two tables.
    let study = |out: &str, extra: &[&str]| {
        let cmd = &mut ferroflow(tmp.path());
        let args = ["verify", "ethier-steinman", "--cells", "4,8", "--out", out];
        let text = stdout_of(cmd.args(args).args(extra));
        assert!(text.contains("PASS: orders on the finest pair"), "{text}");
        let read = |name: &str| fs::read_to_string(tmp.path().join(out).join(name)).unwrap();
        [
            text,
            read("ethier-steinman.csv"),
            read("ethier-steinman-cg.csv"),
        ]
    };
    let [text, double, _] = study("es", &[]);
    assert!(!text.contains("working precision"), "{text}");
    assert_eq!(double.lines().count(), 3, "{double}");
    let [text, single, sweep] = study("es32", &["--precision", "f32"]);
    assert!(
        text.contains("working precision f32: CG tolerance 1e-5"),
        "{text}"
    );
    // 4³ takes steps of dt_max, 0.01, which f32 rounds down: 11 steps to t = 0.1, not 10.
    assert_eq!(csv_column(&single, "steps")[0], "11", "{single}");
    assert_eq!(csv_column(&double, "steps")[0], "10", "{double}");
    // f32's own errors, not f64's, on 8³.
    let error = |csv: &str| csv_column(csv, "velocity_l2")[1].parse::<f64>().unwrap();
    assert_ne!(error(&single), error(&double));
    // f32's CG tolerances: each grid at 1e-2, 1e-3, 1e-4, then the study's 1e-5.
    let tolerances: Vec<f64> = csv_column(&sweep, "cg_tolerance")
        .iter()
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(tolerances, [1e-2, 1e-3, 1e-4, 1e-5, 1e-2, 1e-3, 1e-4, 1e-5]);
    for (args, why) in [
        (
            &["--cells", "8,4"][..],
            "--cells [8, 4]: at least two grids, ascending",
        ),
        (
            &["--precision", "f16"][..],
            "invalid value 'f16' for '--precision <PRECISION>'",
        ),
        (
            &["--precision", "f32", "--cg-tolerance", "1e-10"][..],
            "--cg-tolerance 1e-10: below what --precision f32 can reach; at least 3.8e-6",
        ),
    ] {
        let cmd = &mut ferroflow(tmp.path());
        let (code, err) = stderr_of(
            cmd.args(["verify", "ethier-steinman", "--out", "bad"])
                .args(args),
        );
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
    assert!(!tmp.path().join("bad").exists());
}

#[test]
fn sod_is_verified_and_tabulated() {
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args(["verify", "sod", "--cells", "100", "--out", "sod"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("PASS: every L1 density error within its bound"),
        "{text}"
    );
    let csv = fs::read_to_string(tmp.path().join("sod/sod.csv")).unwrap();
    assert_eq!(csv.lines().count(), 4, "{csv}");
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["verify", "sod", "--cells", "7"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--cells [7]: even numbers of cells"), "{err}");
}

#[test]
fn the_vortex_passes_on_fine_meshes_and_fails_on_coarse_ones() {
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args(["verify", "vortex", "--cells", "20,40", "--out", "v"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("PASS: unlimited orders on the finest pair"),
        "{text}"
    );
    let csv = fs::read_to_string(tmp.path().join("v/vortex.csv")).unwrap();
    assert_eq!(csv.lines().count(), 13, "{csv}");
    // 8 and 16 cells per side do not resolve the vortex: the orders fall short.
    let (code, err) =
        stderr_of(ferroflow(tmp.path()).args(["verify", "vortex", "--cells", "8,16"]));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("FAIL: hex: order"), "{err}");
}

#[test]
fn bench_times_the_finite_elements_in_each_precision() {
    let tmp = TempDir::new().unwrap();
    let quick = ["--repeats", "1", "--seconds", "0.01", "--threads", "1"];
    // 4³ cells: 1,208 directed edges in either precision.
    for row in fem_bench_rows(tmp.path(), &quick) {
        assert!(row.contains(" | 125 | 1208 | "), "{row}");
    }
    let cmd = &mut ferroflow(tmp.path());
    let (code, err) = stderr_of(cmd.args(["bench", "--fem", "4", "--precision", "f16"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("invalid value 'f16' for '--precision"),
        "{err}"
    );
}

#[test]
fn bench_times_the_finite_volume_loops() {
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args(["bench", "--fv", "8", "--repeats", "1", "--threads", "1"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 8³ hexahedra and 4³ × 6 tetrahedra, three loops each.
    assert!(
        text.contains("| hex | 512 | 1728 | faces: fluxes |"),
        "{text}"
    );
    assert!(text.contains("| tet | 384 | "), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("| hex") || l.starts_with("| tet"))
            .count(),
        6
    );
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["bench", "--fv", "1"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--fv 1: the CPU backend and at least 2 cells"),
        "{err}"
    );
}

#[test]
fn bench_runs_the_finite_volume_ablation() {
    let tmp = TempDir::new().unwrap();
    let out = ferroflow(tmp.path())
        .args([
            "bench",
            "--fv-ablation",
            "8",
            "--repeats",
            "1",
            "--threads",
            "1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 8³ hexahedra and (8 / 6^⅓ ≈ 4)³ × 6 tetrahedra, every step on each.
    assert!(
        text.contains("tetrahedra, random numbering: 384 cells"),
        "{text}"
    );
    assert!(text.contains("hexahedra, ordered: 512 cells"), "{text}");
    let rows = |label: &str| text.lines().filter(|l| l.starts_with(label)).count();
    assert_eq!(
        rows("| baseline: scalar, SoA, stored fluxes | "),
        2,
        "{text}"
    );
    assert_eq!(rows("| + prefetch 64 faces ahead | "), 2, "{text}");
    assert_eq!(
        rows("| the reference loops (Solver::residual) without renumbering | "),
        2,
        "{text}"
    );
    // Twelve steps and the header, the integrator's iteration timed beside the residual with
    // its time steps and its cell loops outside the residuals.
    assert_eq!(rows("| "), 2 * 13, "{text}");
    let header = "| step | face ms | cell ms | residual ms | steps ms | iteration ms | updates ms \
                  | iteration / residual |";
    assert_eq!(rows(header), 2, "{text}");
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["bench", "--fv-ablation", "3"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--fv-ablation 3: the CPU backend"), "{err}");
}

#[test]
fn bench_of_the_finite_volumes_on_a_gpu_refuses_a_tiny_mesh() {
    let tmp = TempDir::new().unwrap();
    let (code, err) = stderr_of(ferroflow(tmp.path()).args(["bench", "--fv-cuda", "3"]));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("--fv-cuda 3: at least 4 cells per axis"),
        "{err}"
    );
}
