//! `ferroflow run` and `check` of finite-element cases: the files of a run on a tiny
//! tetrahedral cube, the bitwise restart, divergence, Ctrl-C, and input errors that name the
//! key, the value or the file; on a GPU (ignored without one), the CPU's files bit for bit,
//! a divergence at the CPU's step, and `bench --fem` in each precision.
use std::fs;
use std::path::Path;
use tempfile::TempDir;

mod common;
use common::{
    assert_diverges, assert_files_and_listed, assert_same_files, fem_bench_rows, ferroflow,
    interrupt_and_continue, stderr_of, summary,
};

/// `run cube-fe-re100` on 4³ hexahedra (125 nodes) with `extra` arguments, quietly.
fn tiny_cube<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["run", "cube-fe-re100", "-q", "--set", "mesh.cells=[4,4,4]"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_tiny_cube_writes_its_results_and_a_restart_ends_bitwise_as_one_run() {
    let tmp = TempDir::new().unwrap();
    let (whole, halves) = (tmp.path().join("whole"), tmp.path().join("halves"));
    let snapshots = ["--set", "output.field_interval=4"];
    let steps = |n: &'static str| ["--set", n];
    let run = |extra: &[&str]| {
        ferroflow(tmp.path())
            .args(tiny_cube(extra))
            .assert()
            .success()
    };
    run(&[
        &snapshots[..],
        &steps("numerics.max_steps=12"),
        &["--out", "whole"],
    ]
    .concat());
    let s = summary(&whole);
    assert_eq!(s["case"], "cube-fe-re100");
    assert_eq!(s["solver"], "finite-element");
    assert_eq!(
        (s["steps"].as_u64(), s["status"].as_str()),
        (Some(12), Some("max-steps"))
    );
    assert_eq!(s["mesh"]["nodes"], 125);
    assert_eq!(s["mesh"]["tetrahedra"], 6 * 64);
    assert!((s["time"].as_f64().unwrap() - 0.12).abs() < 1e-12, "{s}");
    assert!(s["cg"]["iterations_per_step"].as_f64().unwrap() > 1.0);
    let continuity = s["residuals"]["continuity"].as_f64().unwrap();
    assert!(continuity > 0.0 && continuity < s["residuals"]["divergence"].as_f64().unwrap());
    let files = [
        "fields.vtu",
        "fields_00000004.vtu",
        "checkpoint.ffcp",
        "run.log",
    ];
    let listed = ["fields_00000004.vtu", "fields_00000008.vtu", "fields.vtu"];
    assert_files_and_listed(&whole, &files, &listed);
    let csv = fs::read_to_string(whole.join("residuals.csv")).unwrap();
    assert!(csv.starts_with("iteration,time,dt,velocity_rate,pressure_rate,divergence"));
    assert_eq!(csv.lines().count(), 13);
    // The XML header before the binary arrays.
    let vtu = String::from_utf8_lossy(&fs::read(whole.join("fields.vtu")).unwrap()).into_owned();
    assert!(vtu.contains("Name=\"velocity\"") && vtu.contains("Name=\"pressure\""));

    // Six steps, then six more from the checkpoint: the same bits as twelve at once.
    run(&[
        &snapshots[..],
        &steps("numerics.max_steps=6"),
        &["--out", "halves"],
    ]
    .concat());
    assert_eq!(summary(&halves)["steps"], 6);
    ferroflow(tmp.path())
        .args([
            "run",
            "-q",
            "--restart",
            "halves",
            "--set",
            "numerics.max_steps=12",
        ])
        .assert()
        .success();
    assert_same_files(
        &whole,
        &halves,
        [
            "fields.vtu",
            "fields_00000004.vtu",
            "fields_00000008.vtu",
            "fields.pvd",
        ],
    );
    assert_same_files(&whole, &halves, ["residuals.csv"]);
}

#[test]
fn a_diverging_run_exits_3_and_keeps_the_earlier_results() {
    let tmp = TempDir::new().unwrap();
    let out = tmp.path().join("out");
    ferroflow(tmp.path())
        .args(tiny_cube(&[
            "--set",
            "numerics.max_steps=2",
            "--out",
            "out",
        ]))
        .assert()
        .success();
    // Steps far above the stable one.
    let unstable = [
        "--set",
        "numerics.cfl=40",
        "--set",
        "numerics.dt_max=10",
        "--out",
        "out",
    ];
    let cmd = &mut ferroflow(tmp.path());
    assert_diverges(cmd.args(tiny_cube(&unstable)), &out, "diverged at step");
}

#[test]
fn ctrl_c_writes_a_checkpoint_and_exits_130() {
    let tmp = TempDir::new().unwrap();
    let args = [
        "--set",
        "mesh.cells=[6,6,6]",
        "--set",
        "numerics.steady_tolerance=1e-14",
        "--set",
        "numerics.end_time=1000",
    ];
    let limit = "numerics.max_steps";
    interrupt_and_continue(tmp.path(), "cube-fe-re100", &args, limit);
}

/// Writes a finite-element case file `name` in `dir` with the lines `body` after `[case]`.
fn case_file(dir: &Path, name: &str, body: &str) {
    let text = format!("[case]\nname = \"mine\"\nsolver = \"finite-element\"\n{body}");
    fs::write(dir.join(name), text).unwrap();
}

#[test]
fn bad_keys_values_and_mesh_files_exit_2_naming_them() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    case_file(dir, "key.toml", "[mesh]\ncels = [4, 4, 4]\n");
    case_file(dir, "value.toml", "[physics]\nviscosity = -0.5\n");
    case_file(dir, "patch.toml", "[boundary.lid]\nkind = \"wall\"\n");
    case_file(
        dir,
        "missing.toml",
        "[mesh]\nkind = \"gmsh\"\nfile = \"nowhere.msh\"\n",
    );
    let expect = [
        ("key.toml", vec!["key.toml:5", "mesh.cels", "unknown field"]),
        (
            "value.toml",
            vec!["value.toml:5", "physics.viscosity", "-0.5"],
        ),
        (
            "patch.toml",
            vec!["boundary.lid", "not a patch of the mesh", "ymax"],
        ),
        ("missing.toml", vec!["mesh.file", "nowhere.msh"]),
    ];
    for (file, words) in expect {
        for command in ["run", "check"] {
            let (code, err) = stderr_of(ferroflow(dir).args([command, file]));
            assert_eq!(code, Some(2), "{command} {file}: {err}");
            for w in &words {
                assert!(err.contains(w), "{command} {file}: {err} lacks {w}");
            }
        }
    }
    let (code, err) = stderr_of(ferroflow(dir).args(tiny_cube(&["--set", "mesh.cell=3"])));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("--set mesh.cell=3") && err.contains("mesh.cell"),
        "{err}"
    );
    // f32 with the case's CG tolerance, 1e-10: below its round-off.
    let (code, err) = stderr_of(ferroflow(dir).args(tiny_cube(&["--precision", "f32"])));
    assert_eq!(code, Some(2));
    assert!(
        err.contains("numerics.cg_tolerance") && err.contains("3.8e-6"),
        "{err}"
    );
    // Nothing was written for any of them.
    assert!(!dir.join("ferroflow-out").exists());
    let (code, out) = {
        let o = ferroflow(dir)
            .args(["check", "cube-fe-re100"])
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    assert_eq!(code, Some(0));
    assert!(
        out.contains("4913 nodes") && out.contains("ok: nothing"),
        "{out}"
    );
}

#[test]
fn finite_element_cases_are_listed_and_shown() {
    let tmp = TempDir::new().unwrap();
    let list = ferroflow(tmp.path()).arg("cases").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    for name in [
        "cube-fe-re100",
        "cube-fe-re1000",
        "ethier-steinman-fe",
        "dfg-3d-1z",
    ] {
        assert!(list.contains(name), "{list}");
        let shown = ferroflow(tmp.path())
            .args(["cases", "show", name])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
        assert!(shown.contains("solver = \"finite-element\""), "{shown}");
        // What `show` prints is a case file that runs as the built-in one.
        fs::write(tmp.path().join("shown.toml"), &shown).unwrap();
        let check = ferroflow(tmp.path())
            .args(["cases", "show", "shown.toml"])
            .output();
        assert!(check.unwrap().status.success());
    }
}

#[test]
fn a_channel_with_inflow_and_outflow_settles_and_reports_wall_forces() {
    let tmp = TempDir::new().unwrap();
    let body = "[mesh]\ncells = [6, 3, 3]\nsize = [2.0, 1.0, 1.0]\n[physics]\nviscosity = 0.1\n\
                [boundary.xmin]\nkind = \"inflow\"\nvelocity = [1.0, 0.0, 0.0]\n\
                profile = \"parabolic\"\n[boundary.xmax]\nkind = \"outflow\"\n[numerics]\n\
                local_time_steps = true\nend_time = 50.0\nsteady_tolerance = 1e-6\n[output]\n\
                forces = [\"ymin\", \"ymax\"]\nreference_velocity = 2.0\nreference_area = 0.5\n";
    case_file(tmp.path(), "channel.toml", body);
    ferroflow(tmp.path())
        .args(["run", "channel.toml", "-q", "--out", "out"])
        .assert()
        .success();
    let s = summary(&tmp.path().join("out"));
    assert_eq!(s["status"], "steady", "{s}");
    let force = |f: usize, c: &str, a: usize| s["forces"][f][c][a].as_f64().unwrap();
    for f in [0, 1] {
        // The flow drags the walls downstream; 2F / (ρ U² A) = F with U = 2, A = 0.5.
        assert!(force(f, "force", 0) > 0.0, "{s}");
        assert_eq!(force(f, "coefficients", 0), force(f, "force", 0));
    }
    // The pressure pushes the walls apart.
    assert!(
        force(0, "force", 1) < 0.0 && force(1, "force", 1) > 0.0,
        "{s}"
    );
    // Not a lid cube: no centreline profiles.
    assert!(!tmp.path().join("out/centerline_u.csv").exists());
    assert!(s.get("reference").is_none(), "{s}");
}

/// The rows of a two-column profile file after its header `header`.
fn profile(path: &Path, header: &str) -> Vec<(f64, f64)> {
    let text = fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(header));
    (lines.map(|l| l.split_once(',').unwrap()))
        .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
        .collect()
}

#[test]
fn a_lid_cube_writes_its_centrelines_and_their_deviation_from_the_reference() {
    let tmp = TempDir::new().unwrap();
    let run = |out: &str, extra: &[&str]| {
        let steps = ["--set", "numerics.max_steps=20", "--out", out];
        ferroflow(tmp.path())
            .args(tiny_cube(&[&steps[..], extra].concat()))
            .assert()
            .success();
        tmp.path().join(out)
    };
    // Re = 1000: Albensoeder & Kuhlmann's profiles.
    let dir = run("re1000", &["--set", "physics.viscosity=1e-3"]);
    let u = profile(&dir.join("centerline_u.csv"), "y,u");
    let v = profile(&dir.join("centerline_v.csv"), "x,v");
    let stations: Vec<f64> = (0..=4).map(|k| k as f64 / 4.0).collect();
    assert_eq!(u.iter().map(|p| p.0).collect::<Vec<_>>(), stations);
    assert_eq!(v.iter().map(|p| p.0).collect::<Vec<_>>(), stations);
    // The lid's own node above the centre moves with it; the walls' nodes are at rest.
    assert_eq!((u[0].1, u[4].1, v[0].1, v[4].1), (0.0, 1.0, 0.0, 0.0));
    for (_, value) in u[1..4].iter().chain(&v[1..4]) {
        assert!(*value != 0.0 && value.abs() < 1.0, "{u:?} {v:?}");
    }
    assert!(dir.join("centerlines.png").is_file());
    let s = summary(&dir);
    let reference = s["reference"].as_array().unwrap();
    assert_eq!(reference.len(), 2, "{s}");
    for (d, profile) in reference.iter().zip(["u(y) at x = 0.5", "v(x) at y = 0.5"]) {
        assert_eq!(d["profile"], profile);
        assert_eq!(d["source"], "Albensoeder & Kuhlmann (2005)");
        // Twenty steps from rest are far from the steady profiles.
        let deviation = d["max_abs_deviation"].as_f64().unwrap();
        assert!(deviation > 0.05 && deviation < 1.5, "{d}");
    }
    // Re = 100: the profiles, but no published ones to compare with.
    let dir = run("re100", &[]);
    assert_eq!(profile(&dir.join("centerline_u.csv"), "y,u").len(), 5);
    assert!(summary(&dir).get("reference").is_none());
}

#[test]
fn the_ethier_steinman_case_reports_its_errors_as_the_study_does() {
    // `ferroflow verify ethier-steinman` on 4³: velocity 1.844e-1, pressure 5.121 (its steps
    // all of the starting estimate's size, these of each step's own: close, not equal).
    let tmp = TempDir::new().unwrap();
    let args = [
        "run",
        "ethier-steinman-fe",
        "-q",
        "--set",
        "mesh.cells=[4,4,4]",
    ];
    ferroflow(tmp.path())
        .args(args)
        .args(["--out", "es"])
        .assert()
        .success();
    let s = summary(&tmp.path().join("es"));
    assert_eq!(s["status"], "end-time");
    assert!((s["time"].as_f64().unwrap() - 0.1).abs() < 1e-12, "{s}");
    let [u, p] = [0, 1].map(|k| s["exact_errors"][k].as_f64().unwrap());
    assert!((u / 1.844e-1 - 1.0).abs() < 0.05, "{s}");
    assert!((p / 5.121 - 1.0).abs() < 0.05, "{s}");
}

/// `tiny_cube(extra)` run in `dir`, successfully.
fn run_tiny_cube(dir: &Path, extra: &[&str]) {
    ferroflow(dir).args(tiny_cube(extra)).assert().success();
}

/// Snapshots every 4 steps.
const SNAPSHOTS: [&str; 2] = ["--set", "output.field_interval=4"];

/// What two runs of 12 steps with [`SNAPSHOTS`] that should agree write alike.
const SAME_FILES: [&str; 5] = [
    "fields.vtu",
    "fields_00000004.vtu",
    "fields_00000008.vtu",
    "fields.pvd",
    "residuals.csv",
];

/// `--precision f32` with a CG tolerance f32 reaches.
const F32: [&str; 4] = ["--precision", "f32", "--set", "numerics.cg_tolerance=1e-5"];

#[test]
fn an_f32_run_restarts_bitwise_in_f32_only_and_its_errors_are_the_f64_ones() {
    let tmp = TempDir::new().unwrap();
    let run = |extra: &[&str]| run_tiny_cube(tmp.path(), extra);
    let snapshots = SNAPSHOTS;
    let steps = |n: &'static str| ["--set", n];
    let whole = ["--out", "whole"];
    run(&[
        &F32[..],
        &snapshots,
        &steps("numerics.max_steps=12"),
        &whole,
    ]
    .concat());
    let s = summary(&tmp.path().join("whole"));
    assert_eq!(
        (s["precision"].as_str(), s["steps"].as_u64()),
        (Some("f32"), Some(12))
    );
    // Six steps, then six more from the f32 checkpoint: the same bits.
    let halves = ["--out", "halves"];
    run(&[
        &F32[..],
        &snapshots,
        &steps("numerics.max_steps=6"),
        &halves,
    ]
    .concat());
    let restart = |extra: &[&str]| {
        let mut args = vec!["run", "-q", "--restart", "halves"];
        args.extend_from_slice(extra);
        args.extend(steps("numerics.max_steps=12"));
        stderr_of(ferroflow(tmp.path()).args(args))
    };
    // The checkpoint holds f32: continuing in f64 is refused, nothing written.
    let listing = || fs::read_dir(tmp.path().join("halves")).unwrap().count();
    let before = listing();
    let (code, err) = restart(&["--precision", "f64"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("backend.precision") && err.contains("holds an f32 state"),
        "{err}"
    );
    assert_eq!(listing(), before);
    let (code, err) = restart(&[]);
    assert_eq!(code, Some(0), "{err}");
    let files = SAME_FILES;
    assert_same_files(&tmp.path().join("whole"), &tmp.path().join("halves"), files);
    // The Ethier–Steinman case on 8³: f32's errors are f64's (the discretisation's, 0.041 and
    // 1.6, dwarf f32's round-off), as the study's levels are. Not on 4³, whose steps are
    // dt_max's: 0.01 rounds down in f32, and 0.1 takes 11 steps instead of 10.
    let errors = |extra: &[&str], out: &str| {
        ferroflow(tmp.path())
            .args([
                "run",
                "ethier-steinman-fe",
                "-q",
                "--set",
                "mesh.cells=[8,8,8]",
            ])
            .args(["--set", "numerics.cg_tolerance=1e-5", "--out", out])
            .args(extra)
            .assert()
            .success();
        let s = summary(&tmp.path().join(out));
        [0, 1].map(|k| s["exact_errors"][k].as_f64().unwrap())
    };
    let single = errors(&F32[..2], "es32");
    let double = errors(&[], "es64");
    for (a, b) in single.iter().zip(&double) {
        assert!((a - b).abs() < 1e-4 * b, "{single:?} against {double:?}");
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn a_tiny_cube_on_the_gpu_writes_the_cpu_files_and_restarts_bitwise() {
    let tmp = TempDir::new().unwrap();
    let run = |extra: &[&str]| run_tiny_cube(tmp.path(), extra);
    let snapshots = SNAPSHOTS;
    let steps = |n: &'static str| ["--set", n];
    for backend in ["cpu", "cuda"] {
        let out = ["--backend", backend, "--out", backend];
        run(&[&snapshots[..], &steps("numerics.max_steps=12"), &out].concat());
        assert_eq!(summary(&tmp.path().join(backend))["backend"], backend);
    }
    // Six steps on the GPU, then six more from its checkpoint.
    let halves = ["--backend", "cuda", "--out", "halves"];
    run(&[&snapshots[..], &steps("numerics.max_steps=6"), &halves].concat());
    ferroflow(tmp.path())
        .args(["run", "-q", "--restart", "halves", "--backend", "cuda"])
        .args(steps("numerics.max_steps=12"))
        .assert()
        .success();
    let files = SAME_FILES;
    let (cpu, gpu) = (tmp.path().join("cpu"), tmp.path().join("cuda"));
    assert_same_files(&cpu, &gpu, files);
    assert_same_files(&cpu, &tmp.path().join("halves"), files);
    let continuity = summary(&gpu)["residuals"]["continuity"].as_f64().unwrap();
    assert!(continuity > 0.0, "{continuity}");
    // Local time steps: each node's own Δt (not all at dt_max: above the 4³ cube's 0.01),
    // the same files on both.
    let local = [
        "--set",
        "numerics.local_time_steps=true",
        "--set",
        "numerics.dt_max=0.05",
    ];
    for backend in ["cpu", "cuda"] {
        let dir = format!("local-{backend}");
        let out = ["--backend", backend, "--out", &dir];
        run(&[
            &snapshots[..],
            &local,
            &steps("numerics.max_steps=12"),
            &out,
        ]
        .concat());
    }
    let local = |b: &str| tmp.path().join(format!("local-{b}"));
    assert_same_files(&local("cpu"), &local("cuda"), files);
    // In f32: the same files too.
    for backend in ["cpu", "cuda"] {
        let dir = format!("f32-{backend}");
        let out = ["--backend", backend, "--out", &dir];
        run(&[&F32[..], &snapshots, &steps("numerics.max_steps=12"), &out].concat());
    }
    let single = |b: &str| tmp.path().join(format!("f32-{b}"));
    assert_same_files(&single("cpu"), &single("cuda"), files);
    // Not the equal steps' run.
    let rows = fs::read_to_string(local("cuda").join("residuals.csv")).unwrap();
    assert_ne!(rows, fs::read_to_string(gpu.join("residuals.csv")).unwrap());
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn a_diverging_run_on_the_gpu_stops_where_the_cpu_does() {
    // The GPU's state stays there: the run finds the divergence from the largest velocity
    // alone, then reads the state for the message.
    let tmp = TempDir::new().unwrap();
    let mut rows = Vec::new();
    for backend in ["cpu", "cuda"] {
        let out = ["--backend", backend, "--out", backend];
        let first = [&out[..], &["--set", "numerics.max_steps=2"]].concat();
        ferroflow(tmp.path())
            .args(tiny_cube(&first))
            .assert()
            .success();
        let unstable = ["--set", "numerics.cfl=40", "--set", "numerics.dt_max=10"];
        let cmd = &mut ferroflow(tmp.path());
        let dir = tmp.path().join(backend);
        let args = tiny_cube(&[&out[..], &unstable].concat());
        assert_diverges(cmd.args(args), &dir, "diverged at step");
        rows.push(fs::read_to_string(dir.join("partial/residuals.csv")).unwrap());
    }
    assert_eq!(rows[0], rows[1]);
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn bench_times_the_finite_elements_on_the_gpu_in_each_precision() {
    let tmp = TempDir::new().unwrap();
    for row in fem_bench_rows(tmp.path(), &["--backend", "cuda", "--no-tune"]) {
        // The product's and cuSPARSE's µs, both measured.
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        for column in [6, 7] {
            let micros: f64 = cells[column].parse().expect(&row);
            assert!(micros > 0.0, "{row}");
        }
    }
}
