//! GPU tests of decomposed grids: every exchange setting (peer or host, packed or strided,
//! overlapped or not) and the host-driven block path give the one-GPU result bit for bit
//! after 1000 iterations, for 1D, 2D and 3D cuts of 2D and 3D cases. With one GPU the blocks
//! share it; with two, they alternate. 3D blocks run both the default launch shape and a
//! plane-tiled one, whose block marches through the boxes the overlap splits a block into.
//! They need a GPU, so `cargo test` ignores them; run with `--ignored` they fail where no GPU
//! is usable. FERROFLOW_TEST_GPUS=N spreads the blocks over N GPUs (default 1).
use ferroflow_ac::cuda::{
    CudaBackend, CudaOptions, LaunchShape, MultiGpu, MultiGpuOptions, TuneMode, DEFAULT_SHAPE,
};
use ferroflow_ac::Decomposed;
use ferroflow_ac::{Differences, Numerics, Problem};
use ferroflow_cases::cavity::lid_driven;
use ferroflow_cases::convection::HeatedCavity;
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::Backend;
use ferroflow_cuda::{probe, HaloRoute};
use ferroflow_parallel::InProcess;

/// The GPUs the blocks are spread over (FERROFLOW_TEST_GPUS, default 1); fails without a
/// usable GPU.
fn gpus() -> Vec<usize> {
    let device = probe().unwrap_or_else(|why| panic!("no usable GPU: {why}"));
    let count = std::env::var("FERROFLOW_TEST_GPUS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    println!("device: {device}; blocks spread over {count} GPU(s)");
    (0..count).collect()
}

fn cuda(device: usize, shape: LaunchShape) -> CudaOptions {
    CudaOptions {
        device,
        tune: TuneMode::Fixed(shape),
        ..CudaOptions::default()
    }
}

/// Asserts that the nodes of `a` and `b` are identical.
fn same(label: &str, a: &ferroflow_core::Fields<f64>, b: &ferroflow_core::Fields<f64>) {
    let mut worst = 0.0f64;
    for v in 0..a.vars.len() {
        a.layout.for_each_node(|_, _, _, o| {
            let (x, y) = (a.vars[v][o], b.vars[v][o]);
            worst = worst.max((x - y).abs() / x.abs().max(1e-300));
        });
    }
    println!("{label}: max relative difference {worst:e}");
    assert_eq!(worst, 0.0, "{label}");
}

fn check(problem: &Problem<f64>, cuts: &[[usize; 3]], devices: &[usize]) {
    let dim = problem.layout.dim;
    let mut shapes = vec![DEFAULT_SHAPE];
    if dim == 3 {
        // Marching 8 planes: boxes thinner and thicker than a block's march.
        shapes.push(LaunchShape::tiled([32, 4], 8));
    }
    for shape in shapes {
        let chunks = [1, 499, 500];
        let mut one = CudaBackend::new(problem, &cuda(0, shape)).unwrap();
        chunks.iter().for_each(|&n| {
            one.advance(n).unwrap();
        });
        let reference = one.download().unwrap();
        for &blocks in cuts {
            let d = Decomposition::new(dim, problem.layout.n, blocks).unwrap();
            for exchange in [HaloRoute::Peer, HaloRoute::Host] {
                for packing in [true, false] {
                    for overlap in [true, false] {
                        let options = MultiGpuOptions {
                            devices: devices.to_vec(),
                            exchange,
                            packing,
                            overlap,
                            cuda: cuda(0, shape),
                        };
                        let mut multi = MultiGpu::new(problem, d.clone(), &options).unwrap();
                        chunks.iter().for_each(|&n| {
                            multi.advance(n).unwrap();
                        });
                        let label = format!(
                            "{shape} {blocks:?} {exchange:?} packing {packing} overlap {overlap}"
                        );
                        same(&label, &reference, &multi.download().unwrap());
                    }
                }
            }
            let mut hosted = Decomposed::new(problem, d, InProcess, |p, e| {
                CudaBackend::new(p, &cuda(devices[e.id % devices.len()], shape))
            })
            .unwrap();
            chunks.iter().for_each(|&n| {
                hosted.advance(n).unwrap();
            });
            same(
                &format!("{shape} {blocks:?} host-driven blocks"),
                &reference,
                &hosted.download().unwrap(),
            );
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn lid_driven_cavity_decomposed() {
    let devices = gpus();
    let p2 = lid_driven::<f64>(2, [67, 61, 1], 100.0, 1.0, Numerics::default()).unwrap();
    check(&p2, &[[2, 1, 1], [1, 2, 1], [3, 2, 1]], &devices);
    let p3 = lid_driven::<f64>(3, [33, 29, 31], 100.0, 1.0, Numerics::default()).unwrap();
    check(&p3, &[[1, 1, 2], [2, 1, 1], [1, 2, 2], [2, 2, 2]], &devices);
}

#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn buoyancy_driven_cavity_decomposed() {
    let devices = gpus();
    let bdc = HeatedCavity::nondimensional(1e5, 0.71, [0.0, -1.0, 0.0]).unwrap();
    let p3 = bdc
        .problem::<f64>(3, [25, 25, 25], Numerics::default())
        .unwrap();
    check(&p3, &[[1, 1, 2], [2, 2, 1]], &devices);
}

/// Fourth-order differences: blocks exchange two layers of every variable.
#[test]
#[ignore = "needs a GPU: run with --ignored, see README.md or scripts/gpu-check.sh"]
fn fourth_order_differences_decomposed() {
    let devices = gpus();
    let numerics = Numerics {
        differences: Differences::Fourth,
        ..Numerics::default()
    };
    let p2 = lid_driven::<f64>(2, [67, 61, 1], 100.0, 1.0, numerics).unwrap();
    check(&p2, &[[3, 2, 1]], &devices);
    let p3 = lid_driven::<f64>(3, [33, 29, 31], 100.0, 1.0, numerics).unwrap();
    check(&p3, &[[1, 1, 2], [2, 2, 2]], &devices);
    let bdc = HeatedCavity::nondimensional(1e5, 0.71, [0.0, -1.0, 0.0]).unwrap();
    check(
        &bdc.problem::<f64>(3, [25, 25, 25], numerics).unwrap(),
        &[[2, 2, 1]],
        &devices,
    );
}
