//! GPU tests of the CUDA backend: the same answers as the CPU backend (f64 to 1e-10 after 1000
//! iterations, 2D and 3D, with and without source terms and the energy equation; f32 loosely),
//! bitwise determinism,
//! and tuning that leaves the state alone. They need a GPU, so `cargo test` ignores them; run
//! with `--ignored` (scripts/gpu-check.sh does) they fail where no GPU is usable.
use ferroflow_ac::cpu::CpuBackend;
use ferroflow_ac::cuda::{candidates, multigrid, CudaBackend, CudaOptions, LaunchShape, TuneMode};
use ferroflow_ac::multigrid::Fas;
use ferroflow_ac::{
    Convection, CycleShape, Decomposed, Differences, Implicit, Method, Multigrid, Numerics,
    Problem, Relaxation, SideBc,
};
use ferroflow_cases::convection::HeatedCavity;
use ferroflow_cases::{cavity, mms::Manufactured};
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::{Backend, Fields, Real, Residuals};
use ferroflow_cuda::{probe, TuneSource};
use ferroflow_parallel::InProcess;
use std::sync::Arc;

/// Iterations per `advance` call, as the driver makes them: the first alone, then chunks
/// (1000 in all).
const CHUNKS: [usize; 11] = [1, 100, 100, 100, 100, 100, 100, 100, 100, 100, 99];

/// Names the device, or fails: these tests are ignored unless asked for, and then need a GPU.
fn gpu() {
    let device = probe().unwrap_or_else(|why| panic!("no usable GPU: {why}"));
    println!("device: {device}");
}

fn untuned() -> CudaOptions {
    CudaOptions {
        tune: TuneMode::Off,
        ..CudaOptions::default()
    }
}

/// Runs `backend` through `chunks`, returning the residuals of each chunk and the state.
fn run<B: Backend>(backend: &mut B, chunks: &[usize]) -> (Vec<Residuals>, Fields<B::Real>) {
    let residuals = chunks
        .iter()
        .map(|&n| backend.advance(n).unwrap())
        .collect();
    (residuals, backend.download().unwrap())
}

/// Largest difference of each variable (named `names`), relative to its largest magnitude;
/// printed.
fn field_differences<R: Real>(
    label: &str,
    names: &[&str],
    a: &Fields<R>,
    b: &Fields<R>,
) -> Vec<f64> {
    a.vars
        .iter()
        .zip(&b.vars)
        .enumerate()
        .map(|(v, (x, y))| {
            let scale = x.iter().fold(0.0f64, |m, x| m.max(x.f64().abs()));
            let diff = x
                .iter()
                .zip(y)
                .fold(0.0f64, |m, (x, y)| m.max((x.f64() - y.f64()).abs()));
            let rel = if scale > 0.0 { diff / scale } else { diff };
            println!(
                "{label}: {} max |cpu - gpu| / max |cpu| = {rel:.3e}",
                names[v]
            );
            rel
        })
        .collect()
}

/// Largest relative difference of the residual norms over all chunks; printed.
fn residual_difference(label: &str, a: &[Residuals], b: &[Residuals]) -> f64 {
    let worst = a
        .iter()
        .zip(b)
        .flat_map(|(a, b)| a.l2().into_iter().zip(b.l2()))
        .map(|(x, y)| {
            let scale = x.abs().max(y.abs());
            if scale > 0.0 {
                (x - y).abs() / scale
            } else {
                0.0
            }
        })
        .fold(0.0, f64::max);
    println!("{label}: residual norms max relative difference = {worst:.3e}");
    worst
}

/// Runs the CPU and the CUDA backend for 1000 iterations from the same state and checks that
/// every variable agrees to `tolerance`.
fn matches_cpu<R: Real>(label: &str, problem: &Problem<R>, options: &CudaOptions, tolerance: f64) {
    let mut cpu = CpuBackend::new(problem, 0).unwrap();
    let mut gpu = CudaBackend::new(problem, options).unwrap();
    let (cpu_res, cpu_state) = run(&mut cpu, &CHUNKS);
    let (gpu_res, gpu_state) = run(&mut gpu, &CHUNKS);
    assert!(
        gpu_state.first_non_finite().is_none(),
        "{label}: non-finite GPU state"
    );
    let names = problem.variable_names();
    for (v, rel) in field_differences(label, names, &cpu_state, &gpu_state)
        .into_iter()
        .enumerate()
    {
        assert!(rel < tolerance, "{label}: {} differs by {rel:e}", names[v]);
    }
    assert!(residual_difference(label, &cpu_res, &gpu_res) < tolerance.max(1e-12));
}

fn cavity<R: Real>(dim: usize) -> Problem<R> {
    // Odd, unequal sizes: partial thread blocks on every axis.
    let n = if dim == 2 { [67, 53, 1] } else { [35, 29, 23] };
    cavity::lid_driven::<R>(dim, n, 100.0, 1.0, Numerics::default()).unwrap()
}

fn manufactured<R: Real>(dim: usize) -> Problem<R> {
    let n = if dim == 2 { 65 } else { 25 };
    Manufactured::new(dim)
        .problem::<R>(n, Numerics::default())
        .unwrap()
}

/// The buoyancy-driven cavity of the built-in cases (Ra = 1e5, Pr = 0.71): isothermal and
/// adiabatic walls, buoyancy, and the energy equation in the fused kernel.
fn heated<R: Real>(dim: usize) -> Problem<R> {
    // In 3D, 37 nodes along x: the last interior node is lane 2 of its warp for every tiled
    // shape, so that the interior pass fills both x walls itself.
    let n = if dim == 2 { [67, 53, 1] } else { [37, 29, 23] };
    let cavity = HeatedCavity::nondimensional(1e5, 0.71, [0.0, -1.0, 0.0]).unwrap();
    let numerics = Numerics {
        cfl: 1.2,
        kappa: 0.1,
        ..Numerics::default()
    };
    cavity.problem::<R>(dim, n, numerics).unwrap()
}

/// The 3D heated cavity with adiabatic x walls too: in a tiled shape the interior pass fills
/// them itself.
fn adiabatic_x() -> Problem<f64> {
    let mut problem = heated::<f64>(3);
    problem.sides[0] = SideBc::AdiabaticWall;
    problem.sides[1] = SideBc::AdiabaticWall;
    problem
}

/// A tiled launch shape marching 8 planes.
fn tiled() -> CudaOptions {
    CudaOptions {
        tune: TuneMode::Fixed(LaunchShape::tiled([32, 4], 8).with_min_blocks(4)),
        ..CudaOptions::default()
    }
}

fn manufactured_energy<R: Real>(dim: usize) -> Problem<R> {
    let n = if dim == 2 { 65 } else { 25 };
    Manufactured::with_energy(dim)
        .problem::<R>(n, Numerics::default())
        .unwrap()
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn cavity_f64_matches_the_cpu() {
    gpu();
    matches_cpu("cavity 2D f64", &cavity::<f64>(2), &untuned(), 1e-10);
    matches_cpu("cavity 3D f64", &cavity::<f64>(3), &untuned(), 1e-10);
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn manufactured_f64_with_sources_matches_the_cpu() {
    gpu();
    matches_cpu("mms 2D f64", &manufactured::<f64>(2), &untuned(), 1e-10);
    matches_cpu("mms 3D f64", &manufactured::<f64>(3), &untuned(), 1e-10);
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn heated_cavity_f64_matches_the_cpu() {
    gpu();
    matches_cpu("heated cavity 2D f64", &heated::<f64>(2), &untuned(), 1e-10);
    matches_cpu("heated cavity 3D f64", &heated::<f64>(3), &untuned(), 1e-10);
    // Adiabatic x walls, filled by the wall kernel (default shape) and by a tiled
    // interior pass itself.
    let problem = adiabatic_x();
    matches_cpu("adiabatic x walls 3D f64", &problem, &untuned(), 1e-10);
    let tiled = tiled();
    matches_cpu("adiabatic x walls 3D f64 tiled", &problem, &tiled, 1e-10);
    matches_cpu(
        "heated cavity 3D f64 tiled",
        &heated::<f64>(3),
        &tiled,
        1e-10,
    );
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn manufactured_f64_with_energy_matches_the_cpu() {
    gpu();
    let (two, three) = (manufactured_energy::<f64>(2), manufactured_energy::<f64>(3));
    matches_cpu("mms energy 2D f64", &two, &untuned(), 1e-10);
    matches_cpu("mms energy 3D f64", &three, &untuned(), 1e-10);
}

/// `problem` with skew-symmetric convection.
fn skew<R: Real>(mut problem: Problem<R>) -> Problem<R> {
    problem.numerics.convection = Convection::SkewSymmetric;
    problem
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn skew_symmetric_convection_matches_the_cpu() {
    gpu();
    matches_cpu(
        "skew cavity 2D f64",
        &skew(cavity::<f64>(2)),
        &untuned(),
        1e-10,
    );
    matches_cpu(
        "skew cavity 3D f64",
        &skew(cavity::<f64>(3)),
        &untuned(),
        1e-10,
    );
    let tiled = tiled();
    let heated = skew(heated::<f64>(3));
    matches_cpu("skew heated 3D f64", &heated, &untuned(), 1e-10);
    matches_cpu("skew heated 3D f64 tiled", &heated, &tiled, 1e-10);
    let mms = skew(manufactured_energy::<f64>(3));
    matches_cpu("skew mms energy 3D f64", &mms, &untuned(), 1e-10);
}

/// `problem` with fourth-order differences.
fn fourth<R: Real>(mut problem: Problem<R>) -> Problem<R> {
    problem.numerics.differences = Differences::Fourth;
    problem
}

/// Fourth-order differences on the GPU give the CPU's states bit for bit in f64: the fused
/// pass (default and tiled shapes; the wall kernel fills the x walls and the velocity ghosts),
/// the implicit relaxation, a multigrid cycle and blocks relaxed implicitly on the GPU, 2D and
/// 3D, with source terms and the energy equation, isothermal and adiabatic walls.
#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn fourth_order_differences_are_bitwise_the_cpu_in_f64() {
    gpu();
    let problems = [
        ("cavity 2D", cavity::<f64>(2)),
        ("cavity 3D", cavity::<f64>(3)),
        ("mms 2D", manufactured::<f64>(2)),
        ("mms 3D", manufactured::<f64>(3)),
        ("heated 2D", heated::<f64>(2)),
        ("heated 3D", heated::<f64>(3)),
        ("adiabatic x walls 3D", adiabatic_x()),
        ("mms energy 3D", manufactured_energy::<f64>(3)),
    ];
    let tiled = tiled();
    for (label, problem) in &problems {
        let problem = fourth(problem.clone());
        let names = problem.variable_names();
        let mut shapes = vec![("default shape", untuned())];
        if problem.layout.dim == 3 {
            shapes.push(("tiled", tiled));
        }
        for (shape, options) in &shapes {
            let mut cpu = CpuBackend::new(&problem, 0).unwrap();
            let mut gpu = CudaBackend::new(&problem, options).unwrap();
            let label = format!("{label} fourth order, {shape}");
            same_bits(&label, names, &mut cpu, &mut gpu, &[1, 100, 99]);
        }
        let implicit = jacobi(problem.clone(), true);
        let mut cpu = CpuBackend::new(&implicit, 0).unwrap();
        let mut gpu = CudaBackend::new(&implicit, &untuned()).unwrap();
        let label = format!("{label} fourth order, implicit jacobi");
        same_bits(&label, names, &mut cpu, &mut gpu, &[1, 20]);
    }
    let pool = Arc::new(ferroflow_cpu::pool(0).unwrap());
    for (label, problem) in [
        ("mms 2D", manufactured::<f64>(2)),
        ("mms energy 3D", manufactured_energy::<f64>(3)),
    ] {
        let mut problem = fourth(jacobi(problem, true));
        problem.numerics.multigrid = Multigrid {
            levels: 10,
            ..Multigrid::default()
        };
        let mut cpu = Fas::new(&problem, Arc::clone(&pool)).unwrap();
        let mut gpu = multigrid(&problem, &untuned()).unwrap();
        assert!(gpu.depth() >= 2, "{label}: {:?}", gpu.grids());
        let label = format!("{label} fourth order, multigrid");
        same_bits(
            &label,
            problem.variable_names(),
            &mut cpu,
            &mut gpu,
            &[1, 3],
        );
    }
    let problem = fourth(jacobi(heated::<f64>(3), true));
    let d = Decomposition::new(3, problem.layout.n, [2, 1, 2]).unwrap();
    let mut cpu =
        Decomposed::new(&problem, d.clone(), InProcess, |p, _| CpuBackend::new(p, 0)).unwrap();
    let mut gpu = Decomposed::new(&problem, d, InProcess, |p, _| {
        CudaBackend::new(p, &untuned())
    })
    .unwrap();
    let label = "heated 3D [2, 1, 2] fourth order, implicit jacobi on blocks";
    same_bits(
        label,
        problem.variable_names(),
        &mut cpu,
        &mut gpu,
        &[1, 20],
    );
}

/// Runs `cpu` and `gpu` through `chunks` and asserts the same states bit for bit (the residual
/// norms, which add in another order, to 1e-12); the GPU's state.
fn same_bits<A: Backend<Real = f64>, B: Backend<Real = f64>>(
    label: &str,
    names: &[&str],
    cpu: &mut A,
    gpu: &mut B,
    chunks: &[usize],
) -> Fields<f64> {
    let (cpu_res, cpu_state) = run(cpu, chunks);
    let (gpu_res, gpu_state) = run(gpu, chunks);
    assert!(
        gpu_state.first_non_finite().is_none(),
        "{label}: not finite"
    );
    let rel = field_differences(label, names, &cpu_state, &gpu_state);
    assert!(cpu_state == gpu_state, "{label}: states differ ({rel:?})");
    assert!(residual_difference(label, &cpu_res, &gpu_res) < 1e-12);
    gpu_state
}

/// `problem` relaxed implicitly by Jacobi sweeps, the operator in f32 (`single`) or f64.
fn jacobi<R: Real>(mut problem: Problem<R>, single: bool) -> Problem<R> {
    problem.numerics.method = Method::Implicit(Implicit {
        relaxation: Some(Relaxation::Jacobi),
        sweeps: Some(5),
        cfl: Some(10.0),
        single,
    });
    problem
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn implicit_jacobi_is_bitwise_the_cpu_in_f64() {
    gpu();
    let problems = [
        ("cavity 2D", cavity::<f64>(2)),
        ("cavity 3D", cavity::<f64>(3)),
        ("mms 2D", manufactured::<f64>(2)),
        ("heated 2D", heated::<f64>(2)),
        ("heated 3D", heated::<f64>(3)),
        ("adiabatic x walls 3D", adiabatic_x()),
        ("mms energy 3D", manufactured_energy::<f64>(3)),
        ("skew heated 3D", skew(heated::<f64>(3))),
    ];
    for single in [false, true] {
        for (label, problem) in &problems {
            let label = format!(
                "{label} implicit jacobi, operator f{}",
                if single { 32 } else { 64 }
            );
            let problem = jacobi(problem.clone(), single);
            let mut cpu = CpuBackend::new(&problem, 0).unwrap();
            let mut gpu = CudaBackend::new(&problem, &untuned()).unwrap();
            let names = problem.variable_names();
            let gpu_state = same_bits(&label, names, &mut cpu, &mut gpu, &[1, 20, 29]);
            // Graphs replay the same launches.
            let direct = CudaOptions {
                graph_iterations: 0,
                ..untuned()
            };
            let mut plain = CudaBackend::new(&problem, &direct).unwrap();
            let (_, plain_state) = run(&mut plain, &[50]);
            assert!(plain_state == gpu_state, "{label}: graphs change the state");
        }
    }
}

/// The multigrid cycle with every level on the GPU (transfers on the device) gives the CPU's
/// cycle bit for bit in f64: W-cycles after a full-multigrid start, 2D and 3D, with source
/// terms and the energy equation, the operator in f32 and f64.
#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn multigrid_cycles_are_bitwise_the_cpu_in_f64() {
    gpu();
    let levels = |mut p: Problem<f64>| {
        p.numerics.multigrid = Multigrid {
            levels: 10,
            shape: CycleShape::W,
            ..Multigrid::default()
        };
        p
    };
    let heated3 = HeatedCavity::nondimensional(1e5, 0.71, [0.0, -1.0, 0.0]).unwrap();
    let problems = [
        (
            "cavity 2D",
            cavity::lid_driven::<f64>(2, [65, 33, 1], 100.0, 1.0, Numerics::default()).unwrap(),
        ),
        ("mms 2D", manufactured::<f64>(2)),
        ("mms energy 3D", manufactured_energy::<f64>(3)),
        (
            "heated 3D",
            heated3
                .problem::<f64>(3, [33, 33, 17], Numerics::default())
                .unwrap(),
        ),
    ];
    let pool = Arc::new(ferroflow_cpu::pool(0).unwrap());
    for single in [false, true] {
        for (label, problem) in &problems {
            let label = format!(
                "{label} multigrid, operator f{}",
                if single { 32 } else { 64 }
            );
            let problem = levels(jacobi(problem.clone(), single));
            let mut cpu = Fas::new(&problem, Arc::clone(&pool)).unwrap();
            let mut gpu = multigrid(&problem, &untuned()).unwrap();
            assert!(gpu.depth() >= 2, "{label}: {:?}", gpu.grids());
            assert_eq!(cpu.grids(), gpu.grids());
            same_bits(
                &label,
                problem.variable_names(),
                &mut cpu,
                &mut gpu,
                &[1, 3],
            );
        }
    }
}

/// Blocks of a decomposed grid relaxed on the GPU (halos of the increments through the host
/// after every sweep) give the CPU's blocks bit for bit, and the one-GPU state to the rounding
/// of the gauge's sums.
#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn implicit_jacobi_on_blocks_is_bitwise_the_cpu_blocks_in_f64() {
    gpu();
    let problems = [
        ("cavity 2D", cavity::<f64>(2), [3, 2, 1]),
        ("heated 3D", heated::<f64>(3), [2, 1, 2]),
        ("mms energy 3D", manufactured_energy::<f64>(3), [1, 3, 1]),
    ];
    for single in [false, true] {
        for (label, problem, blocks) in &problems {
            let label = format!(
                "{label} {blocks:?} implicit jacobi, f{}",
                32 << !single as u8
            );
            let problem = jacobi(problem.clone(), single);
            let d = Decomposition::new(problem.layout.dim, problem.layout.n, *blocks).unwrap();
            let mut cpu =
                Decomposed::new(&problem, d.clone(), InProcess, |p, _| CpuBackend::new(p, 0))
                    .unwrap();
            let mut gpu = Decomposed::new(&problem, d, InProcess, |p, _| {
                CudaBackend::new(p, &untuned())
            })
            .unwrap();
            let chunks = [1, 20, 29];
            let (cpu_res, cpu_state) = run(&mut cpu, &chunks);
            let (gpu_res, gpu_state) = run(&mut gpu, &chunks);
            assert!(gpu_state.first_non_finite().is_none(), "{label}");
            let names = problem.variable_names();
            let rel = field_differences(&label, names, &cpu_state, &gpu_state);
            assert!(cpu_state == gpu_state, "{label}: states differ ({rel:?})");
            assert!(residual_difference(&label, &cpu_res, &gpu_res) < 1e-12);
            // Nodes only: the ghosts beyond the walls of a gathered grid are not iterated.
            let mut one = CudaBackend::new(&problem, &untuned()).unwrap();
            let (_, one_state) = run(&mut one, &chunks);
            let mut worst = 0.0f64;
            for (x, y) in one_state.vars.iter().zip(&gpu_state.vars) {
                let scale = x.iter().fold(0.0f64, |m, x| m.max(x.abs()));
                one_state.layout.for_each_node(|_, _, _, o| {
                    worst = worst.max((x[o] - y[o]).abs() / scale);
                });
            }
            println!("{label}: one block against blocks, max difference {worst:.3e}");
            assert!(
                worst < if single { 1e-5 } else { 1e-12 },
                "{label}: {worst:e}"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn fused_multiply_adds_stay_within_the_tolerance() {
    gpu();
    let fmad = CudaOptions {
        fmad: true,
        ..untuned()
    };
    matches_cpu("cavity 2D f64 fmad", &cavity::<f64>(2), &fmad, 1e-10);
    matches_cpu("mms 3D f64 fmad", &manufactured::<f64>(3), &fmad, 1e-10);
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn f32_matches_the_cpu_loosely() {
    gpu();
    matches_cpu("cavity 2D f32", &cavity::<f32>(2), &untuned(), 1e-4);
    matches_cpu("cavity 3D f32", &cavity::<f32>(3), &untuned(), 1e-4);
    matches_cpu("mms 2D f32", &manufactured::<f32>(2), &untuned(), 1e-4);
    // The pressure, mostly hydrostatic here, accumulates the f32 approximate division of
    // the time step: 4.2e-4 measured on an H100, against 2e-6 for u, v, w and T.
    matches_cpu("heated cavity 3D f32", &heated::<f32>(3), &untuned(), 1e-3);
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn runs_are_bitwise_deterministic_whatever_the_chunks_and_graphs() {
    gpu();
    for problem in [cavity::<f64>(3), manufactured::<f64>(2), heated::<f64>(3)] {
        let mut a = CudaBackend::new(&problem, &untuned()).unwrap();
        let direct = CudaOptions {
            graph_iterations: 0,
            ..untuned()
        };
        let mut b = CudaBackend::new(&problem, &direct).unwrap();
        let (ra, sa) = run(&mut a, &[1, 99, 100, 37, 63]);
        let (rb, sb) = run(&mut b, &[300]);
        assert!(sa == sb, "states differ");
        assert_eq!(ra.last(), rb.last(), "residuals differ");
        let mut c = CudaBackend::new(&problem, &untuned()).unwrap();
        let (rc, sc) = run(&mut c, &[1, 99, 100, 37, 63]);
        assert!(sa == sc && ra == rc, "two identical runs differ");
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn tuning_leaves_the_state_unchanged() {
    gpu();
    for dim in [2, 3] {
        let problem = cavity::<f64>(dim);
        let mut plain = CudaBackend::new(&problem, &untuned()).unwrap();
        let always = CudaOptions {
            tune: TuneMode::Always,
            ..CudaOptions::default()
        };
        let mut tuned = CudaBackend::new(&problem, &always).unwrap();
        let report = tuned.tuning().clone();
        print!("{dim}D tuning on {}:\n{report}", tuned.device_name());
        println!("{dim}D tuning took {:.3} s", report.seconds);
        assert_eq!(report.source, TuneSource::Measured);
        assert_eq!(report.rows.len(), candidates(dim).len());
        assert!(report.rows.iter().any(|r| r.shape == report.chosen));
        assert!(report.cache_error.is_none(), "{:?}", report.cache_error);
        assert!(plain.download().unwrap() == tuned.download().unwrap());
        let (_, a) = run(&mut plain, &[50]);
        let (_, b) = run(&mut tuned, &[50]);
        assert!(a == b, "{dim}D: tuning changed the state");
        let cached = CudaBackend::new(&problem, &CudaOptions::default()).unwrap();
        assert_eq!(cached.tuning().source, TuneSource::Cache);
        assert_eq!(cached.tuning().chosen, report.chosen);
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn every_launch_shape_gives_the_same_state() {
    gpu();
    // Each node's update is the same whatever thread computes it, so every candidate shape
    // (marching or not, partial blocks on every axis) must give the default's state bitwise.
    // The heated cavity runs the energy variant, whose queue carries T as well.
    for dim in [2, 3] {
        let problem = heated::<f64>(dim);
        let (_, expected) = run(&mut CudaBackend::new(&problem, &untuned()).unwrap(), &[20]);
        for shape in candidates(dim) {
            let fixed = CudaOptions {
                tune: TuneMode::Fixed(shape),
                ..CudaOptions::default()
            };
            let mut backend = CudaBackend::new(&problem, &fixed).unwrap();
            assert_eq!(backend.tuning().chosen, shape);
            let (_, state) = run(&mut backend, &[20]);
            assert!(
                state == expected,
                "{dim}D, shape {shape}: the state differs"
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn upload_and_download_round_trip_like_the_cpu() {
    gpu();
    let problem = cavity::<f64>(3);
    let mut state = problem.initial.clone();
    let mut x = 0.7f64;
    for v in state.vars.iter_mut() {
        for value in v.iter_mut() {
            x = (x * 3.9 + 0.17).fract();
            *value = x - 0.5;
        }
    }
    let mut cpu = CpuBackend::new(&problem, 0).unwrap();
    let mut gpu = CudaBackend::new(&problem, &untuned()).unwrap();
    gpu.advance(7).unwrap();
    cpu.upload(&state).unwrap();
    gpu.upload(&state).unwrap();
    assert!(cpu.download().unwrap() == gpu.download().unwrap());
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn a_missing_device_is_reported() {
    gpu();
    let options = CudaOptions {
        device: 99,
        ..untuned()
    };
    match CudaBackend::new(&cavity::<f64>(2), &options) {
        Err(ferroflow_core::BackendError::Unavailable { reason, .. }) => {
            assert!(reason.starts_with("no CUDA device 99"), "{reason}")
        }
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("device 99 exists?"),
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn copy_bandwidth_is_plausible() {
    gpu();
    let bandwidth = ferroflow_cuda::copy_bandwidth(0, 1 << 30, 10).unwrap();
    println!("copy bandwidth {:.2} TB/s (read + write)", bandwidth / 1e12);
    assert!(bandwidth > 1e11 && bandwidth < 1e14);
}
