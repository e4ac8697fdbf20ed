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

/// The fields of struct `name` in `text` (Rust or C) as (name, kind): kind is "ptr" for a
/// pointer, "i64" or "i32" for those integers, "other" for reals and structs (arrays count as
/// their element).
fn fields(text: &str, name: &str, file: &str) -> Vec<(String, &'static str)> {
    let start = [format!("struct {name} {{"), format!("struct {name}<")]
        .iter()
        .find_map(|open| text.find(open.as_str()))
        .unwrap_or_else(|| panic!("{file} has no struct {name}"));
    let body = start + text[start..].find('{').expect("a body") + 1;
    let end = body + text[body..].find('}').expect("the struct's end");
    text[body..end]
        .lines()
        .map(|l| l.split("//").next().unwrap().trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let l = l.trim_end_matches([',', ';']);
            let (field, ty) = match l.split_once(':') {
                // Rust: `pub name: Type` or `name: [Type; N]`.
                Some((f, t)) => (
                    f.trim_start_matches("pub ").trim().to_string(),
                    t.trim()
                        .trim_start_matches('[')
                        .split(';')
                        .next()
                        .unwrap()
                        .trim(),
                ),
                // C: `const type* name[N]`.
                None => {
                    let decl = l.split('[').next().unwrap();
                    let at = decl.rfind([' ', '*']).expect("a type and a name") + 1;
                    (decl[at..].to_string(), decl[..at].trim())
                }
            };
            let kind = match ty.trim_start_matches("const ") {
                t if t.ends_with('*') || t == "CUdeviceptr" => "ptr",
                "idx_t" | "i64" => "i64",
                "int" | "i32" => "i32",
                _ => "other",
            };
            (field, kind)
        })
        .collect()
}

#[test]
fn kernel_parameter_structs_match_their_host_mirrors() {
    let Some(crates) = crates() else {
        println!("skipped: the sources are not here (test executable moved)");
        return;
    };
    // (host file, host struct, kernel file, kernel struct): every struct passed to a kernel
    // by value, so the two must agree field for field.
    let ac = "ferroflow-ac/src";
    let k = "ferroflow-ac/kernels";
    let implicit = ["Residual", "Rows", "Gauge", "Project", "Sweep", "Update"].map(|p| {
        (
            format!("{ac}/cuda/implicit.rs"),
            format!("{p}Params"),
            format!("{k}/ac_implicit.cu"),
            format!("{p}Params"),
        )
    });
    let pairs = [
        (
            "coefficients.rs",
            "Coefficients",
            "ac_residual.cuh",
            "Coeffs",
        ),
        (
            "implicit.rs",
            "ImplicitCoefficients",
            "ac_implicit.cu",
            "ImplCoeffs",
        ),
        ("cuda/launch.rs", "GridArgs", "grid.cuh", "Grid"),
        ("cuda/launch.rs", "Vars", "grid.cuh", "Vars"),
        ("cuda/launch.rs", "NodeBox", "ac_step.cu", "Region"),
        ("cuda/launch.rs", "StepParams", "ac_step.cu", "StepParams"),
        ("cuda/launch.rs", "WallParams", "boundary.cu", "WallParams"),
        ("cuda/launch.rs", "HaloParams", "boundary.cu", "HaloParams"),
        ("cuda/implicit.rs", "FrozenArgs", "ac_implicit.cu", "Frozen"),
    ]
    .map(|(h, hs, d, ds)| {
        (
            format!("{ac}/{h}"),
            hs.to_string(),
            format!("{k}/{d}"),
            ds.to_string(),
        )
    })
    .into_iter()
    .chain(implicit)
    .chain([(
        "ferroflow-cuda/src/reduce.rs".to_string(),
        "ReduceParams".to_string(),
        "ferroflow-cuda/kernels/reduce.cu".to_string(),
        "ReduceParams".to_string(),
    )]);
    for (host_file, host, device_file, device) in pairs {
        let h = fields(&read(crates.join(&host_file)), &host, &host_file);
        let d = fields(&read(crates.join(&device_file)), &device, &device_file);
        let identifiers = h
            .iter()
            .all(|(f, _)| f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        assert!(!h.is_empty() && identifiers, "{host}: {h:?}");
        assert_eq!(
            h, d,
            "{host} ({host_file}) and {device} ({device_file}) differ"
        );
    }
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
