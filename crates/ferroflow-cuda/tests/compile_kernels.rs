//! CI check that the CUDA kernels cannot rot: every kernel, for every precision and every
//! candidate launch shape, compiles to PTX for sm_90 with NVRTC alone (no driver, no GPU).
//! Without NVRTC the test is skipped (it says why), unless FERROFLOW_REQUIRE_NVRTC=1.
use ferroflow_cuda::compile::{compile_many, every_build, nvrtc_available, nvrtc_version};

/// The GPU machine's architecture.
const ARCH: &str = "sm_90";
/// Highest PTX ISA the GPU machine's driver (CUDA 13.0) loads; newer NVRTC emits newer PTX.
const MAX_PTX_ISA: (u32, u32) = (9, 0);

fn ptx_isa(ptx: &str) -> (u32, u32) {
    let version = ptx
        .lines()
        .find_map(|l| l.strip_prefix(".version "))
        .expect("PTX states its ISA version");
    let (major, minor) = version.trim().split_once('.').expect("major.minor");
    (major.parse().unwrap(), minor.parse().unwrap())
}

#[test]
fn every_kernel_compiles_to_ptx_for_sm_90() {
    if !nvrtc_available() {
        let why = "NVRTC (libnvrtc.so.13) is not on the loader path";
        assert!(
            std::env::var("FERROFLOW_REQUIRE_NVRTC").as_deref() != Ok("1"),
            "FERROFLOW_REQUIRE_NVRTC=1 but {why}"
        );
        println!("skipped: {why} (set FERROFLOW_REQUIRE_NVRTC=1 to make this a failure)");
        return;
    }
    let start = std::time::Instant::now();
    // fmad only changes code generation, not what must compile.
    let builds = every_build(false);
    for (build, ptx) in builds.iter().zip(compile_many(&builds, ARCH)) {
        let ptx = ptx.unwrap_or_else(|e| panic!("{e}"));
        assert!(
            ptx.contains(&format!(".target {ARCH}")),
            "{build}: no {ARCH} target"
        );
        let isa = ptx_isa(&ptx);
        assert!(
            isa <= MAX_PTX_ISA,
            "{build}: PTX ISA {isa:?} is newer than the GPU machine's driver loads \
             ({MAX_PTX_ISA:?}); pin NVRTC 13.0.x"
        );
    }
    println!(
        "{} builds compiled to PTX for {ARCH} with NVRTC {} in {:.1} s",
        builds.len(),
        nvrtc_version().unwrap(),
        start.elapsed().as_secs_f64()
    );
}

#[test]
fn a_compile_failure_carries_the_nvrtc_log() {
    use ferroflow_cuda::compile::{compile_ptx, Build, Precision, Program};
    if !nvrtc_available() {
        println!("skipped: NVRTC is not on the loader path");
        return;
    }
    let build = Build {
        program: Program::AcStep {
            dim: 4,
            shape: ferroflow_cuda::DEFAULT_SHAPE,
        },
        precision: Precision::F64,
        fmad: false,
    };
    let message = compile_ptx(&build, ARCH).unwrap_err().to_string();
    assert!(message.contains("DIM is 2 or 3"), "{message}");
    assert!(message.contains("-DDIM=4"), "{message}");
}
