//! `ferroflow check` of finite-volume cases: the built-in ones listed, shown and checked,
//! and input errors that name the key, the value or the file.
use std::fs;
use std::path::Path;
use tempfile::TempDir;

mod common;
use common::{ferroflow, stderr_of};

/// Writes a finite-volume case file `name` in `dir` with the lines `body` after `[case]`.
fn case_file(dir: &Path, name: &str, body: &str) {
    let text = format!("[case]\nname = \"mine\"\nsolver = \"finite-volume\"\n{body}");
    fs::write(dir.join(name), text).unwrap();
}

/// Exit code and standard output of `ferroflow check` with `args` in `dir`.
fn check(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let o = ferroflow(dir).arg("check").args(args).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    (o.status.code(), out)
}

#[test]
fn the_built_in_cases_are_listed_shown_and_checked() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    let list = ferroflow(dir).arg("cases").output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let expect = [
        ("sod-fv", "400 cells", "ssp-rk3"),
        ("bump-fv", "768 cells", "newton-jacobi"),
        ("flat-plate-fv", "plate (adiabatic-wall)", "Navier-Stokes"),
    ];
    for (name, size, scheme) in expect {
        assert!(list.contains(name), "{list}");
        let shown = ferroflow(dir)
            .args(["cases", "show", name])
            .output()
            .unwrap();
        let shown = String::from_utf8_lossy(&shown.stdout).into_owned();
        assert!(shown.contains("solver = \"finite-volume\""), "{shown}");
        // What `show` prints is a case file that checks as the built-in one.
        fs::write(dir.join("shown.toml"), &shown).unwrap();
        for case in [name, "shown.toml"] {
            let (code, out) = check(dir, &[case]);
            assert_eq!(code, Some(0), "{case}: {out}");
            for w in [size, scheme, "ok: nothing"] {
                assert!(out.contains(w), "{case}: {out} lacks {w}");
            }
        }
    }
    let (code, out) = check(dir, &["sod-fv", "--set", "mesh.elements=\"tet\""]);
    assert_eq!(code, Some(0));
    assert!(out.contains("2400 cells (tetrahedron: 2400)"), "{out}");
    assert!(!dir.join("ferroflow-out").exists());
}

#[test]
fn bad_keys_values_patches_and_mesh_files_exit_2_naming_them() {
    let tmp = TempDir::new().unwrap();
    let dir = tmp.path();
    case_file(dir, "key.toml", "[mesh]\ncels = [4, 4, 1]\n");
    case_file(dir, "value.toml", "[physics]\nmach = -0.5\n");
    case_file(dir, "viscous.toml", "[physics]\nviscosity = \"constant\"\n");
    case_file(dir, "patch.toml", "[boundary.inlet]\nkind = \"inflow\"\n");
    case_file(
        dir,
        "missing.toml",
        "[mesh]\nkind = \"su2\"\nfile = \"nowhere.su2\"\n",
    );
    let expect = [
        ("key.toml", vec!["key.toml:5", "mesh.cels", "unknown field"]),
        ("value.toml", vec!["value.toml:5", "physics.mach", "-0.5"]),
        (
            "viscous.toml",
            vec!["physics.viscosity", "physics.reynolds"],
        ),
        ("patch.toml", vec!["boundary.inlet", "not a patch", "xmin"]),
        ("missing.toml", vec!["mesh.file", "nowhere.su2"]),
    ];
    for (file, words) in expect {
        let (code, err) = stderr_of(ferroflow(dir).args(["check", file]));
        assert_eq!(code, Some(2), "{file}: {err}");
        for w in &words {
            assert!(err.contains(w), "{file}: {err} lacks {w}");
        }
    }
    let (code, err) = stderr_of(ferroflow(dir).args(["check", "sod-fv", "--precision", "f32"]));
    assert_eq!(code, Some(2));
    assert!(err.contains("f64 only"), "{err}");
    // Runs are not there yet: refused as input, nothing written.
    let (code, err) = stderr_of(ferroflow(dir).args(["run", "sod-fv"]));
    assert_eq!(code, Some(2));
    assert!(err.contains("not available yet"), "{err}");
    assert!(!dir.join("ferroflow-out").exists());
}
