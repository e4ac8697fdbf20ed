//! `ferroflow run` and `ferroflow check` of a finite-volume case (`case.solver =
//! "finite-volume"`): the compressible cell-centred solver of `ferroflow-fv` on the case's
//! mixed mesh, with the finite-element runs' job, output directory, progress, signals and
//! checkpoints.
use crate::mesh_job::MeshJob;
use crate::run::RunArgs;
use crate::world::World;
use crate::Failure;
use ferroflow_cases::fv::{FvCase, FvSetup, Scheme};

/// A finite-volume run, checked.
type FvJob = MeshJob<FvCase>;

/// The mesh and the solver at the start; errors name the key at fault.
fn setup(job: &FvJob) -> Result<FvSetup, Failure> {
    let case = &job.case;
    let mesh = (case.mesh()).map_err(|e| job.invalid(case.mesh_key(), e.to_string()))?;
    case.setup(mesh).map_err(|(key, e)| job.invalid(&key, e))
}

/// `ferroflow check` of a finite-volume case: the case resolved, the mesh built and the
/// solver set up (which checks the patches and the mesh), nothing stepped or written.
pub fn check(args: RunArgs) -> Result<(), Failure> {
    let world = World::alone();
    let job = FvJob::new(args, &world)?;
    let mut setup = setup(&job)?;
    let case = &job.case;
    let counts = setup.mesh.cells.counts();
    let kinds: Vec<String> = (counts.iter())
        .map(|(kind, n)| format!("{}: {n}", kind.name()))
        .collect();
    let g = &setup.solver.geometry;
    println!(
        "case {} (finite volumes), {} cells ({}), {} faces, f64",
        case.case.name,
        g.cells,
        kinds.join(", "),
        g.faces()
    );
    let patches: Vec<String> = (setup.mesh.patches.iter())
        .map(|name| format!("{name} ({})", serde_name(&case.patch_kind(name))))
        .collect();
    println!("patches: {}", patches.join(", "));
    let n = &case.numerics;
    let physics = match setup.solver.viscous {
        Some(_) => "Navier-Stokes",
        None => "Euler",
    };
    println!(
        "{physics}, γ = {}; {}, limiter {}, CFL {}",
        case.physics.gamma,
        serde_name(&n.scheme),
        serde_name(&n.limiter),
        n.cfl
    );
    let mut dt = vec![0.0; setup.state.len()];
    (setup.solver).time_steps(&setup.state, 0.0, n.cfl, &mut dt);
    let smallest = dt.iter().copied().fold(f64::INFINITY, f64::min);
    let stop = match n.scheme {
        Scheme::SspRk3 => format!("at t = {}", n.end_time),
        Scheme::RkLocal | Scheme::NewtonJacobi => {
            format!("steady at a residual drop of {:e}", n.residual_drop)
        }
    };
    println!(
        "stop: {stop}, at most {} iterations; smallest time step now {smallest:.4e}",
        n.max_iterations
    );
    job.print_check_end();
    Ok(())
}

/// How `value` is written in a case file.
fn serde_name(value: &impl serde::Serialize) -> String {
    toml::Value::try_from(value).map_or_else(|_| "?".into(), |v| v.as_str().unwrap_or("?").into())
}
