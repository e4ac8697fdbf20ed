//! Output directories keep results safe: paths that are not UTF-8 used as given.
use std::fs;
use tempfile::TempDir;

mod common;
use common::{ferroflow, stderr_of, summary};

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
        "[mesh]\nnodes = [17, 17]\n\n[numerics]\nmax_iterations = 300\n",
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
