//! What the scheme can resolve and which states are physical. The limits follow from the
//! local pseudo-time step of the state at rest (β² = κ U_ref², λ_d = √κ U_ref), where every
//! run starts: whether one step moves anything in the run's precision, how large the residuals
//! are, and the Courant number above which the grid-scale (checkerboard) mode of diffusion
//! grows.
use crate::Problem;
use ferroflow_core::{Fields, Real, Side};
use std::fmt;

/// The terms of the rate of the local pseudo-time step at rest (see
/// `cpu::formulas::time_step_rate`), in f64.
struct AtRest {
    /// Σ λ_d / h_d.
    convective: f64,
    /// 2 max(ν, α) Σ 1 / h_d².
    viscous: f64,
    /// Σ λ_d² / 4 min(ν, α).
    peclet: f64,
}

impl AtRest {
    fn rate(&self) -> f64 {
        self.convective + self.viscous + self.peclet
    }
}

/// Why the scheme cannot resolve a problem in a precision (see [`Problem::check_resolvable`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Unresolvable {
    /// At rest, one pseudo-time step moves a pressure wave by less than the round-off of the
    /// precision across a cell: the cell Reynolds (or Péclet) number is so far from 1 that
    /// the viscous or the cell-Péclet limit makes the step vanish, even at the largest CFL
    /// number.
    Step {
        /// Courant number of the pressure waves at rest.
        courant: f64,
        /// Machine epsilon of the precision.
        epsilon: f64,
    },
    /// As [`Unresolvable::Step`], but because the CFL number is that small.
    Cfl {
        /// Courant number of the pressure waves at rest.
        courant: f64,
        /// Machine epsilon of the precision.
        epsilon: f64,
    },
    /// The residuals of the variable (of order its scale / Δτ) fall outside what the precision
    /// holds and what sums of their squares in f64 hold, with room for ε of them.
    Scale {
        /// The variable.
        variable: &'static str,
        /// Its residual scale.
        scale: f64,
        /// The range allowed.
        allowed: (f64, f64),
    },
}

impl fmt::Display for Unresolvable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unresolvable::Step { courant, epsilon } | Unresolvable::Cfl { courant, epsilon } => {
                write!(
                    f,
                    "a pseudo-time step at rest moves the flow {courant:.1e} of a cell, below the \
                 round-off {epsilon:.1e} of the precision"
                )
            }
            Unresolvable::Scale {
                variable,
                scale,
                allowed: (lo, hi),
            } => write!(
                f,
                "the residuals of {variable} would be of order {scale:.1e}, outside \
                 {lo:.1e}..{hi:.1e} where the precision and sums of their squares hold them"
            ),
        }
    }
}

/// A state outside the bounds physics gives it (see [`Problem::bounds`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OutOfBounds {
    /// The variable.
    pub variable: &'static str,
    /// The node where it is farthest outside.
    pub node: [usize; 3],
    /// Its value there.
    pub value: f64,
    /// The bounds, margin included.
    pub bounds: (f64, f64),
}

impl fmt::Display for OutOfBounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (lo, hi) = self.bounds;
        write!(
            f,
            "{} = {:.4e} at node {:?} is outside [{lo}, {hi}], the wall temperatures with a \
             margin of {} of their difference: a non-physical state",
            self.variable, self.value, self.node, BOUND_MARGIN
        )
    }
}

/// How far outside the range of the isothermal walls' temperatures T may go, as a fraction
/// of the range. The steady solution obeys the maximum principle; central differences at
/// cell Péclet numbers above 2 overshoot it slightly (measured: below 1 % on the built-in
/// buoyancy-driven cavities and their grids up to Ra = 1e6), while the grid-scale
/// instability of a too large CFL number drives T to tens of times the range.
pub const BOUND_MARGIN: f64 = 0.1;

impl<R: Real> Problem<R> {
    fn at_rest(&self) -> AtRest {
        let (nu, dim) = (self.physics.viscosity, self.layout.dim);
        let (fast, slow) = match self.energy {
            Some(e) => (nu.max(e.diffusivity), nu.min(e.diffusivity)),
            None => (nu, nu),
        };
        let beta2 = self.numerics.kappa * self.numerics.u_ref * self.numerics.u_ref;
        let lambda = beta2.sqrt();
        let h = &self.spacing[..dim];
        AtRest {
            convective: h.iter().map(|h| lambda / h).sum(),
            viscous: 2.0 * fast * h.iter().map(|h| 1.0 / (h * h)).sum::<f64>(),
            peclet: dim as f64 * beta2 / (4.0 * slow),
        }
    }

    /// The largest CFL number at which forward Euler damps the checkerboard mode of the state
    /// at rest: that mode decays at twice the viscous rate of the time step, so it needs
    /// Δτ ≤ 1 / viscous rate, i.e. cfl ≤ 1 + (convective + cell-Péclet rate) / viscous rate.
    /// Always above 1, and towards 1 on fine grids where diffusion dominates the step.
    pub fn stable_cfl_at_rest(&self) -> f64 {
        let r = self.at_rest();
        1.0 + (r.convective + r.peclet) / r.viscous
    }

    /// Checks that the scheme resolves the problem in precision `R`: that a pseudo-time step
    /// at rest moves the flow by more than round-off, and that the residuals (of order
    /// U_ref / Δτ for velocity, ρ U_ref² / Δτ for pressure, the walls' temperature difference
    /// / Δτ for temperature) stay within the precision and within sums of squares in f64 down
    /// to ε of them. Outside these, the first residuals underflow to zero (which is not
    /// convergence) or overflow.
    pub fn check_resolvable(&self) -> Result<(), Unresolvable> {
        let rest = self.at_rest();
        let dt = self.numerics.cfl / rest.rate();
        let epsilon = R::epsilon().f64();
        let courant = dt * rest.convective;
        // NaN too: an infinite rate (an overflowing U_ref²) makes no step.
        if courant.is_nan() || courant < epsilon {
            // At the largest CFL number (2) the step would move the flow: the CFL is at fault.
            return Err(match courant / self.numerics.cfl * 2.0 >= epsilon {
                true => Unresolvable::Cfl { courant, epsilon },
                false => Unresolvable::Step { courant, epsilon },
            });
        }
        let lo = f64::MIN_POSITIVE.sqrt().max(R::min_positive_value().f64()) / epsilon;
        let hi = f64::MAX.sqrt().min(R::max_value().f64()) * epsilon;
        let u = self.numerics.u_ref;
        let mut scales = vec![
            ("p", self.physics.density * u * u / dt),
            ("velocity", u / dt),
        ];
        if let Some((lo_t, hi_t)) = self.wall_temperatures() {
            scales.push(("T", (hi_t - lo_t) / dt));
        }
        for (variable, scale) in scales {
            if !(lo..=hi).contains(&scale) {
                return Err(Unresolvable::Scale {
                    variable,
                    scale,
                    allowed: (lo, hi),
                });
            }
        }
        Ok(())
    }

    /// The range of the isothermal walls' temperatures, with the energy equation; none
    /// without it or with a source term (manufactured solutions), where physics gives no bound.
    fn wall_temperatures(&self) -> Option<(f64, f64)> {
        let t = self.temperature().filter(|_| self.source.is_none())?;
        let (l, mut range) = (self.layout, None::<(f64, f64)>);
        let isothermal: Vec<Side> = Side::ALL[..2 * l.dim]
            .iter()
            .copied()
            .filter(|s| self.sides[*s as usize] == crate::SideBc::Wall)
            .collect();
        l.for_each_node(|i, j, k, _| {
            let at = [i, j, k];
            let on = |s: &Side| at[s.axis()] == if s.is_high() { l.n[s.axis()] - 1 } else { 0 };
            if isothermal.iter().any(on) {
                let v = self.initial_value(t, at);
                range = Some(range.map_or((v, v), |(a, b)| (a.min(v), b.max(v))));
            }
        });
        range
    }

    /// The bounds of the variables that physics bounds: with the energy equation and no
    /// source, T within the isothermal walls' temperatures (maximum principle), widened by
    /// [`BOUND_MARGIN`] of their difference. As `(variable index, low, high)`.
    pub fn bounds(&self) -> Option<(usize, f64, f64)> {
        let (lo, hi) = self.wall_temperatures()?;
        let margin = BOUND_MARGIN * (hi - lo);
        Some((self.temperature()?, lo - margin, hi + margin))
    }

    /// Checks a state against [`Problem::bounds`]; names the node farthest outside.
    pub fn check_bounds(&self, fields: &Fields<R>) -> Result<(), OutOfBounds> {
        let Some((var, lo, hi)) = self.bounds() else {
            return Ok(());
        };
        match fields.farthest_outside(var, lo, hi) {
            None => Ok(()),
            Some((node, value)) => Err(OutOfBounds {
                variable: self.variable_names()[var],
                node,
                value,
                bounds: (lo, hi),
            }),
        }
    }
}
