//! Buoyancy-driven (differentially heated) cavity: the square or cube of side L, hot wall
//! x = 0 at T = +ΔT/2, cold wall x = L at T = −ΔT/2, the other walls adiabatic, all no-slip,
//! fluid at rest at T_ref = 0 initially; the Boussinesq source −β_T T g⃗ drives the flow.
//! Temperatures are measured from the mean of the wall temperatures.
//!
//! Nondimensional inputs (Ra, Pr) take the length L, the temperature difference ΔT and the
//! diffusion velocity α/L as units: α = 1, ν = Pr, β_T |g| = Ra Pr, and velocities come out
//! in units of α/L, as in de Vahl Davis (1983). Dimensional inputs give Ra = |g| β_T ΔT L³ /
//! (ν α) with α = ν / Pr. Either way the velocity scale U_ref of the artificial
//! compressibility is the free-fall velocity sqrt(|g| β_T ΔT L) (sqrt(Ra Pr) α/L), which
//! bounds the buoyant velocities (the largest is about a quarter of it at Ra = 1e5).
//!
//! Post-processing: local Nusselt numbers Nu = −∂T/∂x · L/ΔT on the hot and cold walls from
//! second-order one-sided wall gradients, their means by the trapezoidal rule, their extremes;
//! the energy balance (heat in through the hot wall against heat out through the cold one); and
//! the largest velocity component normal to each mid-plane (u on x = L/2, v on y = L/2, w on
//! z = L/2), with positions.
use crate::cavity::interpolate;
use crate::reference;
use crate::walls::{box_problem, temperature_range, Values, Wall};
use ferroflow_ac::{Differences, Energy, Numerics, Physics, Problem};
use ferroflow_core::{NodeValues, ProblemError, Real, Side};
use serde::Serialize;

/// The walls of the differentially heated cavity: `xmin` at +ΔT/2, `xmax` at −ΔT/2, the
/// others adiabatic, all at rest.
pub fn heated_walls(dim: usize, delta_t: f64) -> Vec<Wall> {
    let mut walls = vec![Wall::REST; 2 * dim];
    walls[Side::XLo as usize].temperature = Some(0.5 * delta_t);
    walls[Side::XHi as usize].temperature = Some(-0.5 * delta_t);
    walls
}

/// The error of walls without a temperature range ([`temperature_range`]).
pub fn no_temperature_range() -> ProblemError {
    ProblemError::key(
        "boundary",
        "the Boussinesq model needs isothermal walls (thermal = \"isothermal\") of at least two \
         temperatures: the hottest minus the coldest is ΔT",
    )
}

/// Resolved physical parameters of a buoyancy-driven cavity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeatedCavity {
    /// Rayleigh number |g| β_T ΔT L³ / (ν α).
    pub rayleigh: f64,
    /// Prandtl number ν / α.
    pub prandtl: f64,
    /// Side L (m; 1 when nondimensional).
    pub length: f64,
    /// Temperature difference ΔT between the hot and the cold wall (K; 1 when nondimensional).
    pub delta_t: f64,
    /// Kinematic viscosity ν.
    pub viscosity: f64,
    /// Thermal diffusivity α.
    pub diffusivity: f64,
    /// −β_T g⃗ per axis.
    pub buoyancy: [f64; 3],
}

/// Length of a vector, without overflow where it is finite (exact for one non-zero component).
fn length3(v: [f64; 3]) -> f64 {
    v[0].hypot(v[1]).hypot(v[2])
}

/// Length of `gravity`, which must be finite and not zero.
fn magnitude(gravity: [f64; 3]) -> Result<f64, ProblemError> {
    let g = length3(gravity);
    ProblemError::positive("physics.gravity", g)
}

impl HeatedCavity {
    /// Nondimensional: L = 1, ΔT = 1, α = 1, ν = Pr, buoyancy Ra Pr along −`gravity`'s
    /// direction (its length does not matter).
    pub fn nondimensional(
        rayleigh: f64,
        prandtl: f64,
        gravity: [f64; 3],
    ) -> Result<HeatedCavity, ProblemError> {
        let rayleigh = ProblemError::positive("physics.rayleigh", rayleigh)?;
        let prandtl = ProblemError::positive("physics.prandtl", prandtl)?;
        let g = magnitude(gravity)?;
        // The free-fall velocity sqrt(Ra Pr) α/L is the scheme's velocity scale.
        if !(rayleigh * prandtl).sqrt().is_finite() {
            return Err(ProblemError::key(
                "physics.rayleigh",
                format!(
                    "{rayleigh:e} with Pr = {prandtl}: Ra Pr overflows (the free-fall velocity \
                     sqrt(Ra Pr) α/L must be finite)"
                ),
            ));
        }
        Ok(HeatedCavity {
            rayleigh,
            prandtl,
            length: 1.0,
            delta_t: 1.0,
            viscosity: prandtl,
            diffusivity: 1.0,
            buoyancy: gravity.map(|x| -rayleigh * prandtl * x / g),
        })
    }

    /// Dimensional: side `length` (m), `gravity` (m/s²), expansion coefficient β_T (1/K),
    /// viscosity ν (m²/s), Prandtl number (α = ν / Pr), temperature difference ΔT (K).
    pub fn dimensional(
        length: f64,
        gravity: [f64; 3],
        expansion: f64,
        viscosity: f64,
        prandtl: f64,
        delta_t: f64,
    ) -> Result<HeatedCavity, ProblemError> {
        let length = ProblemError::positive("physics.length", length)?;
        let g = magnitude(gravity)?;
        let expansion = ProblemError::positive("physics.expansion", expansion)?;
        let viscosity = ProblemError::positive("physics.viscosity", viscosity)?;
        let prandtl = ProblemError::positive("physics.prandtl", prandtl)?;
        let delta_t = ProblemError::positive("physics.delta_t", delta_t)?;
        let diffusivity = viscosity / prandtl;
        let rayleigh = g * expansion * delta_t * length.powi(3) / (viscosity * diffusivity);
        let free_fall = (g * expansion * delta_t * length).sqrt();
        if !(rayleigh.is_finite() && diffusivity > 0.0 && free_fall.is_finite() && free_fall > 0.0)
        {
            return Err(ProblemError::key(
                "physics",
                format!(
                    "physics.length = {length:e}, |physics.gravity| = {g:e}, physics.expansion = \
                     {expansion:e}, physics.viscosity = {viscosity:e}, physics.prandtl = \
                     {prandtl:e} and ΔT = {delta_t:e} give Ra = {rayleigh:e}, α = ν / Pr = \
                     {diffusivity:e} and the free-fall velocity sqrt(|g| β_T ΔT L) = \
                     {free_fall:e}: all must be finite and above zero (an overflow or underflow \
                     of f64)"
                ),
            ));
        }
        Ok(HeatedCavity {
            rayleigh,
            prandtl,
            length,
            delta_t,
            viscosity,
            diffusivity,
            buoyancy: gravity.map(|x| -expansion * x),
        })
    }

    /// Free-fall velocity sqrt(|g| β_T ΔT L): the velocity scale U_ref of the scheme.
    pub fn velocity_scale(&self) -> f64 {
        let b = length3(self.buoyancy);
        (b * self.delta_t * self.length).sqrt()
    }

    /// The differentially heated cavity ([`heated_walls`]) on a `dim`-dimensional grid
    /// of `n` nodes per axis; `numerics.u_ref` is replaced by [`HeatedCavity::velocity_scale`].
    pub fn problem<R: Real>(
        &self,
        dim: usize,
        n: [usize; 3],
        numerics: Numerics,
    ) -> Result<Problem<R>, ProblemError> {
        let walls = heated_walls(dim, self.delta_t);
        self.problem_with_walls(dim, n, numerics, &walls, Values::Whole)
    }

    /// The box with `walls` (one per side), whose isothermal walls span ΔT: the Boussinesq
    /// reference temperature, and the fluid's initial one, is the mean of the hottest and the
    /// coldest wall; `values` as [`box_problem`] says.
    pub fn problem_with_walls<R: Real>(
        &self,
        dim: usize,
        n: [usize; 3],
        numerics: Numerics,
        walls: &[Wall],
        values: Values,
    ) -> Result<Problem<R>, ProblemError> {
        let (cold, hot) = temperature_range(walls).ok_or_else(no_temperature_range)?;
        let physics = Physics {
            viscosity: self.viscosity,
            density: 1.0,
        };
        let numerics = Numerics {
            u_ref: self.velocity_scale(),
            ..numerics
        };
        let energy = Energy {
            diffusivity: self.diffusivity,
            buoyancy: self.buoyancy,
            t_ref: 0.5 * (hot + cold),
        };
        let energy = Some(energy);
        box_problem(
            dim,
            n,
            self.length,
            physics,
            numerics,
            walls,
            energy,
            values,
        )
    }

    /// Heat transfer and flow figures of a solution (`fields` of a problem from
    /// [`HeatedCavity::problem`]).
    pub fn report<R: Real>(&self, problem: &Problem<R>, fields: &dyn NodeValues) -> HeatTransfer {
        let hot = self.wall_nusselt(problem, fields, false);
        let cold = self.wall_nusselt(problem, fields, true);
        let dim = problem.layout.dim;
        let reference = reference::natural_convection(dim, self.rayleigh, self.prandtl).map(
            |(source, value)| NusseltReference {
                source: source.into(),
                nusselt: value,
                relative_deviation: (hot.mean - value) / value,
            },
        );
        HeatTransfer {
            rayleigh: self.rayleigh,
            prandtl: self.prandtl,
            energy_imbalance: (hot.mean - cold.mean) / hot.mean,
            hot_wall: hot,
            cold_wall: cold,
            velocity_maxima: (0..dim)
                .map(|m| self.plane_maximum(problem, fields, m))
                .collect(),
            reference,
        }
    }

    /// Local Nusselt numbers −∂T/∂x · L/ΔT over the wall x = 0 (or x = L if `cold`): the
    /// one-sided gradient at each wall node, integrated over the wall, both of the order of
    /// the scheme's differences: second (three nodes, trapezoidal rule) or fourth (five
    /// nodes, Simpson's rule where the wall has an even number of intervals). With the
    /// second-order gradient, fourth-order differences' Nu on 129² stayed 0.53 % (Ra = 1e5)
    /// and 0.97 % (1e6) above de Vahl Davis's.
    fn wall_nusselt<R: Real>(
        &self,
        problem: &Problem<R>,
        fields: &dyn NodeValues,
        cold: bool,
    ) -> WallNusselt {
        let l = fields.grid();
        let t = problem
            .temperature()
            .expect("a problem with the energy equation");
        let h = problem.spacing;
        let (i0, step) = if cold {
            (l.n[0] as isize - 1, -1)
        } else {
            (0, 1)
        };
        let at = |i: isize, j: usize, k: usize| fields.value(t, i as usize, j, k);
        let scale = self.length / self.delta_t;
        let mut wall = WallNusselt {
            mean: 0.0,
            max: f64::NEG_INFINITY,
            max_at: Vec::new(),
            min: f64::INFINITY,
            min_at: Vec::new(),
        };
        let fourth = problem.numerics.differences == Differences::Fourth;
        let weight = |m: usize, n: usize| match (m == 0 || m == n - 1, fourth && n % 2 == 1) {
            (true, false) => 0.5,
            (false, false) => 1.0,
            (true, true) => 1.0 / 3.0,
            (false, true) => [2.0 / 3.0, 4.0 / 3.0][m % 2],
        };
        let mut area = 0.0;
        for k in 0..l.n[2] {
            for j in 0..l.n[1] {
                let t = |n: isize| at(i0 + n * step, j, k);
                // Derivative into the fluid, turned into −∂T/∂x: (−3 T₀ + 4 T₁ − T₂) / 2h, or
                // (−25 T₀ + 48 T₁ − 36 T₂ + 16 T₃ − 3 T₄) / 12h.
                let inward = match fourth {
                    false => (4.0 * t(1) - 3.0 * t(0) - t(2)) / (2.0 * h[0]),
                    true => {
                        (48.0 * t(1) - 25.0 * t(0) - 36.0 * t(2) + 16.0 * t(3) - 3.0 * t(4))
                            / (12.0 * h[0])
                    }
                };
                let nu = -inward * step as f64 * scale;
                let w = weight(j, l.n[1]) * if l.dim == 3 { weight(k, l.n[2]) } else { 1.0 };
                wall.mean += w * nu;
                area += w;
                let at = [j as f64 * h[1], k as f64 * h[2]][..l.dim - 1]
                    .iter()
                    .map(|x| x / self.length)
                    .collect::<Vec<_>>();
                if nu > wall.max {
                    (wall.max, wall.max_at) = (nu, at.clone());
                }
                if nu < wall.min {
                    (wall.min, wall.min_at) = (nu, at);
                }
            }
        }
        wall.mean /= area;
        wall
    }

    /// The largest value of velocity component `m` on the mid-plane normal to axis `m`
    /// (interpolated there when it falls between nodes), with its position: the largest node
    /// value, then along each axis in the plane the peak of the parabola through it and its
    /// two neighbours (a node value alone is off by up to h²/8 of the curvature, 0.2 % of
    /// v_max on 129² at Ra = 1e5).
    fn plane_maximum<R: Real>(
        &self,
        problem: &Problem<R>,
        fields: &dyn NodeValues,
        m: usize,
    ) -> Extreme {
        let l = fields.grid();
        let on_plane = |node: [usize; 3]| {
            let mut x = problem.coordinates(node[0], node[1], node[2]);
            x[m] = 0.5 * self.length;
            (interpolate(problem, fields, 1 + m, x), x)
        };
        let mut best = (f64::NEG_INFINITY, [0; 3]);
        l.for_each_node(|i, j, k, _| {
            if [i, j, k][m] == 0 {
                let value = on_plane([i, j, k]).0;
                if value > best.0 {
                    best = (value, [i, j, k]);
                }
            }
        });
        let (centre, mut x) = on_plane(best.1);
        let mut value = centre;
        for a in (0..l.dim).filter(|a| *a != m) {
            let node = best.1;
            if node[a] == 0 || node[a] + 1 == l.n[a] {
                continue;
            }
            let neighbour = |step: isize| {
                let mut n = node;
                n[a] = (n[a] as isize + step) as usize;
                on_plane(n).0
            };
            let (offset, rise) = parabola_peak(neighbour(-1), centre, neighbour(1));
            value += rise;
            x[a] += offset * problem.spacing[a];
        }
        let names = ["u on x = L/2", "v on y = L/2", "w on z = L/2"];
        Extreme {
            quantity: names[m].into(),
            value,
            nondimensional: value * self.length / self.diffusivity,
            at: x[..l.dim].iter().map(|x| x / self.length).collect(),
        }
    }
}

/// The peak of the parabola through `(−1, lo)`, `(0, centre)`, `(1, hi)`, `centre` the largest:
/// its abscissa (in [−½, ½]) and its height above `centre`. Flat (no curvature): the node.
pub fn parabola_peak(lo: f64, centre: f64, hi: f64) -> (f64, f64) {
    let curvature = lo - 2.0 * centre + hi;
    if curvature >= 0.0 {
        return (0.0, 0.0);
    }
    let slope = 0.5 * (hi - lo);
    let offset = -slope / curvature;
    (offset, -0.5 * slope * slope / curvature)
}

/// Heat transfer and flow figures of a buoyancy-driven cavity, in `summary.json`.
#[derive(Debug, Clone, Serialize)]
pub struct HeatTransfer {
    /// Rayleigh number of the case.
    pub rayleigh: f64,
    /// Prandtl number of the case.
    pub prandtl: f64,
    /// Nusselt numbers on the hot wall x = 0.
    pub hot_wall: WallNusselt,
    /// Nusselt numbers on the cold wall x = L.
    pub cold_wall: WallNusselt,
    /// Heat in through the hot wall minus heat out through the cold wall, relative to the
    /// former: zero for an exact steady solution.
    pub energy_imbalance: f64,
    /// The largest velocity component normal to each mid-plane.
    pub velocity_maxima: Vec<Extreme>,
    /// Published mean Nusselt number of the hot wall, if there is one for this Ra and Pr.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reference: Option<NusseltReference>,
}

/// Nusselt numbers Nu = −∂T/∂x · L/ΔT of one wall (heat flowing along +x is positive).
#[derive(Debug, Clone, Serialize)]
pub struct WallNusselt {
    /// Mean over the wall (trapezoidal rule).
    pub mean: f64,
    /// Largest local value.
    pub max: f64,
    /// Where: the wall's other coordinates (y[, z]) over L.
    pub max_at: Vec<f64>,
    /// Smallest local value.
    pub min: f64,
    /// Where: the wall's other coordinates over L.
    pub min_at: Vec<f64>,
}

/// A maximum of a velocity component.
#[derive(Debug, Clone, Serialize)]
pub struct Extreme {
    /// What and where (e.g. `u on x = L/2`).
    pub quantity: String,
    /// Value in the case's units.
    pub value: f64,
    /// Value in units of α/L (as benchmarks tabulate it).
    pub nondimensional: f64,
    /// Position, coordinates over L.
    pub at: Vec<f64>,
}

/// Deviation of the hot wall's mean Nusselt number from a published value.
#[derive(Debug, Clone, Serialize)]
pub struct NusseltReference {
    /// Where the value comes from.
    pub source: String,
    /// The published mean Nusselt number.
    pub nusselt: f64,
    /// (computed − published) / published.
    pub relative_deviation: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_resolve_to_the_same_numbers() {
        let nd = HeatedCavity::nondimensional(1e5, 0.71, [0.0, -9.81, 0.0]).unwrap();
        assert_eq!((nd.viscosity, nd.diffusivity), (0.71, 1.0));
        assert!((nd.buoyancy[1] - 71e3).abs() < 1e-9 && nd.buoyancy[0] == 0.0);
        assert!((nd.velocity_scale() - 71e3f64.sqrt()).abs() < 1e-9);
        let d =
            HeatedCavity::dimensional(0.05, [0.0, -9.81, 0.0], 3e-3, 1.5e-5, 0.71, 8.0).unwrap();
        let ra = 9.81 * 3e-3 * 8.0 * 0.05f64.powi(3) * 0.71 / (1.5e-5 * 1.5e-5);
        assert!((d.rayleigh / ra - 1.0).abs() < 1e-12);
        assert!(HeatedCavity::nondimensional(1e5, 0.71, [0.0; 3]).is_err());
    }

    #[test]
    fn parabola_peaks_are_exact_on_parabolas() {
        let f = |x: f64| 3.0 - 2.0 * (x - 0.3) * (x - 0.3);
        let (offset, rise) = parabola_peak(f(-1.0), f(0.0), f(1.0));
        assert!((offset - 0.3).abs() < 1e-15 && (f(0.0) + rise - 3.0).abs() < 1e-15);
        assert_eq!(parabola_peak(1.0, 1.0, 1.0), (0.0, 0.0));
    }

    #[test]
    fn conduction_gives_nusselt_one_and_no_imbalance() {
        let num = Numerics {
            cfl: 0.5,
            ..Numerics::default()
        };
        let cavity =
            HeatedCavity::dimensional(2.0, [0.0, -9.81, 0.0], 1e-3, 1e-3, 0.7, 4.0).unwrap();
        let mut p = cavity.problem::<f64>(3, [9, 7, 5], num).unwrap();
        // Linear conduction profile from +ΔT/2 to −ΔT/2.
        let (l, t) = (p.layout, p.temperature().unwrap());
        l.for_each_node(|i, _, _, o| {
            p.initial.vars[t][o] = 2.0 - 4.0 * i as f64 / (l.n[0] - 1) as f64;
        });
        let r = cavity.report(&p, &p.initial);
        for wall in [&r.hot_wall, &r.cold_wall] {
            assert!((wall.mean - 1.0).abs() < 1e-12 && (wall.max - wall.min).abs() < 1e-12);
        }
        assert!(r.energy_imbalance.abs() < 1e-12);
        assert_eq!(r.velocity_maxima.len(), 3);
    }

    /// The wall gradient and its mean follow the differences' order: with fourth-order ones a
    /// quartic temperature profile's Nu is exact (and its mean over a wall where Nu varies as
    /// a cubic, by Simpson's rule), with second-order ones neither.
    #[test]
    fn fourth_order_differences_take_a_fourth_order_wall_heat_flux() {
        let cavity =
            HeatedCavity::dimensional(1.0, [0.0, -9.81, 0.0], 1e-3, 1e-3, 0.7, 1.0).unwrap();
        // T = x⁴ + (1 + y³) x, x and y in units of L: −∂T/∂x at x = 0 is −(1 + y³), whose
        // mean over y in [0, 1] is −1.25 (Nu at the hot wall, ΔT = 1).
        let mean = |differences| {
            let num = Numerics {
                cfl: 0.5,
                differences,
                ..Numerics::default()
            };
            let mut p = cavity.problem::<f64>(2, [17, 9, 1], num).unwrap();
            let (l, t) = (p.layout, p.temperature().unwrap());
            l.for_each_node(|i, j, _, o| {
                let (x, y) = (i as f64 / 16.0, j as f64 / 8.0);
                p.initial.vars[t][o] = x.powi(4) + (1.0 + y.powi(3)) * x;
            });
            cavity.report(&p, &p.initial).hot_wall.mean
        };
        assert!((mean(Differences::Fourth) + 1.25).abs() < 1e-12);
        assert!((mean(Differences::Second) + 1.25).abs() > 1e-4);
    }
}
