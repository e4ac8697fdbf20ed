//! What the fields of a finished run show, by kind of case: the centreline profiles, their
//! deviation from published data, and for a buoyancy-driven cavity its heat transfer.
use crate::case::{Classic, Model};
use crate::cavity::{self, Line};
use crate::convection::HeatTransfer;
use crate::reference::{self, Profile};
use crate::summary::Deviation;
use crate::Case;
use ferroflow_ac::Problem;
use ferroflow_core::{NodeValues, ProblemError, Real};

/// The post-processed results of a run.
#[derive(Debug, Clone)]
pub struct Results {
    /// u along y through the centre.
    pub u: Line,
    /// v along x through the centre.
    pub v: Line,
    /// Published centreline profiles for this case, if there are any.
    pub reference: Option<(Profile, Profile)>,
    /// Largest deviation of each profile from the published one.
    pub deviations: Vec<Deviation>,
    /// Buoyancy-driven cavity: Nusselt numbers, energy balance, velocity maxima.
    pub heat_transfer: Option<HeatTransfer>,
    /// What the case is, in a line (for plot titles).
    pub title: String,
}

/// Post-processes `fields` (pressure referenced) of `case`, solved as `problem`.
pub fn post_process<R: Real>(
    case: &Case,
    problem: &Problem<R>,
    fields: &dyn NodeValues,
) -> Result<Results, ProblemError> {
    let (u, v) = cavity::centrelines(problem, fields);
    let mut heat_transfer = None;
    let parameters = match case.physics.model {
        Model::Incompressible => format!("Re = {}", case.physics.reynolds),
        Model::Boussinesq => {
            let cavity = case.heated_cavity()?;
            // The wall Nusselt numbers are those of the hot xmin and the cold xmax wall.
            if case.classic() == Some(Classic::HeatedCavity) {
                heat_transfer = Some(cavity.report(problem, fields));
            }
            format!("Ra = {:.4e}, Pr = {}", cavity.rayleigh, cavity.prandtl)
        }
    };
    let grid: Vec<String> = case.mesh.nodes.iter().map(|n| n.to_string()).collect();
    let title = format!(
        "{}: {parameters}, {} nodes",
        case.case.name,
        grid.join(" x ")
    );
    let reference = reference_profiles(case);
    let deviations = (reference.as_ref()).map_or_else(Vec::new, |r| deviations(&u, &v, r));
    Ok(Results {
        u,
        v,
        reference,
        deviations,
        heat_transfer,
        title,
    })
}

/// Published centreline profiles for the case's Reynolds number, if it is the lid-driven
/// cavity and there are any.
pub fn reference_profiles(case: &Case) -> Option<(Profile, Profile)> {
    let re = case.physics.reynolds;
    if case.classic() != Some(Classic::LidDrivenCavity) || re.fract() != 0.0 {
        None
    } else if case.mesh.dim == 2 {
        reference::ghia(re as u32)
    } else {
        reference::albensoeder_kuhlmann(re as u32)
    }
}

/// The largest deviation of the centreline profiles `u` (along y) and `v` (along x) from the
/// published ones, `reference`.
pub fn deviations(u: &Line, v: &Line, reference: &(Profile, Profile)) -> Vec<Deviation> {
    let (ref_u, ref_v) = reference;
    [("u(y) at x = 0.5", u, ref_u), ("v(x) at y = 0.5", v, ref_v)]
        .into_iter()
        .map(|(profile, computed, r)| {
            let (dev, at) = cavity::max_deviation(computed, r);
            Deviation {
                profile: profile.into(),
                source: r.source.into(),
                max_abs_deviation: dev,
                at,
            }
        })
        .collect()
}
