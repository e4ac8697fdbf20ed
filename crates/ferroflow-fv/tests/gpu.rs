//! GPU tests of the finite volumes' CUDA solver: after steady iterations on jittered boxes of
//! hexahedra, tetrahedra and prisms (a shock tube between slip walls; a flow between moving,
//! adiabatic and isothermal walls and an outflow, inviscid and viscous; a flow from a
//! total-pressure inflow through far fields, inviscid and with Sutherland's law), the GPU's
//! state is the CPU's bit for bit, and so is the bump's; one residual is the CPU's with
//! stored fluxes and agrees to rounding with atomics and in colours; a gas other than air (whose isentropic
//! powers are the device's `pow`) agrees to rounding. They need a GPU, so `cargo test`
//! ignores them; run with `--ignored` they fail where no GPU is usable.
use ferroflow_cuda::probe;
use ferroflow_fv::cuda::{CudaOptions, CudaSolver, FaceLoop};
use ferroflow_fv::gas::Cons;
use ferroflow_fv::time::{steady, FOUR_STAGE};
use ferroflow_fv::{bump, Boundary, Gas, Limiter, Solver, Viscosity, Viscous};
use ferroflow_mesh::generate::{box_mesh, jitter, BoxCells, SIDES};

/// Names the device, or fails: these tests are ignored unless asked for, and then need a GPU.
fn gpu() {
    let device = probe().unwrap_or_else(|why| panic!("no usable GPU: {why}"));
    println!("device: {device}");
}

const KINDS: [BoxCells; 3] = [BoxCells::Hex, BoxCells::Tet6, BoxCells::Prism];

type Case = (Solver, Vec<Cons>);

/// A case on a mesh of given cells and limiter.
type Setup = fn(BoxCells, Limiter) -> Case;

/// A jittered box of `kind` cells with the conditions `bcs` (by side) and the state `w(x)`.
fn case(
    kind: BoxCells,
    bcs: [Boundary; 6],
    limiter: Limiter,
    w: impl FnMut([f64; 3]) -> [f64; 5],
) -> Case {
    let mut mesh = box_mesh(kind, [10, 4, 3], [1.0, 0.4, 0.3]).unwrap();
    jitter(&mut mesh, 0.2, 7).unwrap();
    let named: Vec<(&str, Boundary)> = SIDES.into_iter().zip(bcs).collect();
    let s = Solver::new(&mesh, Gas::AIR, limiter, &named).unwrap();
    let u = s.sample(w);
    (s, u)
}

fn shock_tube(kind: BoxCells, limiter: Limiter) -> Case {
    case(kind, [Boundary::SlipWall; 6], limiter, |x| {
        if x[0] + 0.2 * x[1] < 0.5 {
            [1.0, 0.1, 0.2, -0.1, 1.0]
        } else {
            [0.125, 0.0, -0.1, 0.05, 0.1]
        }
    })
}

fn walls(kind: BoxCells, limiter: Limiter) -> Case {
    let bcs = [
        Boundary::AdiabaticWall {
            velocity: [0.0, 0.1, 0.0],
        },
        Boundary::Outflow(0.6),
        Boundary::IsothermalWall {
            velocity: [0.2, 0.0, 0.05],
            temperature: 1.1,
        },
        Boundary::SlipWall,
        Boundary::SlipWall,
        Boundary::SlipWall,
    ];
    case(kind, bcs, limiter, |x| {
        wave(x, [1.0, 0.4, 0.0, -0.05, 0.7], 0.2)
    })
}

/// A smooth wave about `mean`: ρ and p vary by `amplitude`, u by 0.1, v grows by 0.1 z.
fn wave(x: [f64; 3], mean: [f64; 5], amplitude: f64) -> [f64; 5] {
    let s = (6.0 * x[0]).sin() * (9.0 * x[1]).cos();
    [
        mean[0] + amplitude * s,
        mean[1] + 0.1 * s,
        mean[2] + 0.1 * x[2],
        mean[3],
        mean[4] + amplitude * s,
    ]
}

/// The walls' flow, Navier–Stokes with a constant viscosity (slip walls pass the normal
/// stress only).
fn viscous_walls(kind: BoxCells, limiter: Limiter) -> Case {
    let (mut s, u) = walls(kind, limiter);
    s.viscous = Some(Viscous::air(Viscosity::Constant(0.02)));
    (s, u)
}

/// A stream along x with some y entering by a total-pressure inflow at x = 0 and leaving
/// through far fields; slip walls in z.
fn far_fields(kind: BoxCells, limiter: Limiter) -> Case {
    let free = [1.0, 0.5, 0.1, 0.0, 1.0 / 1.4];
    let inflow = Boundary::Inflow {
        p0: 1.0,
        t0: 1.0,
        direction: [0.96, 0.28, 0.0],
    };
    let far = Boundary::FarField(free);
    let bcs = [
        inflow,
        far,
        far,
        far,
        Boundary::SlipWall,
        Boundary::SlipWall,
    ];
    case(kind, bcs, limiter, |x| {
        wave(x, [1.0, 0.5, 0.0, 0.05, 0.7], 0.1)
    })
}

/// The far fields' flow, Navier–Stokes with Sutherland's law.
fn sutherland_far_fields(kind: BoxCells, limiter: Limiter) -> Case {
    let (mut s, u) = far_fields(kind, limiter);
    let law = Viscosity::Sutherland {
        mu: 0.02,
        t: 1.0,
        s: 110.0 / 288.15,
    };
    s.viscous = Some(Viscous::air(law));
    (s, u)
}

fn bits(u: &[Cons]) -> Vec<u64> {
    u.iter().flatten().map(|x| x.to_bits()).collect()
}

/// Largest |a − b| over the largest |b|.
fn relative(a: &[Cons], b: &[Cons]) -> f64 {
    let scale = b.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
    let diff = (a.iter().flatten())
        .zip(b.iter().flatten())
        .fold(0.0f64, |m, (x, y)| m.max((x - y).abs()));
    diff / scale
}

/// What both ran: the GPU's state, the CPU's, the GPU's history and the CPU's.
type Runs = (Vec<Cons>, Vec<Cons>, Vec<f64>, Vec<f64>);

/// `iterations` steady iterations on the CPU and on the GPU from the same state.
fn both((mut s, mut u): Case, iterations: usize) -> Runs {
    let mut gpu = CudaSolver::new(&s, &u, &CudaOptions::default()).unwrap();
    let want = steady(&mut s, &mut u, 1.5, &FOUR_STAGE, (0.0, iterations));
    let got = gpu.steady(1.5, &FOUR_STAGE, (0.0, iterations)).unwrap();
    assert_eq!(got.iterations, want.iterations);
    (gpu.state().unwrap(), u, got.history, want.history)
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn steady_iterations_give_the_cpu_bits_on_every_cell_kind() {
    gpu();
    let setups: [(&str, Setup); 5] = [
        ("shock tube", shock_tube),
        ("walls and outflow", walls),
        ("viscous walls and outflow", viscous_walls),
        ("inflow and far fields", far_fields),
        ("Sutherland, inflow and far fields", sutherland_far_fields),
    ];
    for kind in KINDS {
        for (name, setup) in setups {
            for limiter in [Limiter::VanAlbada, Limiter::None] {
                let start = setup(kind, limiter).1;
                let (got, want, got_history, want_history) = both(setup(kind, limiter), 6);
                assert!(
                    bits(&got) == bits(&want),
                    "{kind:?} {name} {limiter:?}: the states differ by {:e}",
                    relative(&got, &want)
                );
                // The flow has moved: the test compares a flow, not the initial state.
                assert!(relative(&want, &start) > 1e-3, "{kind:?} {name}");
                // The norms' summation orders differ (cells in turn; blocks and a tree).
                for (g, w) in got_history.iter().zip(&want_history) {
                    assert!((g - w).abs() <= 1e-13 * w.abs(), "{name}: {g} against {w}");
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn a_residual_is_the_cpus_with_stored_fluxes_and_to_rounding_with_atomics_and_colours() {
    gpu();
    for kind in KINDS {
        let (mut s, u) = walls(kind, Limiter::VanAlbada);
        let mut want = vec![[0.0; 5]; u.len()];
        s.residual(&u, 0.0, &mut want);
        let options = CudaOptions {
            face_loop: FaceLoop::Coloured,
            ..CudaOptions::default()
        };
        let mut gpu = CudaSolver::new(&s, &u, &options).unwrap();
        let stored = gpu.residual(FaceLoop::Stored).unwrap();
        assert!(
            bits(&stored) == bits(&want),
            "{kind:?}: stored fluxes differ"
        );
        for how in [FaceLoop::Atomic, FaceLoop::Coloured] {
            let e = relative(&gpu.residual(how).unwrap(), &want);
            assert!(e < 1e-14, "{kind:?}: {how:?} differs by {e:e}");
        }
    }
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn the_bump_gives_the_cpu_bits() {
    gpu();
    let setup = bump::setup(24, Limiter::VanAlbada).unwrap();
    let start = setup.1.clone();
    let (got, want, _, _) = both(setup, 50);
    assert!(
        bits(&got) == bits(&want),
        "the bump's states differ by {:e}",
        relative(&got, &want)
    );
    assert!(relative(&want, &start) > 1e-4);
}

#[test]
#[ignore = "needs a GPU: run with --ignored"]
fn a_gas_other_than_air_agrees_to_rounding() {
    gpu();
    let (mut s, u) = sutherland_far_fields(BoxCells::Hex, Limiter::VanAlbada);
    s.gas = Gas { gamma: 1.3 };
    let (got, want, _, _) = both((s, u), 20);
    let total = 5 * want.len();
    let differing = (bits(&got).iter().zip(bits(&want)))
        .filter(|(a, b)| *a != b)
        .count();
    let e = relative(&got, &want);
    println!("γ = 1.3: {differing} numbers of {total} differ, by {e:e} at most");
    assert!(e < 1e-12, "the states differ by {e:e}");
}
