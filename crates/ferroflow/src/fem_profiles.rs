//! What a finite-element run of the lid-driven cube shows, as a structured cavity run's: its
//! centreline profiles in `centerline_u.csv` (y, u) and `centerline_v.csv` (x, v), in the
//! lid's units, plotted with the published ones in `centerlines.png`, and their deviation
//! from those for the summary.
use crate::plot;
use crate::results::OutputDir;
use ferroflow_cases::fem::{FemCase, FemSetup};
use ferroflow_cases::fem_centrelines::LidCube;
use ferroflow_cases::post::deviations;
use ferroflow_cases::summary::{write_profile, Deviation};
use ferroflow_core::Real;
use std::io;

/// Writes the profiles of `setup`'s state into `out` if `case` is the lid cube (nothing
/// otherwise), and returns their deviations from the published ones (none where there are
/// none).
pub fn write<R: Real>(
    out: &OutputDir,
    case: &FemCase,
    setup: &FemSetup<R>,
) -> io::Result<Vec<Deviation>> {
    let Some(lid) = LidCube::of(case) else {
        return Ok(Vec::new());
    };
    let velocity: Vec<[f64; 3]> = (setup.solver.u.iter())
        .map(|v| v.map(|c| c.f64()))
        .collect();
    let (u, v) = lid.centrelines(&setup.mesh, &velocity);
    write_profile(&out.join("centerline_u.csv"), ["y", "u"], &u)?;
    write_profile(&out.join("centerline_v.csv"), ["x", "v"], &v)?;
    let reference = lid.reference();
    let title = format!(
        "{}: Re = {}, {} nodes, centreline profiles",
        case.case.name,
        lid.reynolds,
        setup.mesh.nodes.len()
    );
    let path = out.join("centerlines.png");
    plot::centrelines(&path, &title, &u, &v, reference.as_ref())?;
    Ok((reference.as_ref()).map_or_else(Vec::new, |r| deviations(&u, &v, r)))
}
