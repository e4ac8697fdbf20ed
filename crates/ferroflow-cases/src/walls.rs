//! A box (square or cube) whose sides are no-slip walls: the boundary patches of the structured
//! mesh, named `xmin`, `xmax`, `ymin`, `ymax`, `zmin`, `zmax`, each moving or at rest and
//! isothermal or adiabatic. Both cavities are such boxes: the lid-driven cavity moves `ymax`,
//! the buoyancy-driven cavity holds `xmin` hot and `xmax` cold.
use ferroflow_ac::{Energy, Numerics, Physics, Problem, SideBc};
use ferroflow_core::{Fields, Layout, ProblemError, Real, Side};

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

/// The box of side `length` on a `dim`-dimensional grid of `n` nodes per axis, with `walls`
/// (one per side, in [`PATCHES`] order; `2 dim` of them), the fluid at rest initially and, with
/// `energy`, at its reference temperature. Where walls meet (edges and corners), a moving
/// wall's velocity and an isothermal wall's temperature take precedence over a wall at rest or
/// an adiabatic one; between two moving (or two isothermal) walls the later in [`PATCHES`]
/// order wins.
pub fn box_problem<R: Real>(
    dim: usize,
    n: [usize; 3],
    length: f64,
    physics: Physics,
    numerics: Numerics,
    walls: &[Wall],
    energy: Option<Energy>,
) -> Result<Problem<R>, ProblemError> {
    if !(2..=3).contains(&dim) {
        return Err(ProblemError::Dimension(dim));
    }
    assert_eq!(walls.len(), 2 * dim, "one wall per side");
    let layout = Layout::new(dim, n);
    let t = 1 + dim;
    let mut initial = Fields::zeros(layout, t + energy.is_some() as usize);
    if let Some(e) = energy {
        initial.vars[t].fill(R::of(e.t_ref));
    }
    for (side, wall) in Side::ALL.iter().zip(walls) {
        let axis = side.axis();
        let at = if side.is_high() {
            n[axis].saturating_sub(1)
        } else {
            0
        };
        let temperature = wall.temperature.filter(|_| energy.is_some());
        if !wall.moves() && temperature.is_none() {
            continue;
        }
        layout.for_each_node(|i, j, k, o| {
            if [i, j, k][axis] != at {
                return;
            }
            if wall.moves() {
                for d in 0..dim {
                    initial.vars[1 + d][o] = R::of(wall.velocity[d]);
                }
            }
            if let Some(temperature) = temperature {
                initial.vars[t][o] = R::of(temperature);
            }
        });
    }
    let mut problem = Problem::new(layout, [length; 3], physics, numerics, initial)?;
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
