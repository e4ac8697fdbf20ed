//! CI check that the finite volumes' CUDA kernels cannot rot: every build compiles to machine
//! code for sm_90 with NVRTC alone (no driver, no GPU). It needs NVRTC, so `cargo test`
//! ignores it; run with `--ignored` it fails where libnvrtc.so.13 is not on the loader path.
use ferroflow_cuda::compile::{compile_many, nvrtc_available};
use ferroflow_fv::cuda::every_build;

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13): run with --ignored"]
fn every_kernel_compiles_for_sm_90() {
    assert!(
        nvrtc_available(),
        "NVRTC (libnvrtc.so.13) is not on the loader path"
    );
    let builds = every_build();
    for (build, cubin) in builds.iter().zip(compile_many(&builds, "sm_90")) {
        let cubin = cubin.unwrap_or_else(|e| panic!("{e}"));
        assert!(cubin.starts_with(b"\x7fELF"), "{build}: not a cubin");
    }
}
