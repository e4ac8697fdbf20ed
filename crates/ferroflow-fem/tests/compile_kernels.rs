//! CI check that the finite elements' CUDA kernels cannot rot: the step's, the solve's and
//! every matrix–vector candidate compile to machine code for sm_90 with NVRTC alone (no
//! driver, no GPU). They need NVRTC, so `cargo test` ignores them; run with `--ignored` they
//! fail where libnvrtc.so.13 is not on the loader path.
use ferroflow_cuda::compile::{compile_many, nvrtc_available};
use ferroflow_fem::cuda::every_build;

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
    println!("{} builds compiled", builds.len());
}
