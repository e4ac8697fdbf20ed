//! The face kernel's pieces: Roe's flux with Harten's entropy fix ([`roe`]) and the MUSCL
//! extrapolation of a cell's primitive variables to a face, limited by van Albada's function
//! or not ([`extrapolate`]).
use crate::gas::{dot, velocity, Gas};
use crate::lanes::Lane;

/// Roe's flux per unit area through a face of unit normal `n` (from `l` to `r`):
/// ½ (F(W_L) + F(W_R) − |Ã| ΔU), the waves written as in seed 004 §1.5. Harten's fix
/// |λ| → (λ² + δ²)/(2δ) for |λ| < δ = 0.1 (|Ṽ| + c̃) widens the acoustic waves only: they are
/// the ones that can form an expansion shock at a sonic point. Branches are selects, so that
/// four faces in lanes compute what four single faces do.
#[inline(always)]
pub fn roe<T: Lane>(gas: Gas, l: &[T; 5], r: &[T; 5], n: [T; 3]) -> [T; 5] {
    let (fl, fr) = (gas.flux(l, n), gas.flux(r, n));
    let (sl, sr) = (l[0].sqrt(), r[0].sqrt());
    let inv = T::splat(1.0) / (sl + sr);
    let (vl, vr) = (velocity(l), velocity(r));
    let v: [T; 3] = std::array::from_fn(|k| (sl * vl[k] + sr * vr[k]) * inv);
    let h = (sl * gas.enthalpy(l) + sr * gas.enthalpy(r)) * inv;
    let rho = sl * sr;
    let q2 = dot(v, v);
    let c2 = T::splat(gas.gamma - 1.0) * (h - T::splat(0.5) * q2);
    let c = c2.sqrt();
    let vn = dot(v, n);
    let dv: [T; 3] = std::array::from_fn(|k| vr[k] - vl[k]);
    let (drho, dp, dvn) = (r[0] - l[0], r[4] - l[4], dot(dv, n));
    let a1 = (dp - rho * c * dvn) / (T::splat(2.0) * c2);
    let a5 = (dp + rho * c * dvn) / (T::splat(2.0) * c2);
    let a2 = drho - dp / c2;
    let delta = T::splat(0.1) * (q2.sqrt() + c);
    let fix = |lambda: T| {
        let a = lambda.abs();
        let widened = (lambda * lambda + delta * delta) / (T::splat(2.0) * delta);
        T::select(a.lt(delta), widened, a)
    };
    let (l1, l2, l5) = (fix(vn - c) * a1, vn.abs(), fix(vn + c) * a5);
    let mut d = [T::splat(0.0); 5];
    d[0] = l1 + l2 * a2 + l5;
    for k in 0..3 {
        let shear = dv[k] - dvn * n[k];
        d[k + 1] = l1 * (v[k] - c * n[k]) + l2 * (a2 * v[k] + rho * shear) + l5 * (v[k] + c * n[k]);
    }
    d[4] = l1 * (h - c * vn)
        + l2 * (a2 * T::splat(0.5) * q2 + rho * (dot(v, dv) - vn * dvn))
        + l5 * (h + c * vn);
    std::array::from_fn(|k| T::splat(0.5) * (fl[k] + fr[k] - d[k]))
}

/// How the extrapolation to faces is limited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limiter {
    /// Unlimited: q_f = q + ∇q·r (second order in smooth flow, oscillates at shocks).
    None,
    /// Van Albada's smooth limiter.
    VanAlbada,
}

/// Keeps the limiter's slope ratio defined where both differences vanish (nondimensional
/// variables of order one).
const EPSILON: f64 = 1e-12;

/// The increment from a cell's value q to its face, given the unlimited increment
/// `projected` = ∇q·r (r from the cell's centroid to the face's), the difference
/// `across` = q_other − q to the cell across the face, and `alpha` = (r·d)/|d|² (d from the
/// cell to the other: ½ where the face lies midway).
///
/// The edge-based van Albada form: b = α Δ⁺ is the increment that the straight difference
/// across the face gives, a = 2∇q·r − b the one the cell's other side gives; the limited
/// increment is s(a, b) = (a(b² + ε) + b(a² + ε))/(a² + b² + 2ε), 0 where a and b differ in
/// sign. Unlimited, (a + b)/2 = ∇q·r: exact for linear fields on any mesh. On a uniform
/// Cartesian mesh (α = ½, central gradients) it is the classical van Albada MUSCL.
#[inline(always)]
pub fn extrapolate<T: Lane>(limiter: Limiter, projected: T, across: T, alpha: T) -> T {
    match limiter {
        Limiter::None => projected,
        Limiter::VanAlbada => {
            let b = alpha * across;
            let a = T::splat(2.0) * projected - b;
            let eps = T::splat(EPSILON);
            let s = (a * (b * b + eps) + b * (a * a + eps)) / (a * a + b * b + T::splat(2.0) * eps);
            T::select((a * b).le(T::splat(0.0)), T::splat(0.0), s)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gas::Vec3;

    fn unit(v: Vec3) -> Vec3 {
        let l = dot(v, v).sqrt();
        v.map(|x| x / l)
    }

    #[test]
    fn roe_of_equal_states_is_the_physical_flux() {
        let gas = Gas::AIR;
        for (w, n) in [
            ([1.0, 0.3, -0.2, 0.1, 0.7], unit([1.0, 2.0, -0.5])),
            ([0.125, -2.0, 0.0, 0.4, 0.1], unit([0.0, -1.0, 0.3])),
            ([2.0, 0.0, 0.0, 0.0, 3.0], [0.0, 0.0, 1.0]),
        ] {
            let (f, exact) = (roe(gas, &w, &w, n), gas.flux(&w, n));
            for k in 0..5 {
                assert!((f[k] - exact[k]).abs() < 1e-15, "{f:?} against {exact:?}");
            }
        }
    }

    #[test]
    fn roe_is_upwind_for_supersonic_flow_and_antisymmetric_in_the_normal() {
        let gas = Gas::AIR;
        let n = unit([1.0, 0.5, 0.0]);
        let l = [1.0, 3.0, 1.5, 0.0, 1.0];
        let r = [0.9, 2.9, 1.4, 0.1, 0.8];
        // Supersonic towards r: every wave runs right, the flux is the left state's.
        let (f, fl) = (roe(gas, &l, &r, n), gas.flux(&l, n));
        for k in 0..5 {
            assert!((f[k] - fl[k]).abs() < 1e-13, "{f:?} against {fl:?}");
        }
        // The face seen from the other side carries the opposite flux.
        let l = [1.0, 0.3, -0.2, 0.1, 0.7];
        let r = [0.6, -0.1, 0.2, 0.0, 0.4];
        let (f, g) = (roe(gas, &l, &r, n), roe(gas, &r, &l, n.map(|x| -x)));
        for k in 0..5 {
            assert!((f[k] + g[k]).abs() < 1e-15, "{f:?} against {g:?}");
        }
    }

    #[test]
    fn van_albada_is_the_classical_muscl_on_a_uniform_mesh() {
        // Differences q − q_left = 1 and q_right − q = 3: central gradient 2 per cell.
        let (minus, plus) = (1.0, 3.0);
        let s = extrapolate(Limiter::VanAlbada, 0.25 * (minus + plus), plus, 0.5);
        let classic =
            0.5 * (minus * plus * plus + plus * minus * minus) / (minus * minus + plus * plus);
        assert!((s - classic).abs() < 1e-12, "{s} against {classic}");
        assert_eq!(
            extrapolate(Limiter::VanAlbada, 0.25 * (-1.0 + 3.0), 3.0, 0.5),
            0.0
        );
        assert_eq!(extrapolate(Limiter::None, 0.7, 3.0, 0.5), 0.7);
        // Equal differences (linear data): no limiting.
        let s = extrapolate(Limiter::VanAlbada, 1.0, 2.0, 0.5);
        assert!((s - 1.0).abs() < 1e-12);
    }
}
