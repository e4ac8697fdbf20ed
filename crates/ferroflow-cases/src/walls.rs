//! A box (square or cube) whose sides are no-slip walls: the boundary patches of the structured
//! mesh, named `xmin`, `xmax`, `ymin`, `ymax`, `zmin`, `zmax`, each moving or at rest and
//! isothermal or adiabatic. Both cavities are such boxes: the lid-driven cavity moves `ymax`,
//! the buoyancy-driven cavity holds `xmin` hot and `xmax` cold.
use ferroflow_ac::{Energy, InitialRule, Numerics, Physics, Problem, SideBc};
use ferroflow_core::{Fields, Layout, ProblemError, Real, Side};
use std::sync::Arc;

/// Patch names of a box, in [`Side`] order (a 2D box has the first four).
pub const PATCHES: [&str; 6] = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"];

/// One side of the box: a no-slip wall.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Wall {
    /// Wall velocity (m/s); tangential to the wall.
    pub velocity: [f64; 3],
    /// Temperature of an isothermal wall; `None`: adiabatic (no heat flux).
    pub temperature: Option<f64>,
}

impl Wall {
    /// An adiabatic wall at rest.
    pub const REST: Wall = Wall {
        velocity: [0.0; 3],
        temperature: None,
    };

    /// Whether the wall moves.
    pub fn moves(&self) -> bool {
        self.velocity.iter().any(|&v| v != 0.0)
    }

    /// Its speed |velocity|.
    pub fn speed(&self) -> f64 {
        self.velocity.iter().map(|v| v * v).sum::<f64>().sqrt()
    }
}

/// The coldest and the hottest isothermal wall's temperatures, if they differ (their
/// difference is the Boussinesq ΔT, their mean T_ref).
pub fn temperature_range(walls: &[Wall]) -> Option<(f64, f64)> {
    let temperatures = walls.iter().filter_map(|w| w.temperature);
    let cold = temperatures.clone().fold(f64::INFINITY, f64::min);
    let hot = temperatures.fold(f64::NEG_INFINITY, f64::max);
    (hot > cold).then_some((cold, hot))
}

/// Whether a problem holds the whole grid's initial values, or only the rule that gives them
/// (for a grid cut into blocks over several processes, each of which evaluates its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// The whole grid's values (and the rule).
    Whole,
    /// The rule only (`initial` zeros never written).
    RuleOnly,
}

/// The box of side `length` on a `dim`-dimensional grid of `n` nodes per axis, with `walls`
/// (one per side, in [`PATCHES`] order; `2 dim` of them), the fluid at rest initially and, with
/// `energy`, at its reference temperature. Where walls meet (edges and corners), a moving
/// wall's velocity and an isothermal wall's temperature take precedence over a wall at rest or
/// an adiabatic one; between two moving (or two isothermal) walls the later in [`PATCHES`]
/// order wins. The initial state is the problem's rule; `values` says whether it is also
/// evaluated on the whole grid.
#[allow(clippy::too_many_arguments)]
pub fn box_problem<R: Real>(
    dim: usize,
    n: [usize; 3],
    length: f64,
    physics: Physics,
    numerics: Numerics,
    walls: &[Wall],
    energy: Option<Energy>,
    values: Values,
) -> Result<Problem<R>, ProblemError> {
    if !(2..=3).contains(&dim) {
        return Err(ProblemError::Dimension(dim));
    }
    assert_eq!(walls.len(), 2 * dim, "one wall per side");
    let layout = Layout::new(dim, n);
    let t = 1 + dim;
    let vars = t + energy.is_some() as usize;
    let sides: Vec<(Side, Wall)> = Side::ALL.into_iter().zip(walls.iter().cloned()).collect();
    let rule = InitialRule(Arc::new(move |node: [usize; 3], out: &mut [f64]| {
        out.fill(0.0);
        if let Some(e) = energy {
            out[t] = e.t_ref;
        }
        for (side, wall) in &sides {
            let axis = side.axis();
            let at = if side.is_high() {
                n[axis].saturating_sub(1)
            } else {
                0
            };
            if node[axis] != at {
                continue;
            }
            if wall.moves() {
                out[1..1 + dim].copy_from_slice(&wall.velocity[..dim]);
            }
            if let Some(temperature) = wall.temperature.filter(|_| energy.is_some()) {
                out[t] = temperature;
            }
        }
    }));
    let initial = match values {
        Values::Whole => rule.fields(layout, [0; 3], n, vars),
        Values::RuleOnly => Fields::zeros(layout, vars),
    };
    let mut problem = Problem::new(layout, [length; 3], physics, numerics, initial)?;
    problem.rule = Some(rule);
    if let Some(e) = energy {
        problem = problem.with_energy(e)?;
        for (side, wall) in Side::ALL.iter().zip(walls) {
            problem.sides[*side as usize] = match wall.temperature {
                Some(_) => SideBc::Wall,
                None => SideBc::AdiabaticWall,
            };
        }
    }
    Ok(problem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_core::decomposition::Decomposition;

    /// Blocks that evaluate the rule hold exactly what they would cut from the whole grid's
    /// values (ghost layers included), and a problem without the values answers for them.
    #[test]
    fn a_block_evaluates_the_values_it_would_cut() {
        let n = [9, 11, 8];
        let walls: Vec<Wall> = (0..6)
            .map(|s| Wall {
                velocity: if s == 3 { [1.0, 0.0, 0.5] } else { [0.0; 3] },
                temperature: [Some(2.0), Some(-1.5), None, None, None, Some(0.25)][s],
            })
            .collect();
        let energy = Some(Energy {
            diffusivity: 1e-3,
            buoyancy: [0.0, -1.0, 0.0],
            t_ref: 0.125,
        });
        let make = |values| {
            let physics = Physics {
                viscosity: 1e-2,
                density: 1.0,
            };
            let numerics = Numerics::default();
            box_problem::<f64>(3, n, 1.0, physics, numerics, &walls, energy, values).unwrap()
        };
        let (whole, lean) = (make(Values::Whole), make(Values::RuleOnly));
        assert!(lean
            .initial
            .vars
            .iter()
            .all(|v| v.iter().all(|x| x.to_bits() == 0)));
        let d = Decomposition::new(3, n, [2, 3, 2]).unwrap();
        let rule = lean.rule.as_ref().unwrap();
        for e in d.extents() {
            let cut = d.cut(&whole.initial, &e);
            let evaluated: Fields<f64> = rule.fields(e.layout(3), e.origin, n, 5);
            let bits = |f: &Fields<f64>| -> Vec<Vec<u64>> {
                f.vars
                    .iter()
                    .map(|v| v.iter().map(|x| x.to_bits()).collect())
                    .collect()
            };
            assert_eq!(bits(&evaluated), bits(&cut), "block {}", e.id);
        }
        whole.layout.for_each_node(|i, j, k, _| {
            for var in 0..5 {
                let node = [i, j, k];
                assert_eq!(
                    lean.initial_value(var, node),
                    whole.initial.at(var, i, j, k)
                );
            }
        });
    }
}
