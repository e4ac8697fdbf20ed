//! The calorically perfect gas: conservative variables U = (ρ, ρu, ρv, ρw, ρE) and primitive
//! ones W = (ρ, u, v, w, p), conversions between them, the speed of sound and the inviscid
//! flux through a face. Nondimensional with the gas constant 1, so that T = p/ρ. What the
//! face and cell kernels call is generic over [`Lane`]: one cell or face, or four.
use crate::lanes::Lane;

/// Conservative variables of a cell: ρ, ρu, ρv, ρw, ρE.
pub type Cons = [f64; 5];
/// Primitive variables: ρ, u, v, w, p.
pub type Prim = [f64; 5];
/// A point or vector in space.
pub type Vec3 = [f64; 3];

/// Dot product.
#[inline]
pub fn dot<T: Lane>(a: [T; 3], b: [T; 3]) -> T {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The velocity of a primitive state.
#[inline]
pub fn velocity<T: Lane>(w: &[T; 5]) -> [T; 3] {
    [w[1], w[2], w[3]]
}

/// An ideal gas of ratio of specific heats `gamma`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gas {
    /// Ratio of specific heats.
    pub gamma: f64,
}

impl Gas {
    /// Air, γ = 1.4.
    pub const AIR: Gas = Gas { gamma: 1.4 };

    /// Primitive variables of `u`.
    #[inline]
    pub fn prim<T: Lane>(self, u: &[T; 5]) -> [T; 5] {
        let rho = u[0];
        let inv = T::splat(1.0) / rho;
        let v = [u[1] * inv, u[2] * inv, u[3] * inv];
        let p = T::splat(self.gamma - 1.0) * (u[4] - T::splat(0.5) * rho * dot(v, v));
        [rho, v[0], v[1], v[2], p]
    }

    /// Conservative variables of `w`.
    #[inline]
    pub fn cons(self, w: &Prim) -> Cons {
        let v = velocity(w);
        let e = w[4] / (self.gamma - 1.0) + 0.5 * w[0] * dot(v, v);
        [w[0], w[0] * v[0], w[0] * v[1], w[0] * v[2], e]
    }

    /// Speed of sound.
    #[inline]
    pub fn sound<T: Lane>(self, w: &[T; 5]) -> T {
        (T::splat(self.gamma) * w[4] / w[0]).sqrt()
    }

    /// Total enthalpy per unit mass, H = γ/(γ − 1) p/ρ + |V|²/2.
    #[inline]
    pub fn enthalpy<T: Lane>(self, w: &[T; 5]) -> T {
        let v = velocity(w);
        T::splat(self.gamma / (self.gamma - 1.0)) * w[4] / w[0] + T::splat(0.5) * dot(v, v)
    }

    /// ρ/ρ_ref of two states on one isentrope whose speeds of sound are in the ratio
    /// `c_ratio` = c/c_ref: c_ratio^{2/(γ−1)}. For air the fifth power, by multiplications.
    #[inline]
    pub fn isentropic_density_ratio(self, c_ratio: f64) -> f64 {
        if self.gamma == Gas::AIR.gamma {
            let square = c_ratio * c_ratio;
            square * square * c_ratio
        } else {
            // Not bitwise the GPU's: its `pow` differs from libm's by up to 2 ulp.
            c_ratio.powf(2.0 / (self.gamma - 1.0))
        }
    }

    /// T/T_ref of two states on one isentrope whose pressures are in the ratio `p_ratio` =
    /// p/p_ref (positive): p_ratio^{(γ−1)/γ}. For air the square of the seventh root, by
    /// [`seventh_root`].
    #[inline]
    pub fn isentropic_temperature_ratio(self, p_ratio: f64) -> f64 {
        if self.gamma == Gas::AIR.gamma {
            let root = seventh_root(p_ratio);
            root * root
        } else {
            // Not bitwise the GPU's: its `pow` differs from libm's by up to 2 ulp.
            p_ratio.powf((self.gamma - 1.0) / self.gamma)
        }
    }

    /// The inviscid flux through a face of unit normal `n`, per unit area:
    /// (ρV_n, ρV_n V + p n, ρV_n H).
    #[inline]
    pub fn flux<T: Lane>(self, w: &[T; 5], n: [T; 3]) -> [T; 5] {
        let vn = dot(velocity(w), n);
        let m = w[0] * vn;
        [
            m,
            m * w[1] + w[4] * n[0],
            m * w[2] + w[4] * n[1],
            m * w[3] + w[4] * n[2],
            m * self.enthalpy(w),
        ]
    }

    /// The flux Jacobian's product A(W, n) dU = ∂F(U, n)/∂U dU, through the primitive
    /// increments dV = (dm − V dρ)/ρ and dp = (γ − 1)(dE − V·dm + |V|²/2 dρ).
    #[inline]
    pub fn flux_jacobian_times(self, w: &Prim, n: Vec3, du: &Cons) -> [f64; 5] {
        let v = velocity(w);
        let dm = [du[1], du[2], du[3]];
        let dv: Vec3 = std::array::from_fn(|k| (dm[k] - v[k] * du[0]) / w[0]);
        let dp = (self.gamma - 1.0) * (du[4] - dot(v, dm) + 0.5 * dot(v, v) * du[0]);
        let (vn, dmn) = (dot(v, n), dot(dm, n));
        let m = w[0] * vn;
        let energy = w[4] / (self.gamma - 1.0) + 0.5 * w[0] * dot(v, v);
        [
            dmn,
            dmn * v[0] + m * dv[0] + dp * n[0],
            dmn * v[1] + m * dv[1] + dp * n[1],
            dmn * v[2] + m * dv[2] + dp * n[2],
            dot(dv, n) * (energy + w[4]) + vn * (du[4] + dp),
        ]
    }
}

/// x^{1/7} of a positive normal `x`, to within an ulp, by operations that round the same on
/// every IEEE machine (libm's and CUDA's `pow` differ in their last bits): a first guess from
/// the exponent bits (the bits are nearly an affine function of log₂ x, so a seventh of
/// their distance from 1.0's is off by under 1 %), then Newton's z ← (6z + x/z⁶)/7, whose
/// error e becomes about 3e²: 1e-2, 3e-4, 3e-7, 3e-13, then below rounding (a fifth step
/// for margin).
#[inline]
pub fn seventh_root(x: f64) -> f64 {
    const ONE: i64 = 0x3ff0_0000_0000_0000;
    let bits = x.to_bits() as i64;
    let mut z = f64::from_bits(((bits - ONE) / 7 + ONE) as u64);
    for _ in 0..5 {
        let square = z * z;
        z = (6.0 * z + x / (square * square * square)) / 7.0;
    }
    z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip() {
        let w = [1.3, 0.2, -0.7, 0.4, 2.1];
        let back = Gas::AIR.prim(&Gas::AIR.cons(&w));
        for k in 0..5 {
            assert!((back[k] - w[k]).abs() < 1e-15, "{back:?}");
        }
        assert!((Gas::AIR.sound(&w) - (1.4f64 * 2.1 / 1.3).sqrt()).abs() < 1e-15);
    }

    #[test]
    fn isentropic_ratios_are_the_powers() {
        let close = |a: f64, b: f64| (a - b).abs() <= 4.0 * f64::EPSILON * b.abs();
        for i in 0..2000 {
            let x = 1e-3 + (i as f64 + 0.37) * 1.7e-3;
            assert!(close(seventh_root(x), x.powf(1.0 / 7.0)), "{x}");
            let (air, other) = (Gas::AIR, Gas { gamma: 1.3 });
            assert!(close(
                air.isentropic_temperature_ratio(x),
                x.powf(2.0 / 7.0)
            ));
            assert!(close(air.isentropic_density_ratio(x), x.powf(5.0)));
            assert_eq!(
                other.isentropic_temperature_ratio(x),
                x.powf((1.3 - 1.0) / 1.3)
            );
            assert_eq!(other.isentropic_density_ratio(x), x.powf(2.0 / (1.3 - 1.0)));
        }
        // Far from 1, powf(1/7) is off by the rounding of 1/7 times ln x: exact roots there.
        for root in [2f64.powi(-142), 1.0 / 3.0, 1.25, 3.0, 2f64.powi(143)] {
            assert!(close(seventh_root(root.powi(7)), root), "{root}");
        }
    }

    #[test]
    fn the_flux_jacobian_is_the_flux_derivative() {
        let (gas, w, n) = (Gas::AIR, [1.3, 0.2, -0.7, 0.4, 2.1], [0.6, 0.0, 0.8]);
        let du = [0.3, -0.1, 0.5, 0.2, 0.7];
        let jd = gas.flux_jacobian_times(&w, n, &du);
        let u = gas.cons(&w);
        let h = 1e-6;
        let at = |s: f64| gas.flux(&gas.prim(&std::array::from_fn(|k| u[k] + s * du[k])), n);
        let (fp, fm) = (at(h), at(-h));
        for k in 0..5 {
            let fd = (fp[k] - fm[k]) / (2.0 * h);
            assert!((jd[k] - fd).abs() < 1e-8, "{k}: {} against {fd}", jd[k]);
        }
    }
}
