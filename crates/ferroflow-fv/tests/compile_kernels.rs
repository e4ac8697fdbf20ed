//! CI check that the finite volumes' CUDA kernels cannot rot: every build compiles to machine
//! code for sm_90 with NVRTC alone (no driver, no GPU). It needs NVRTC, so `cargo test`
//! ignores it; run with `--ignored` it fails where libnvrtc.so.13 is not on the loader path.
use ferroflow_cuda::compile::compile_every;
use ferroflow_fv::cuda::every_build;

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13): run with --ignored"]
fn every_kernel_compiles_for_sm_90() {
    // Without NVRTC the error says so.
    let compiled = compile_every(&every_build(), "sm_90").unwrap_or_else(|e| panic!("{e}"));
    println!("{compiled} builds compiled");
}
