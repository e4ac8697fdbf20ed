//! CI check that the finite elements' CUDA kernels cannot rot: the step's, the solve's and
//! every matrix–vector candidate compile to machine code for sm_90 with NVRTC alone (no
//! driver, no GPU). They need NVRTC, so `cargo test` ignores them; run with `--ignored` they
//! fail where libnvrtc.so.13 is not on the loader path.
use ferroflow_cuda::compile::compile_every;
use ferroflow_fem::cuda::every_build;

#[test]
#[ignore = "needs NVRTC (libnvrtc.so.13): run with --ignored"]
fn every_kernel_compiles_for_sm_90() {
    // Without NVRTC the error says so.
    let compiled = compile_every(&every_build(), "sm_90").unwrap_or_else(|e| panic!("{e}"));
    println!("{compiled} builds compiled");
}
