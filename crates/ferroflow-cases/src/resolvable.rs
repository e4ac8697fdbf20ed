//! Whether the scheme resolves a case in its precision (see
//! `ferroflow_ac::Problem::check_resolvable`), as an error that names the case's input at
//! fault: its first residuals would otherwise underflow to zero, which reads as convergence.
use crate::case::{Inputs, Model, PhysicsSpec};
use crate::walls::PATCHES;
use crate::Case;
use ferroflow_ac::{Problem, Unresolvable};
use ferroflow_core::{ProblemError, Real};

/// What a value the step check refuses would need.
const STEP: &str = "a value at which a pseudo-time step at rest moves the flow by more than the \
    round-off of the precision (at this value one step moves it less: nothing converges)";

/// What a value the scale check refuses would need.
const SCALE: &str = "a value at which the residuals stay within the range of the precision and \
    of their squares (at this value they underflow or overflow; the solution depends on the \
    dimensionless numbers only, so inputs nearer 1 give the same flow)";

/// Checks that `problem`, built from `case`, is resolvable; the error names the input of the
/// case that puts it out of range.
pub fn check_resolvable<R: Real>(case: &Case, problem: &Problem<R>) -> Result<(), ProblemError> {
    let Err(why) = problem.check_resolvable() else {
        return Ok(());
    };
    let allowed = match why {
        Unresolvable::Step { .. } | Unresolvable::Cfl { .. } => STEP,
        Unresolvable::Scale { .. } => SCALE,
    };
    let ph = &case.physics;
    let (name, value) = match (ph.model, why) {
        (_, Unresolvable::Cfl { .. }) => ("numerics.cfl".to_string(), case.numerics.cfl),
        // The step depends on Re alone, the residuals' scale mostly on U: the fastest wall's.
        (Model::Incompressible, Unresolvable::Step { .. }) => {
            ("physics.reynolds".to_string(), ph.reynolds)
        }
        (Model::Incompressible, Unresolvable::Scale { .. }) => {
            let walls = case.walls()?;
            let (side, wall) = walls
                .iter()
                .enumerate()
                .max_by(|a, b| a.1.speed().total_cmp(&b.1.speed()))
                .expect("a box has walls");
            (format!("boundary.{}.velocity", PATCHES[side]), wall.speed())
        }
        (Model::Boussinesq, _) => farthest_from_default(case),
    };
    Err(ProblemError::key(
        name,
        format!("{value:e} is out of range: {allowed}"),
    ))
}

/// The buoyancy-driven cavity's input farthest (in decades) from its default, the likely
/// cause when several inputs together set the limits.
fn farthest_from_default(case: &Case) -> (String, f64) {
    let (ph, d) = (&case.physics, PhysicsSpec::default());
    let g = |v: [f64; 3]| v[0].hypot(v[1]).hypot(v[2]);
    let inputs = match ph.inputs {
        Inputs::Nondimensional => vec![
            ("physics.rayleigh", ph.rayleigh, d.rayleigh),
            ("physics.prandtl", ph.prandtl, d.prandtl),
        ],
        Inputs::Dimensional => {
            let delta_t = case.heated_cavity().map_or(1.0, |c| c.delta_t);
            vec![
                ("mesh.length", case.mesh.length, 0.05),
                ("physics.gravity", g(ph.gravity), g(d.gravity)),
                ("physics.expansion", ph.expansion, d.expansion),
                ("physics.viscosity", ph.viscosity, d.viscosity),
                ("physics.prandtl", ph.prandtl, d.prandtl),
                ("boundary", delta_t, 7.6009),
            ]
        }
    };
    let decades = |(_, v, d): &(&str, f64, f64)| (v / d).log10().abs();
    let (name, value, _) = inputs
        .into_iter()
        .reduce(|a, b| if decades(&b) > decades(&a) { b } else { a })
        .expect("every kind of inputs has some");
    (name.to_string(), value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::builtin;

    /// The error `check_resolvable` gives for `case` with `key = value`, in f64.
    fn refused(case: &str, key: &str, value: f64) -> Option<ProblemError> {
        let mut case = builtin(case).unwrap();
        let ph = &mut case.physics;
        *match key {
            "numerics.cfl" => &mut case.numerics.cfl,
            "physics.reynolds" => &mut ph.reynolds,
            "boundary.ymax.velocity" => &mut case.boundary.get_mut("ymax").unwrap().velocity[0],
            "physics.viscosity" => &mut ph.viscosity,
            "physics.rayleigh" => &mut ph.rayleigh,
            _ => unreachable!("{key}"),
        } = value;
        case.mesh.nodes = vec![9; case.mesh.dim];
        let problem = case.problem::<f64>().unwrap();
        check_resolvable(&case, &problem).err()
    }

    #[test]
    fn inputs_whose_residuals_vanish_are_named() {
        for (case, key, value) in [
            ("cavity2d-re100", "physics.reynolds", 1e300),
            ("cavity2d-re100", "boundary.ymax.velocity", 1e-80),
            ("cavity2d-re100", "boundary.ymax.velocity", 1e80),
            ("bdc3d", "physics.viscosity", 1e-30),
            ("bdc2d", "physics.rayleigh", 1e150),
            ("bdc2d", "numerics.cfl", 1e-30),
        ] {
            match refused(case, key, value) {
                Some(ProblemError::Key { key: k, message }) => {
                    assert_eq!(k, key, "{case}");
                    assert!(message.starts_with(&format!("{value:e} ")), "{message}");
                }
                other => panic!("{case} {key} = {value}: {other:?}"),
            }
        }
        // Far from the defaults, but resolvable.
        for (case, key, value) in [
            ("cavity2d-re100", "physics.reynolds", 1e8),
            ("cavity2d-re100", "physics.reynolds", 1e-3),
            ("cavity2d-re100", "boundary.ymax.velocity", 1e-40),
            ("bdc3d", "physics.viscosity", 1e-9),
            ("bdc2d", "physics.rayleigh", 1e10),
            ("cavity2d-re100", "numerics.cfl", 1e-12),
        ] {
            assert_eq!(refused(case, key, value), None, "{case} {key} = {value}");
        }
    }
}
