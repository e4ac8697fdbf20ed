//! `ferroflow run` under Open MPI's `mpirun` (feature `mpi`): the processes of a job write the
//! fields of one process bit for bit into one output directory (the final fields as one piece
//! per block with their `fields.pvti`, which VTK reads as the one data set of one process),
//! report a failure once with one exit code, and all stop at a signal that reaches only one of
//! them. They need mpirun, the feature and VTK for Python (`FERROFLOW_VTK_PYTHON`), so
//! `cargo test` ignores them; run with
//! `cargo test -p ferroflow --features mpi --test mpi -- --ignored` (CI does), they fail where
//! one is missing.

#[cfg(feature = "mpi")]
mod common;

#[cfg(not(feature = "mpi"))]
#[test]
#[ignore = "needs mpirun and --features mpi: run with --ignored, see README.md"]
fn mpi_tests_are_built() {
    panic!("built without --features mpi: no MPI test ran");
}

#[cfg(feature = "mpi")]
mod under_mpirun {
    use super::common::{assert_same_files, summary, wait_exit, wait_for};
    use assert_cmd::cargo::cargo_bin_cmd;
    use std::fs;
    use std::path::Path;
    use std::process::{Command, Output, Stdio};
    use std::time::{Duration, Instant};
    use tempfile::TempDir;

    /// `mpirun -np NP ferroflow ARGS` in `dir`; fails where there is no mpirun.
    fn mpirun(dir: &Path, np: usize, args: &[&str]) -> Command {
        let found = Command::new("mpirun")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(
            found,
            "mpirun cannot be run (Debian: apt-get install openmpi-bin)"
        );
        let mut cmd = Command::new("mpirun");
        // As root too (containers), more processes than cores, shared memory only.
        cmd.current_dir(dir)
            .args(["--allow-run-as-root", "--oversubscribe"])
            .args(["--mca", "btl", "self,vader", "--mca", "pml", "ob1"])
            .args(["--mca", "btl_vader_single_copy_mechanism", "none"])
            .args(["-np", &np.to_string(), env!("CARGO_BIN_EXE_ferroflow")])
            .args(args);
        cmd
    }

    /// Reads the fields of run `dir` (`fields.pvti` and its pieces) with VTK itself
    /// (tests/vtk_readback.py, with FERROFLOW_VTK_PYTHON) and checks every array equals, value
    /// for value, the one-process run's in `one`.
    fn read_back_as(one: &Path, dir: &Path, precision: &str) {
        let python = std::env::var("FERROFLOW_VTK_PYTHON")
            .expect("FERROFLOW_VTK_PYTHON must name a python with vtk (see README.md)");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vtk_readback.py");
        let check = Command::new(python)
            .arg(script)
            .arg(dir)
            .arg(precision)
            .arg(one)
            .output()
            .unwrap();
        assert!(
            check.status.success(),
            "{}{}",
            String::from_utf8_lossy(&check.stdout),
            String::from_utf8_lossy(&check.stderr)
        );
    }

    fn stderr(out: &Output) -> String {
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn processes_write_the_fields_of_one_process_bit_for_bit() {
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
            "--set",
            "output.checkpoint_interval=300",
            // Blocks of the explicit scheme (the implicit method's: the test below).
            "--set",
            "numerics.method=\"explicit\"",
        ];
        // f64 in two processes (one block each), f32 in three with two blocks each; each
        // process's blocks take turns on its share of the cores.
        let shared = |np: usize| {
            let threads = (std::thread::available_parallelism().unwrap().get() / np).max(1);
            format!(
                "{threads} thread{} shared",
                if threads == 1 { "" } else { "s" }
            )
        };
        let runs: [(usize, &str, &[&str], String); 2] = [
            (
                2,
                "f64",
                &[],
                format!("cpu, 2 blocks [1, 2], {}, over 2 MPI processes", shared(2)),
            ),
            (
                3,
                "f32",
                &["--blocks", "3,2"],
                format!("cpu, 6 blocks [3, 2], {}, over 3 MPI processes", shared(3)),
            ),
        ];
        for (np, precision, blocks, line) in runs {
            let one = format!("{precision}-one");
            cargo_bin_cmd!("ferroflow")
                .current_dir(tmp.path())
                .args(common)
                .args(["--precision", precision, "--out", &one])
                .assert()
                .success();
            let args = [
                &common[..],
                &["--precision", precision, "--out", precision],
                blocks,
            ];
            let out = mpirun(tmp.path(), np, &args.concat()).output().unwrap();
            assert!(out.status.success(), "{}", stderr(&out));
            let dir = tmp.path().join(precision);
            let log = fs::read_to_string(dir.join("run.log")).unwrap();
            assert!(log.contains(&format!("backend: {line}")), "{log}");
            assert_eq!(summary(&dir)["iterations"], 1000);
            // The final fields as pieces, one per block, written where the block is.
            assert!(!dir.join("fields.vti").exists());
            let pieces = fs::read_dir(dir.join("fields")).unwrap().count();
            assert_eq!(pieces, if np == 2 { 2 } else { 6 });
            // So is the snapshot: its index in fields.pvd, its pieces beside it.
            assert!(!dir.join("fields_00000401.vti").exists());
            assert!(dir.join("fields_00000401.pvti").exists());
            let pieces = fs::read_dir(dir.join("fields_00000401")).unwrap().count();
            assert_eq!(pieces, if np == 2 { 2 } else { 6 });
            read_back_as(&tmp.path().join(&one), &dir, precision);
            assert_same_files(&tmp.path().join(&one), &dir, ["centerline_v.csv"]);
            if np == 2 {
                // A result set replaces the other kind whole: pieces by one file, and back.
                cargo_bin_cmd!("ferroflow")
                    .current_dir(tmp.path())
                    .args(common)
                    .args(["--precision", precision, "--out", precision])
                    .assert()
                    .success();
                assert!(dir.join("fields.vti").exists());
                assert!(!dir.join("fields.pvti").exists() && !dir.join("fields").exists());
                assert!(dir.join("fields_00000401.vti").exists());
                assert!(!dir.join("fields_00000401.pvti").exists());
                assert!(!dir.join("fields_00000401").exists());
                let out = mpirun(tmp.path(), np, &args.concat()).output().unwrap();
                assert!(out.status.success(), "{}", stderr(&out));
                assert!(!dir.join("fields.vti").exists());
                assert_eq!(fs::read_dir(dir.join("fields")).unwrap().count(), 2);
                assert!(!dir.join("fields_00000401.vti").exists());
                assert_eq!(
                    fs::read_dir(dir.join("fields_00000401")).unwrap().count(),
                    2
                );
            }
        }
    }

    /// The most memory each process holds, as run.log reports it, in MiB.
    fn peaks(dir: &Path) -> Vec<f64> {
        let log = fs::read_to_string(dir.join("run.log")).unwrap();
        let line = log.lines().find(|l| l.starts_with("peak resident memory"));
        let line = line.unwrap_or_else(|| panic!("no peak memory in {log}"));
        let (_, mib) = line.split_once(": ").unwrap();
        let mib = mib.trim_end_matches(" MiB").split(", ");
        mib.map(|m| m.parse().unwrap()).collect()
    }

    /// Each of 4 processes holds its share of the grid, not the whole: at most 0.35 of the
    /// one-process run's peak plus 50 MiB (the state is 1/4; the rest is code, MPI and the
    /// profiles), with the results and a checkpoint written.
    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn each_process_holds_about_its_share_of_the_memory() {
        let tmp = TempDir::new().unwrap();
        let args = [
            "run",
            "-q",
            "cavity3d-re100",
            "--set",
            "mesh.nodes=[129,129,129]",
            "--set",
            "numerics.max_iterations=10",
            "--set",
            "numerics.method=\"explicit\"",
        ];
        cargo_bin_cmd!("ferroflow")
            .current_dir(tmp.path())
            .args(args)
            .args(["--out", "one"])
            .assert()
            .success();
        let four_args = [&args[..], &["--out", "four"]].concat();
        let out = mpirun(tmp.path(), 4, &four_args).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let one = peaks(&tmp.path().join("one"));
        let four = peaks(&tmp.path().join("four"));
        assert_eq!((one.len(), four.len()), (1, 4));
        let bound = 0.35 * one[0] + 50.0;
        assert!(
            four.iter().all(|p| *p <= bound),
            "peaks {four:?} MiB per process, one process {} MiB: the bound is {bound} MiB",
            one[0]
        );
    }

    /// A checkpoint of several processes is written in pieces, one per block, by the process
    /// holding it (one generation kept), and a run restarted from it in any number of
    /// processes continues bit for bit.
    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn a_checkpoint_in_pieces_restarts_bit_for_bit_in_any_process_count() {
        let tmp = TempDir::new().unwrap();
        let common = [
            "run",
            "-q",
            "--set",
            "mesh.nodes=[33,33]",
            "--set",
            "numerics.method=\"explicit\"",
            "--set",
            "numerics.tolerance=1e-30",
        ];
        let until = |n: usize| format!("numerics.max_iterations={n}");
        cargo_bin_cmd!("ferroflow")
            .current_dir(tmp.path())
            .args(common)
            .args(["--set", &until(600), "--out", "whole"])
            .assert()
            .success();
        let first = [
            &common[..],
            &[
                "--set",
                &until(300),
                "--set",
                "output.checkpoint_interval=100",
            ],
            &["--out", "two"],
        ];
        let out = mpirun(tmp.path(), 2, &first.concat()).output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let two = tmp.path().join("two");
        let index = fs::read(two.join("checkpoint.ffcp")).unwrap();
        assert_eq!(&index[..8], b"FFLOWCK3");
        let generations: Vec<_> = fs::read_dir(two.join("checkpoint"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(generations, ["300"]);
        assert_eq!(fs::read_dir(two.join("checkpoint/300")).unwrap().count(), 2);
        let more = until(600);
        let restart = |np: usize, out: &str, blocks: &[&str]| {
            let args = [
                &["run", "-q", "--restart", "two/checkpoint.ffcp"][..],
                &["--set", &more, "--out", out],
                blocks,
            ]
            .concat();
            if np == 1 {
                cargo_bin_cmd!("ferroflow")
                    .current_dir(tmp.path())
                    .args(&args)
                    .assert()
                    .success();
            } else {
                let out = mpirun(tmp.path(), np, &args).output().unwrap();
                assert!(out.status.success(), "{}", stderr(&out));
            }
        };
        let whole = tmp.path().join("whole");
        restart(2, "two-more", &[]);
        read_back_as(&whole, &tmp.path().join("two-more"), "f64");
        restart(1, "one-more", &[]);
        assert_same_files(&whole, &tmp.path().join("one-more"), ["fields.vti"]);
        restart(3, "three-more", &["--blocks", "3,1"]);
        read_back_as(&whole, &tmp.path().join("three-more"), "f64");
    }

    /// The implicit method couples the processes' blocks as the blocks of one process: with
    /// two blocks the gauge's two sums are added in either order with the same bits.
    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn implicit_processes_write_the_fields_of_one_process_with_two_blocks() {
        let tmp = TempDir::new().unwrap();
        let common = [
            "run",
            "-q",
            "--set",
            "mesh.nodes=[33,33]",
            "--set",
            "numerics.method=\"implicit\"",
        ];
        cargo_bin_cmd!("ferroflow")
            .current_dir(tmp.path())
            .args(common)
            .args(["--blocks", "1,2", "--out", "one"])
            .assert()
            .success();
        let out = mpirun(tmp.path(), 2, &[&common[..], &["--out", "two"]].concat())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        let iterations = summary(&one)["iterations"].as_u64().unwrap();
        assert!(iterations < 1000, "{iterations}");
        assert_eq!(summary(&two)["iterations"], iterations);
        read_back_as(&one, &two, "f64");
        assert_same_files(&one, &two, ["centerline_u.csv"]);
    }

    /// Multigrid with every level cut into 4 blocks over 2 processes: the cycles, residual
    /// norms, profiles and fields of the same blocks in one process, bit for bit (the gauge's
    /// and the norms' sums are added in block order), also after a restart from the
    /// processes' checkpoint.
    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn multigrid_levels_in_blocks_over_processes_are_those_of_one_process() {
        let tmp = TempDir::new().unwrap();
        let common = [
            "run",
            "-q",
            "--set",
            "mesh.nodes=[65,65]",
            "--set",
            "numerics.multigrid=20",
            "--set",
            "numerics.check_interval=1",
            "--set",
            "output.checkpoint_interval=10",
            "--blocks",
            "2,2",
        ];
        let one = |out: &str, extra: &[&str]| {
            cargo_bin_cmd!("ferroflow")
                .current_dir(tmp.path())
                .args(common)
                .args(extra)
                .args(["--out", out])
                .assert()
                .success();
        };
        let two = |out: &str, extra: &[&str]| {
            let args = [&common[..], extra, &["--out", out]].concat();
            let done = mpirun(tmp.path(), 2, &args).output().unwrap();
            assert!(done.status.success(), "{}", stderr(&done));
        };
        one("one", &[]);
        two("two", &[]);
        let (a, b) = (tmp.path().join("one"), tmp.path().join("two"));
        let log = fs::read_to_string(b.join("run.log")).unwrap();
        assert!(log.contains("over 2 MPI processes"), "{log}");
        assert!(log.contains("4 levels [65, 65]"), "{log}");
        let cycles = summary(&a)["iterations"].as_u64().unwrap();
        assert!(cycles < 100, "{cycles} cycles");
        assert_eq!(summary(&b)["iterations"], cycles);
        read_back_as(&a, &b, "f64");
        assert_same_files(
            &a,
            &b,
            ["centerline_u.csv", "centerline_v.csv", "residuals.csv"],
        );
        // Stopped at 20 cycles and restarted in 2 processes from their pieces: the run of one
        // process to the end.
        let stop = ["--set", "numerics.max_iterations=20"];
        two("first", &stop);
        let restart = [
            "run",
            "-q",
            "--restart",
            "first/checkpoint.ffcp",
            "--set",
            "numerics.max_iterations=100000",
            "--out",
            "again",
        ];
        let done = mpirun(tmp.path(), 2, &restart).output().unwrap();
        assert!(done.status.success(), "{}", stderr(&done));
        let again = tmp.path().join("again");
        assert_eq!(summary(&again)["iterations"], cycles);
        assert_same_files(&a, &again, ["centerline_u.csv", "centerline_v.csv"]);
    }

    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn a_failure_ends_every_process_with_one_code_and_one_message() {
        let tmp = TempDir::new().unwrap();
        // Bad input, seen by every process alike.
        let args = ["run", "--set", "parallel.count=1", "--out", "out"];
        let out = mpirun(tmp.path(), 2, &args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        let message = "at least one block per MPI process";
        assert_eq!(err.matches(message).count(), 1, "{err}");
        assert!(!tmp.path().join("out").exists());
        // A failure of the first process alone: it cannot make the staging directory.
        fs::create_dir(tmp.path().join("out")).unwrap();
        fs::write(tmp.path().join("out/partial"), "").unwrap();
        let args = ["run", "--set", "mesh.nodes=[17,17]", "--out", "out"];
        let out = mpirun(tmp.path(), 2, &args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(
            err.matches("cannot use output directory").count(),
            1,
            "{err}"
        );
    }

    #[test]
    #[ignore = "needs mpirun: run with --ignored, see README.md"]
    fn a_signal_to_one_process_stops_all_with_a_checkpoint() {
        let tmp = TempDir::new().unwrap();
        let args = [
            "run",
            "-q",
            "--set",
            "numerics.tolerance=1e-12",
            "--set",
            "output.checkpoint_interval=200",
            "--out",
            "out",
        ];
        let mut job = mpirun(tmp.path(), 2, &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = tmp.path().join("out/partial");
        let start = Instant::now();
        let limit = Duration::from_secs(60);
        wait_for(&out.join("checkpoint.ffcp"), limit);
        // mpirun starts the processes as its children; SIGTERM to the last one only.
        let children = format!("/proc/{0}/task/{0}/children", job.id());
        let children = fs::read_to_string(children).unwrap();
        let last = children.split_whitespace().last().expect("a process");
        let sent = Command::new("kill").args(["-TERM", last]).status().unwrap();
        assert!(sent.success());
        let status = wait_exit(&mut job, limit.saturating_sub(start.elapsed()), "SIGTERM");
        assert_eq!(status.code(), Some(130));
        let s = summary(&out);
        assert_eq!(s["status"], "interrupted");
        assert!(out.join("fields.pvti").exists() && out.join("fields").is_dir());
    }
}
