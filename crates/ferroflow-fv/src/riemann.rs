//! The exact solution of the 1D Riemann problem for an ideal gas (Toro, ch. 4): the star
//! pressure by Newton's method on the pressure functions, then the self-similar solution
//! sampled at x/t. The reference for shock tubes.

/// A 1D state: ρ, u, p.
pub type State1 = [f64; 3];

/// A solved Riemann problem.
#[derive(Debug, Clone, Copy)]
pub struct Riemann {
    gamma: f64,
    left: State1,
    right: State1,
    /// Pressure between the two nonlinear waves.
    pub p_star: f64,
    /// Velocity of the contact.
    pub u_star: f64,
}

impl Riemann {
    /// Solves the problem of `left` and `right` (no vacuum).
    pub fn new(gamma: f64, left: State1, right: State1) -> Riemann {
        let c = |w: State1| (gamma * w[2] / w[0]).sqrt();
        // f_K(p) and its derivative: a shock where p > p_K, a rarefaction otherwise.
        let f = |p: f64, w: State1| {
            if p > w[2] {
                let a = 2.0 / ((gamma + 1.0) * w[0]);
                let b = (gamma - 1.0) / (gamma + 1.0) * w[2];
                let s = (a / (p + b)).sqrt();
                ((p - w[2]) * s, s * (1.0 - 0.5 * (p - w[2]) / (p + b)))
            } else {
                let ratio = p / w[2];
                let e = (gamma - 1.0) / (2.0 * gamma);
                (
                    2.0 * c(w) / (gamma - 1.0) * (ratio.powf(e) - 1.0),
                    ratio.powf(-(gamma + 1.0) / (2.0 * gamma)) / (w[0] * c(w)),
                )
            }
        };
        let du = right[1] - left[1];
        let mut p = 0.5 * (left[2] + right[2]);
        for _ in 0..100 {
            let ((fl, dl), (fr, dr)) = (f(p, left), f(p, right));
            let next = (p - (fl + fr + du) / (dl + dr)).max(1e-12 * p);
            let change = (next - p).abs() / (0.5 * (next + p));
            p = next;
            if change < 1e-15 {
                break;
            }
        }
        let u = 0.5 * (left[1] + right[1]) + 0.5 * (f(p, right).0 - f(p, left).0);
        Riemann {
            gamma,
            left,
            right,
            p_star: p,
            u_star: u,
        }
    }

    /// The solution at x/t = `s` (x from the initial discontinuity).
    pub fn sample(&self, s: f64) -> State1 {
        // The right side is the left one mirrored: x → −x, u → −u.
        if s <= self.u_star {
            self.side(self.left, self.u_star, s)
        } else {
            let [rho, u, p] = self.side(mirror(self.right), -self.u_star, -s);
            [rho, -u, p]
        }
    }

    /// The solution left of the contact for the left state `w` and contact speed `us`.
    fn side(&self, w: State1, us: f64, s: f64) -> State1 {
        let (g, ps) = (self.gamma, self.p_star);
        let c = (g * w[2] / w[0]).sqrt();
        let ratio = ps / w[2];
        if ps > w[2] {
            let speed = w[1] - c * ((g + 1.0) / (2.0 * g) * ratio + (g - 1.0) / (2.0 * g)).sqrt();
            if s <= speed {
                return w;
            }
            let k = (g - 1.0) / (g + 1.0);
            return [w[0] * (ratio + k) / (k * ratio + 1.0), us, ps];
        }
        let head = w[1] - c;
        let c_star = c * ratio.powf((g - 1.0) / (2.0 * g));
        if s <= head {
            w
        } else if s >= us - c_star {
            [w[0] * ratio.powf(1.0 / g), us, ps]
        } else {
            let cf = 2.0 / (g + 1.0) * (c + 0.5 * (g - 1.0) * (w[1] - s));
            let u = 2.0 / (g + 1.0) * (c + 0.5 * (g - 1.0) * w[1] + s);
            let q = cf / c;
            [
                w[0] * q.powf(2.0 / (g - 1.0)),
                u,
                w[2] * q.powf(2.0 * g / (g - 1.0)),
            ]
        }
    }
}

fn mirror(w: State1) -> State1 {
    [w[0], -w[1], w[2]]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Toro's Table 4.2, test 1 (Sod): p* = 0.30313, u* = 0.92745, ρ*L = 0.42632,
    /// ρ*R = 0.26557.
    #[test]
    fn sod_matches_toro() {
        let r = Riemann::new(1.4, [1.0, 0.0, 1.0], [0.125, 0.0, 0.1]);
        assert!((r.p_star - 0.30313).abs() < 1e-5, "{}", r.p_star);
        assert!((r.u_star - 0.92745).abs() < 1e-5, "{}", r.u_star);
        assert!((r.sample(r.u_star - 1e-9)[0] - 0.42632).abs() < 1e-5);
        assert!((r.sample(r.u_star + 1e-9)[0] - 0.26557).abs() < 1e-5);
        assert_eq!(r.sample(-2.0), [1.0, 0.0, 1.0]);
        assert_eq!(r.sample(2.0), [0.125, 0.0, 0.1]);
        // The fan is continuous at its tail.
        let tail = r.u_star - (1.4f64 * 0.30313 / 0.42632).sqrt();
        let (a, b) = (r.sample(tail - 1e-9), r.sample(tail + 1e-9));
        assert!((a[0] - b[0]).abs() < 1e-6 && (a[1] - b[1]).abs() < 1e-6);
    }

    /// Toro's test 2 (two rarefactions, 123 problem): p* = 0.00189, u* = 0.
    #[test]
    fn two_rarefactions_match_toro() {
        let r = Riemann::new(1.4, [1.0, -2.0, 0.4], [1.0, 2.0, 0.4]);
        assert!((r.p_star - 0.00189).abs() < 1e-5, "{}", r.p_star);
        assert!(r.u_star.abs() < 1e-12);
    }
}
