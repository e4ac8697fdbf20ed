//! Whether the scheme resolves a case in its precision (see
//! `ferroflow_ac::Problem::check_resolvable`), as an error that names the case's input at
//! fault: its first residuals would otherwise underflow to zero, which reads as convergence.
use crate::case::{CaseKind, Inputs, PhysicsSpec};
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
    let ph = &case.physics;
    let (name, value) = match (case.case.kind, why) {
        (_, Unresolvable::Cfl { .. }) => ("numerics.cfl", case.numerics.cfl),
        // The step depends on Re alone, the residuals' scale mostly on U.
        (CaseKind::LidDrivenCavity, Unresolvable::Step { .. }) => ("physics.reynolds", ph.reynolds),
        (CaseKind::LidDrivenCavity, Unresolvable::Scale { .. }) => {
            ("physics.lid_velocity", ph.lid_velocity)
        }
        (CaseKind::BuoyancyDrivenCavity, _) => farthest_from_default(ph),
    };
    Err(ProblemError::OutOfRange {
        name,
        value,
        allowed: match why {
            Unresolvable::Step { .. } | Unresolvable::Cfl { .. } => STEP,
            Unresolvable::Scale { .. } => SCALE,
        },
    })
}

/// The buoyancy-driven cavity's input farthest (in decades) from its default, the likely
/// cause when several inputs together set the limits.
fn farthest_from_default(ph: &PhysicsSpec) -> (&'static str, f64) {
    let d = PhysicsSpec::default();
    let g = |v: [f64; 3]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let inputs = match ph.inputs {
        Inputs::Nondimensional => vec![
            ("physics.rayleigh", ph.rayleigh, d.rayleigh),
            ("physics.prandtl", ph.prandtl, d.prandtl),
        ],
        Inputs::Dimensional => vec![
            ("physics.length", ph.length, d.length),
            ("physics.gravity", g(ph.gravity), g(d.gravity)),
            ("physics.expansion", ph.expansion, d.expansion),
            ("physics.viscosity", ph.viscosity, d.viscosity),
            ("physics.prandtl", ph.prandtl, d.prandtl),
            ("physics.delta_t", ph.delta_t, d.delta_t),
        ],
    };
    let decades = |(_, v, d): &(&str, f64, f64)| (v / d).log10().abs();
    let (name, value, _) = inputs
        .into_iter()
        .reduce(|a, b| if decades(&b) > decades(&a) { b } else { a })
        .expect("every kind of inputs has some");
    (name, value)
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
            "physics.lid_velocity" => &mut ph.lid_velocity,
            "physics.viscosity" => &mut ph.viscosity,
            "physics.rayleigh" => &mut ph.rayleigh,
            _ => unreachable!("{key}"),
        } = value;
        case.grid.nodes = vec![9; case.grid.dim];
        let problem = case.problem::<f64>().unwrap();
        check_resolvable(&case, &problem).err()
    }

    #[test]
    fn inputs_whose_residuals_vanish_are_named() {
        for (case, key, value) in [
            ("cavity2d-re100", "physics.reynolds", 1e300),
            ("cavity2d-re100", "physics.lid_velocity", 1e-80),
            ("cavity2d-re100", "physics.lid_velocity", 1e80),
            ("bdc3d", "physics.viscosity", 1e-200),
            ("bdc2d", "physics.rayleigh", 1e150),
            ("bdc2d", "numerics.cfl", 1e-30),
        ] {
            match refused(case, key, value) {
                Some(ProblemError::OutOfRange { name, value: v, .. }) => {
                    assert_eq!((name, v), (key, value), "{case}")
                }
                other => panic!("{case} {key} = {value}: {other:?}"),
            }
        }
        // Far from the defaults, but resolvable.
        for (case, key, value) in [
            ("cavity2d-re100", "physics.reynolds", 1e8),
            ("cavity2d-re100", "physics.reynolds", 1e-3),
            ("cavity2d-re100", "physics.lid_velocity", 1e-40),
            ("bdc3d", "physics.viscosity", 1e-9),
            ("bdc2d", "physics.rayleigh", 1e10),
            ("cavity2d-re100", "numerics.cfl", 1e-12),
        ] {
            assert_eq!(refused(case, key, value), None, "{case} {key} = {value}");
        }
    }
}
