use crate::{Differences, Energy, Problem};
use ferroflow_core::Real;

/// Per-run constants of the artificial-compressibility update in the run's precision,
/// computed once in f64 and rounded once, so that every backend starts from identical values.
/// `#[repr(C)]`: the CUDA kernels receive it by value as their `Coeffs` struct.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Coefficients<R> {
    /// 1 / h per axis.
    pub inv_h: [R; 3],
    /// 1 / 2h per axis.
    pub inv_2h: [R; 3],
    /// 1 / h² per axis.
    pub inv_h2: [R; 3],
    /// Kinematic viscosity ν.
    pub nu: R,
    /// 1 / ρ.
    pub inv_rho: R,
    /// Courant number.
    pub cfl: R,
    /// 1 / Courant number (turns the time-step rate into 1 / Δτ without a division).
    pub inv_cfl: R,
    /// Fourth-difference dissipation coefficient.
    pub c4: R,
    /// Floor of the artificial compressibility, κ U_ref².
    pub beta2_min: R,
    /// Diffusive rate of the time step, 2 max(ν, α) Σ 1/h² (α only with the energy equation).
    pub viscous_rate: R,
    /// 1 / 4 min(ν, α), of the cell-Péclet limit of the time step.
    pub inv_4nu: R,
    /// Thermal diffusivity α (0 without the energy equation).
    pub alpha: R,
    /// Boussinesq reference temperature T_ref.
    pub t_ref: R,
    /// −β_T g⃗ per axis: the momentum source per unit T − T_ref.
    pub buoyancy: [R; 3],
    /// Weight of the divergence form in the convective terms (0: advective, ½: skew-symmetric).
    pub divergence: R,
    /// 1 where the differences are of fourth order, 0 where of second.
    pub fourth: R,
}

impl<R: Real> Coefficients<R> {
    /// Whether convection takes the divergence form's share (skew-symmetric).
    pub fn skew(&self) -> bool {
        self.divergence != R::zero()
    }

    /// Whether the differences are of fourth order.
    pub fn fourth(&self) -> bool {
        self.fourth != R::zero()
    }

    /// The constants of `problem`.
    pub fn new(problem: &Problem<R>) -> Coefficients<R> {
        let (ph, num) = (problem.physics, problem.numerics);
        let h = problem.spacing;
        let dim = problem.layout.dim;
        // The time step limits of the fastest and the slowest diffusion (forward Euler, cell
        // Péclet number): equal to ν without the energy equation.
        let (fast, slow) = match problem.energy {
            Some(e) => (
                ph.viscosity.max(e.diffusivity),
                ph.viscosity.min(e.diffusivity),
            ),
            None => (ph.viscosity, ph.viscosity),
        };
        let viscous_rate: f64 = 2.0 * fast * h[..dim].iter().map(|h| 1.0 / (h * h)).sum::<f64>();
        let energy = problem.energy.unwrap_or(Energy {
            diffusivity: 0.0,
            buoyancy: [0.0; 3],
            t_ref: 0.0,
        });
        Coefficients {
            inv_h: h.map(|h| R::of(1.0 / h)),
            inv_2h: h.map(|h| R::of(0.5 / h)),
            inv_h2: h.map(|h| R::of(1.0 / (h * h))),
            nu: R::of(ph.viscosity),
            inv_rho: R::of(1.0 / ph.density),
            cfl: R::of(num.cfl),
            inv_cfl: R::of(1.0 / num.cfl),
            c4: R::of(num.c4),
            beta2_min: R::of(num.kappa * num.u_ref * num.u_ref),
            viscous_rate: R::of(viscous_rate),
            inv_4nu: R::of(0.25 / slow),
            alpha: R::of(energy.diffusivity),
            t_ref: R::of(energy.t_ref),
            buoyancy: energy.buoyancy.map(R::of),
            divergence: R::of(num.convection.divergence_weight()),
            fourth: R::of(match num.differences {
                Differences::Second => 0.0,
                Differences::Fourth => 1.0,
            }),
        }
    }
}
