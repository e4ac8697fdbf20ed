//! The CUDA kernels mirror the CPU code of ferroflow-ac, and CI has no GPU to compare results: these
//! checks read both sources so that a change on the CPU side that is not mirrored fails here.
use std::path::{Path, PathBuf};

fn crates() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()?
        .to_path_buf();
    dir.join("ferroflow-ac").is_dir().then_some(dir)
}

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn kernel_coefficients_match_the_host_struct() {
    let Some(crates) = crates() else {
        println!("skipped: the sources are not here (test executable moved)");
        return;
    };
    // The kernel's struct has the host struct's fields, in order (it is passed by value).
    let block = |text: &str, open: &str| -> Vec<String> {
        let start = text.find(open).expect("a Coeffs struct") + open.len();
        let end = start + text[start..].find('}').expect("the struct's end");
        text[start..end]
            .lines()
            .map(|l| l.trim())
            .filter(|l| !l.starts_with("//"))
            .filter_map(|l| l.trim_start_matches("pub ").split([':', '[', ';']).next())
            .map(|f| {
                let f = f
                    .trim_start_matches("real_t ")
                    .trim_start_matches("impl_t ");
                f.trim().to_string()
            })
            .filter(|f| !f.is_empty())
            .collect()
    };
    let host = block(
        &read(crates.join("ferroflow-ac/src/coefficients.rs")),
        "pub struct Coefficients<R> {",
    );
    let device = block(
        &read(crates.join("ferroflow-ac/kernels/ac_residual.cuh")),
        "struct Coeffs {",
    );
    assert_eq!(
        host, device,
        "Coefficients and ac_residual.cuh's Coeffs differ"
    );
    let host = block(
        &read(crates.join("ferroflow-ac/src/implicit.rs")),
        "pub struct ImplicitCoefficients<S> {",
    );
    let device = block(
        &read(crates.join("ferroflow-ac/kernels/ac_implicit.cu")),
        "struct ImplCoeffs {",
    );
    assert!(host.len() >= 9, "{host:?}");
    assert_eq!(
        host, device,
        "ImplicitCoefficients and ac_implicit.cu's differ"
    );
}

#[test]
fn every_cpu_formula_has_a_device_twin() {
    let Some(crates) = crates() else {
        println!("skipped: the sources are not here (test executable moved)");
        return;
    };
    let cpu = read(crates.join("ferroflow-ac/src/cpu/formulas.rs"));
    let cuda = read(crates.join("ferroflow-ac/kernels/ac_formulas.cuh"));
    let names: Vec<&str> = cpu
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("pub fn "))
        .filter_map(|l| l.split(['<', '(']).next())
        .collect();
    assert!(names.len() >= 7, "{names:?}");
    for name in names {
        assert!(
            cuda.contains(&format!("__forceinline__ real_t {name}(")),
            "ac_formulas.cuh has no __device__ twin of {name}"
        );
    }
}
