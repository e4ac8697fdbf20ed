//! CI check that the CUDA kernels cannot rot: every kernel, for every precision, every
//! candidate launch shape and every entry point, compiles to machine code for sm_90 with NVRTC
//! alone (no driver, no GPU). They need NVRTC, so `cargo test` ignores them; run with
//! `--ignored` (CI does) they fail where libnvrtc.so.13 is not on the loader path.
use ferroflow_ac::cuda::programs::every_build;
use ferroflow_cuda::compile::{compile_many, nvrtc_available, nvrtc_version};

/// The GPU machine's architecture.
const ARCH: &str = "sm_90";

/// Fails unless NVRTC can be loaded.
fn nvrtc() {
    assert!(
        nvrtc_available(),
        "NVRTC (libnvrtc.so.13) is not on the loader path"
    );
}

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13): run with --ignored, see README.md"]
fn every_kernel_compiles_for_sm_90() {
    nvrtc();
    let start = std::time::Instant::now();
    // fmad only changes code generation, not what must compile.
    let builds = every_build(false);
    for (build, cubin) in builds.iter().zip(compile_many(&builds, ARCH)) {
        let cubin = cubin.unwrap_or_else(|e| panic!("{e}"));
        // A cubin is an ELF image.
        assert!(cubin.starts_with(b"\x7fELF"), "{build}: not a cubin");
    }
    println!(
        "{} builds compiled for {ARCH} with NVRTC {} in {:.1} s",
        builds.len(),
        nvrtc_version().unwrap(),
        start.elapsed().as_secs_f64()
    );
}

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13): run with --ignored, see README.md"]
fn a_compile_failure_carries_the_nvrtc_log() {
    use ferroflow_ac::cuda::programs::{Program, Variant};
    use ferroflow_cuda::{compile::compile, Scalar};
    nvrtc();
    let build = Program::AcStep {
        dim: 4,
        shape: ferroflow_ac::cuda::DEFAULT_SHAPE,
        variant: Variant::new(false, false),
    }
    .build(Scalar::F64, false);
    let error = compile(&build, ARCH).unwrap_err();
    assert!(
        matches!(error, ferroflow_core::BackendError::Compile { .. }),
        "{error:?}"
    );
    let message = error.to_string();
    assert!(message.contains("DIM is 2 or 3"), "{message}");
    assert!(message.contains("-DDIM=4"), "{message}");
}
