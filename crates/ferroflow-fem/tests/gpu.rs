//! GPU tests of the finite elements' CUDA solver: the CPU's state bit for bit after steps of
//! the Ethier–Steinman solution (time-dependent boundary, one node setting the pressure's
//! level) and of the lid-driven cube (fixed pressure node, steady boundary; equal and local
//! time steps), with every matrix–vector variant giving the same bits, in f64 and in f32 (the
//! kernels do the CPU's operations in the same order in either precision). They need a GPU, so
//! `cargo test` ignores them; run with `--ignored` they fail where no GPU is usable.
use ferroflow_core::Real;
use ferroflow_cuda::probe;
use ferroflow_fem::cuda::{spmv_candidates, CudaFractional, CudaOptions, DeviceReal, TuneMode};
use ferroflow_fem::ethier_steinman::{solver, velocity};
use ferroflow_fem::fractional::{Controls, Fluid, FractionalStep};
use ferroflow_fem::lid_cube::cube;

/// Names the device, or fails: these tests are ignored unless asked for, and then need a GPU.
fn gpu() {
    let device = probe().unwrap_or_else(|why| panic!("no usable GPU: {why}"));
    println!("device: {device}");
}

/// Ethier–Steinman on the Kuhn-split cube [-1, 1]³ of `cells` cells per axis, ν = 1, with the
/// exact boundary velocity, in precision `R` with `controls`.
fn ethier<R: Real>(
    cells: usize,
    controls: Controls,
) -> (FractionalStep<R>, impl Fn(usize, f64) -> [f64; 3] + Sync) {
    let (s, nodes) = solver(cells, 1.0, controls).unwrap();
    (s, move |i: usize, t: f64| velocity(nodes[i], t, 1.0))
}

/// The controls of an f32 run: the CG tolerance above f32's round-off.
fn f32_controls() -> Controls {
    Controls {
        cg_tolerance: 1e-5,
        ..Controls::default()
    }
}

/// The bits of values widened to f64 (exact: equal bits in f64 are equal bits in `R`).
fn bits<R: Real>(u: &[[R; 3]], p: &[R]) -> Vec<u64> {
    u.as_flattened()
        .iter()
        .chain(p)
        .map(|v| v.f64().to_bits())
        .collect()
}

/// Steps `cpu` and a GPU copy of it `steps` times by the CPU's stability estimate (each
/// node's own with `local`, as `cpu`'s controls say), checking after each step that the time
/// steps, report, rates and state agree bit for bit.
fn agree<R: DeviceReal>(
    cpu: &mut FractionalStep<R>,
    boundary: &(dyn Fn(usize, f64) -> [f64; 3] + Sync),
    steps: usize,
    options: &CudaOptions,
    local: bool,
) {
    let mut gpu = CudaFractional::new(cpu, options).unwrap();
    let mut t = 0.0;
    for step in 0..steps {
        let own = cpu.local_time_steps();
        let dt = cpu.time_step();
        let (u0, p0) = (cpu.u.clone(), cpu.p.clone());
        assert_eq!(
            gpu.time_step().unwrap().to_bits(),
            dt.to_bits(),
            "step {step}"
        );
        let want = match local {
            true => cpu.advance(&own, dt, t, boundary),
            false => cpu.step(dt, t, boundary),
        };
        let got = gpu.step(dt, t, boundary).unwrap();
        if local {
            assert!(
                bits(&[], &gpu.time_steps().unwrap()) == bits(&[], &own),
                "step {step}"
            );
            assert!(
                own.iter().any(|&d| d.f64() > dt),
                "step {step}: all at {dt}"
            );
        }
        assert_eq!(got.pressure, want.pressure, "step {step}");
        assert_eq!(got.divergence.to_bits(), want.divergence.to_bits());
        assert_eq!(got.continuity.to_bits(), want.continuity.to_bits());
        assert!(want.pressure.converged && want.pressure.iterations > 3);
        let steps = match local {
            true => own.clone(),
            false => vec![R::of(dt); own.len()],
        };
        let (rate, pressure_rate) = cpu.rates(&u0, &p0, &steps);
        let largest = cpu
            .u
            .as_flattened()
            .iter()
            .fold(R::zero(), |m, c| c.abs().max(m));
        let changes = gpu.changes().unwrap().map(f64::to_bits);
        assert_eq!(
            changes,
            [rate, pressure_rate, largest.f64()].map(f64::to_bits),
            "step {step}"
        );
        assert!(rate > 0.0 && pressure_rate > 0.0, "step {step}");
        let (u, p) = gpu.state().unwrap();
        assert!(
            bits(&u, &p) == bits(&cpu.u, &cpu.p),
            "step {step}: the states differ"
        );
        t += dt;
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn ethier_steinman_steps_give_the_cpu_bits() {
    gpu();
    let (mut cpu, boundary) = ethier::<f64>(10, Controls::default());
    agree(&mut cpu, &boundary, 5, &CudaOptions::default(), false);
    let (mut cpu, boundary) = ethier::<f32>(10, f32_controls());
    agree(&mut cpu, &boundary, 5, &CudaOptions::default(), false);
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn lid_cube_steps_give_the_cpu_bits_with_every_product() {
    gpu();
    // Odd graph batches: a solve's end falls anywhere in a batch.
    for (k, shape) in spmv_candidates().into_iter().enumerate() {
        let options = CudaOptions {
            tune: TuneMode::Fixed(shape),
            graph_iterations: 2 + 2 * (k % 5),
            ..CudaOptions::default()
        };
        let (_, mut cpu, held) = cube::<f64>(12, 100.0, Controls::default()).unwrap();
        agree(&mut cpu, &|i, _| held[i], 3, &options, false);
        let (_, mut cpu, held) = cube::<f32>(12, 100.0, f32_controls()).unwrap();
        agree(&mut cpu, &|i, _| held[i], 3, &options, false);
        println!("{shape}: the CPU's bits in f64 and f32");
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn local_time_steps_give_the_cpu_bits() {
    gpu();
    let controls = Controls {
        local_time_steps: true,
        dt_max: 0.05,
        ..Controls::default()
    };
    let (_, mut cpu, held) = cube::<f64>(12, 1000.0, controls).unwrap();
    agree(&mut cpu, &|i, _| held[i], 6, &CudaOptions::default(), true);
    let controls = Controls {
        cg_tolerance: f32_controls().cg_tolerance,
        ..controls
    };
    let (_, mut cpu, held) = cube::<f32>(12, 1000.0, controls).unwrap();
    agree(&mut cpu, &|i, _| held[i], 6, &CudaOptions::default(), true);
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn a_cube_with_a_fixed_pressure_edge_gives_the_cpu_bits() {
    // As the seed's mesh: p = 0 on an edge of the bottom face, whose rows the penalty holds.
    gpu();
    let (mesh, _, held) = cube::<f64>(10, 100.0, Controls::default()).unwrap();
    let n = mesh.nodes.len();
    let mut fixed = vec![false; n];
    for (_, nodes) in mesh.faces.iter() {
        nodes.iter().for_each(|&i| fixed[i as usize] = true);
    }
    let edge: Vec<bool> = mesh
        .nodes
        .iter()
        .map(|x| x[1] == 0.0 && x[2] == 0.0)
        .collect();
    assert_eq!(edge.iter().filter(|&&e| e).count(), 11);
    let fluid = Fluid {
        viscosity: 0.01,
        density: 1.0,
    };
    let u = held.clone();
    let mut cpu = FractionalStep::new(
        &mesh,
        fluid,
        Controls::default(),
        fixed,
        edge,
        u,
        vec![0.0; n],
    )
    .unwrap();
    agree(&mut cpu, &|i, _| held[i], 3, &CudaOptions::default(), false);
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn tuning_times_every_product_and_keeps_the_state() {
    gpu();
    let (_, mut cpu, held) = cube::<f64>(16, 100.0, Controls::default()).unwrap();
    let options = CudaOptions {
        tune: TuneMode::Always,
        ..CudaOptions::default()
    };
    let mut gpu = CudaFractional::new(&cpu, &options).unwrap();
    let dt = cpu.time_step();
    cpu.step(dt, 0.0, &|i, _| held[i]);
    gpu.step(dt, 0.0, &|i, _| held[i]).unwrap();
    let report = gpu.tuning().unwrap();
    print!("{report}");
    assert_eq!(report.rows.len(), spmv_candidates().len());
    assert!(report.rows.iter().all(|r| r.seconds > 0.0));
    let (u, p) = gpu.state().unwrap();
    assert!(bits(&u, &p) == bits(&cpu.u, &cpu.p));
}
