//! Pointwise formulas of the artificial-compressibility scheme. Each exists once here and once
//! as a `__device__` twin of the same name in the CUDA kernels.
use ferroflow_core::Real;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// What the formulas compute on: a number of the working precision, or a vector of them (one
/// per node, `cpu::lanes`), with the same IEEE operations.
pub trait Arith:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// An `f64` constant, rounded to the working precision.
    fn of(x: f64) -> Self;
    /// The absolute value.
    fn abs(self) -> Self;
    /// The correctly rounded square root.
    fn sqrt(self) -> Self;
    /// The larger value; of a NaN and a number, the number (as `f64::max`).
    fn max(self, other: Self) -> Self;
}

impl<R: Real> Arith for R {
    #[inline(always)]
    fn of(x: f64) -> Self {
        Real::of(x)
    }
    #[inline(always)]
    fn abs(self) -> Self {
        num_traits::Float::abs(self)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        num_traits::Float::sqrt(self)
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        num_traits::Float::max(self, other)
    }
}

/// Local artificial compressibility β² = max(|u|², κ U_ref²): follows the flow speed, but
/// never drops below the floor `beta2_min = κ U_ref²` (stagnation regions would stall).
#[inline(always)]
pub fn local_beta2<X: Arith>(speed2: X, beta2_min: X) -> X {
    speed2.max(beta2_min)
}

/// Spectral radius of the inviscid flux Jacobian along one axis: |u| + sqrt(u² + β²).
#[inline(always)]
pub fn spectral_radius<X: Arith>(u: X, beta2: X) -> X {
    u.abs() + (u * u + beta2).sqrt()
}

/// Fourth difference `p[-2] - 4 p[-1] + 6 p[0] - 4 p[1] + p[2]` (≈ h⁴ ∂⁴p/∂x⁴).
#[inline(always)]
pub fn fourth_difference<X: Arith>(m2: X, m1: X, c: X, p1: X, p2: X) -> X {
    (m2 + p2) - X::of(4.0) * (m1 + p1) + X::of(6.0) * c
}

/// Central first derivative (p1 - m1) / 2h, with `inv_2h` = 1 / 2h.
#[inline(always)]
pub fn central_difference<X: Arith>(m1: X, p1: X, inv_2h: X) -> X {
    (p1 - m1) * inv_2h
}

/// Central second derivative (m1 - 2c + p1) / h², with `inv_h2` = 1 / h².
#[inline(always)]
pub fn second_difference<X: Arith>(m1: X, c: X, p1: X, inv_h2: X) -> X {
    (m1 + p1 - (c + c)) * inv_h2
}

/// Fourth-order central first derivative (8 (p1 - m1) - (p2 - m2)) / 12h, with `inv_2h` =
/// 1 / 2h.
#[inline(always)]
pub fn central_difference_4<X: Arith>(m2: X, m1: X, p1: X, p2: X, inv_2h: X) -> X {
    (X::of(8.0) * (p1 - m1) - (p2 - m2)) * inv_2h * X::of(1.0 / 6.0)
}

/// Fourth-order central second derivative (16 (m1 + p1) - (m2 + p2) - 30 c) / 12h², with
/// `inv_h2` = 1 / h².
#[inline(always)]
pub fn second_difference_4<X: Arith>(m2: X, m1: X, c: X, p1: X, p2: X, inv_h2: X) -> X {
    (X::of(16.0) * (m1 + p1) - (m2 + p2) - X::of(30.0) * c) * inv_h2 * X::of(1.0 / 12.0)
}

/// Cubic extrapolation to the node beyond `a` from four nodes `a, b, c, d` going inward: the
/// ghost velocities (and temperatures) the fourth-order differences next to a wall read,
/// exact for cubics.
#[inline(always)]
pub fn extrapolate_cubic<X: Arith>(a: X, b: X, c: X, d: X) -> X {
    X::of(4.0) * (a + c) - X::of(6.0) * b - d
}

/// Rate of the local pseudo-time step, `Σ λ_d / h_d + 2 ν Σ 1 / h_d² + Σ λ_d² / 4ν`, so that
/// `Δτ = cfl / rate` (the rate also turns the pressure shift into a residual without a second
/// division). The terms are the convective
/// and viscous limits of forward Euler, and a cell-Péclet limit `Δτ Σ λ_d² ≤ 4ν`. Central
/// differences leave long waves damped by viscosity alone, so without the last term the scheme
/// diverges at high Reynolds numbers (the Re = 1000 cavity on 65² within 2000 iterations);
/// with `2ν` in place of `4ν` the 129² Re = 1000 cavity converges too, 1.6 times slower.
/// With the energy equation the diffusive terms use the faster diffusion, `max(ν, α)`, and
/// the cell-Péclet term the slower one, `min(ν, α)` (per-run constants, see `Coefficients`).
#[inline(always)]
pub fn time_step_rate<X: Arith>(sum_lambda_over_h: X, viscous_rate: X, peclet_rate: X) -> X {
    sum_lambda_over_h + viscous_rate + peclet_rate
}

/// Quadratic extrapolation to the node beyond `a` from three nodes `a, b, c` going inward:
/// exact for parabolas, so the fourth difference next to a wall stays second-order consistent.
#[inline(always)]
pub fn extrapolate_quadratic<X: Arith>(a: X, b: X, c: X) -> X {
    X::of(3.0) * (a - b) + c
}

/// Boussinesq buoyancy source of one momentum component, `coef · (T − T_ref)`, with `coef` the
/// component of −β_T g⃗.
#[inline(always)]
pub fn buoyancy<X: Arith>(coef: X, t: X, t_ref: X) -> X {
    coef * (t - t_ref)
}

/// Wall value from the two nodes inside it with zero normal gradient, second order:
/// (4 a − b) / 3 (the one-sided derivative (−3 T₀ + 4 a − b) / 2h vanishes).
#[inline(always)]
pub fn extrapolate_zero_gradient<X: Arith>(a: X, b: X) -> X {
    (X::of(4.0) * a - b) / X::of(3.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_are_exact_on_polynomials() {
        let f = |x: f64| 2.0 + 3.0 * x - x * x + 0.5 * x * x * x * x;
        let h = 0.1;
        let x = 0.3;
        let d4 = fourth_difference(f(x - 2.0 * h), f(x - h), f(x), f(x + h), f(x + 2.0 * h));
        assert!((d4 - 12.0 * h.powi(4)).abs() < 1e-12);
        let quad = |x: f64| 1.0 - 2.0 * x + 0.7 * x * x;
        let d1 = central_difference(quad(x - h), quad(x + h), 0.5 / h);
        assert!((d1 - (-2.0 + 1.4 * x)).abs() < 1e-12);
        let d2 = second_difference(quad(x - h), quad(x), quad(x + h), 1.0 / (h * h));
        assert!((d2 - 1.4).abs() < 1e-10);
        let e = extrapolate_quadratic(quad(x), quad(x + h), quad(x + 2.0 * h));
        assert!((e - quad(x - h)).abs() < 1e-12);
        // A parabola with its vertex at the wall x = 0.3.
        let flat = |x: f64| 2.0 + 5.0 * (x - 0.3) * (x - 0.3);
        let w = extrapolate_zero_gradient(flat(x + h), flat(x + 2.0 * h));
        assert!((w - flat(x)).abs() < 1e-12);
        assert_eq!(buoyancy(2.0, 1.5, 0.5), 2.0);
        // Fourth order: exact on quartics (first derivative) and on quintics' second
        // derivative up to rounding; the cubic extrapolation exact on cubics.
        let quartic = |x: f64| 1.0 - x + 0.5 * x * x - 2.0 * x.powi(3) + 0.25 * x.powi(4);
        let at = |dx: f64| quartic(x + dx * h);
        let d1 = central_difference_4(at(-2.0), at(-1.0), at(1.0), at(2.0), 0.5 / h);
        assert!((d1 - (-1.0 + x - 6.0 * x * x + x.powi(3))).abs() < 1e-12);
        let d2 = second_difference_4(at(-2.0), at(-1.0), at(0.0), at(1.0), at(2.0), 1.0 / (h * h));
        assert!((d2 - (1.0 - 12.0 * x + 3.0 * x * x)).abs() < 1e-9);
        let cubic = |x: f64| 0.3 - x + 2.0 * x.powi(3);
        let e = extrapolate_cubic(
            cubic(x),
            cubic(x + h),
            cubic(x + 2.0 * h),
            cubic(x + 3.0 * h),
        );
        assert!((e - cubic(x - h)).abs() < 1e-12);
    }

    #[test]
    fn beta_has_a_floor_and_lambda_exceeds_speed() {
        assert_eq!(local_beta2(0.0, 0.25), 0.25);
        assert_eq!(local_beta2(4.0, 0.25), 4.0);
        assert!((spectral_radius(-1.0, 3.0) - 3.0f64).abs() < 1e-15);
    }
}
