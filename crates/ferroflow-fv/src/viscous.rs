//! Laminar viscous fluxes (seed 004 §1.1): the stress τ = μ (∇V + ∇Vᵀ − ⅔ (∇·V) I) and the
//! heat flux −κ∇T, κ = c_p μ / Pr with c_p = γ/(γ − 1) (gas constant 1, T = p/ρ), the
//! viscosity constant or Sutherland's. The flux through a face, F_v = (0, τ·n, (τ·V)·n +
//! κ∇T·n), takes the face's V and T as the mean of its two sides and its gradients as the
//! mean of the two cells' least-squares gradients with the part along the cell-to-cell
//! direction replaced by the difference across it ([`face_gradient`]): that difference
//! couples neighbours directly, so odd–even modes are damped on any cell shape.
//!
//! A boundary face's second side is its ghost: the wall states of [`crate::boundary`] make
//! the difference across the face the wall's no-slip or isothermal condition. A slip wall is
//! a symmetry plane: its faces pass the normal stress only, no shear and no heat.
//!
//! The per-face formulas ([`Viscous::face`]) are written once over [`Lane`]: the reference
//! loops call them for one face, the fast loops of [`crate::fast`] for four.
use crate::boundary::Boundary;
use crate::gas::{dot, Gas, Prim, Vec3};
use crate::geometry::sub;
use crate::gradients::Gradient;
use crate::lanes::Lane;
use crate::residual::Solver;
use rayon::prelude::*;

/// Faces per rayon task in the viscous face loop.
const MIN_FACES: usize = 2048;

/// Dynamic viscosity as a function of temperature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Viscosity {
    /// The same μ everywhere.
    Constant(f64),
    /// Sutherland's law μ = μ_ref (T/T_ref)^{3/2} (T_ref + S)/(T + S).
    Sutherland {
        /// Viscosity at the reference temperature.
        mu: f64,
        /// Reference temperature.
        t: f64,
        /// Sutherland's temperature S, in the units of T (110 K / 288.15 K for air with
        /// T_ref = 288.15 K).
        s: f64,
    },
}

impl Viscosity {
    /// μ at temperature `t`.
    #[inline]
    pub fn at(self, t: f64) -> f64 {
        match self {
            Viscosity::Constant(mu) => mu,
            Viscosity::Sutherland {
                mu,
                t: reference,
                s,
            } => {
                // x^{3/2} as x √x: the GPU's `pow` would differ in the last bits.
                let x = t / reference;
                mu * (x * x.sqrt()) * (reference + s) / (t + s)
            }
        }
    }
}

/// A laminar Newtonian gas with Fourier heat conduction.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Viscous {
    /// Dynamic viscosity.
    pub viscosity: Viscosity,
    /// Prandtl number c_p μ / κ.
    pub prandtl: f64,
}

impl Viscous {
    /// Air's Prandtl number.
    pub const AIR_PRANDTL: f64 = 0.72;

    /// Air's Prandtl number with `viscosity`.
    pub fn air(viscosity: Viscosity) -> Viscous {
        Viscous {
            viscosity,
            prandtl: Viscous::AIR_PRANDTL,
        }
    }

    /// Heat conductivity κ = c_p μ / Pr of viscosity `mu`.
    #[inline(always)]
    pub fn conductivity<T: Lane>(self, gas: Gas, mu: T) -> T {
        T::splat(gas.gamma / (gas.gamma - 1.0)) * mu / T::splat(self.prandtl)
    }

    /// The viscous spectral radius of a face whose cells' centroids are `distance` apart
    /// along its normal, 2 max(4/3, γ/Pr) μ/(ρ d): half of it is the diagonal of a
    /// difference (q_j − q_i) ν/d, which is what the implicit iteration's blocks take from
    /// the face's radius; a cube's cell then gets the explicit diffusion limit at CFL ½.
    #[inline(always)]
    pub fn spectral_radius<T: Lane>(self, gas: Gas, w: &[T; 5], distance: T) -> T {
        let mu = (w[4] / w[0]).map(|t| self.viscosity.at(t));
        let factor = 2.0 * (4.0f64 / 3.0).max(gas.gamma / self.prandtl);
        T::splat(factor) * mu / (w[0] * distance)
    }

    /// The viscous flux per unit area through a face of unit normal `n` where the velocity
    /// is `v`, the temperature `t`, the velocity gradients `dv` (dv[i][j] = ∂v_i/∂x_j) and
    /// the temperature gradient `dt`.
    #[inline(always)]
    pub fn flux<T: Lane>(
        self,
        gas: Gas,
        v: [T; 3],
        t: T,
        dv: [[T; 3]; 3],
        dt: [T; 3],
        n: [T; 3],
    ) -> [T; 5] {
        let mu = t.map(|t| self.viscosity.at(t));
        let bulk = T::splat(-2.0 / 3.0) * (dv[0][0] + dv[1][1] + dv[2][2]);
        let stress: [T; 3] = std::array::from_fn(|i| {
            let shear = |j: usize| (dv[i][j] + dv[j][i]) * n[j];
            mu * (shear(0) + shear(1) + shear(2) + bulk * n[i])
        });
        let heat = self.conductivity(gas, mu) * dot(dt, n);
        let zero = T::splat(0.0);
        [zero, stress[0], stress[1], stress[2], dot(stress, v) + heat]
    }

    /// The viscous flux per unit area through a face of unit normal `n` between the states
    /// `q` (left, right) at the centroids `x`. `grad` pairs a state with its cell's gradients
    /// for each side; a boundary face passes its cell's twice (a ghost has none of its own,
    /// so the cell's stands for the mean).
    #[inline(always)]
    pub fn face<T: Lane>(
        self,
        gas: Gas,
        q: [&[T; 5]; 2],
        grad: [(&[T; 5], &[[T; 3]; 5]); 2],
        x: [[T; 3]; 2],
        n: [T; 3],
    ) -> [T; 5] {
        let (ql, qr) = (velocity_temperature(q[0]), velocity_temperature(q[1]));
        let gl = gradients_of(grad[0].0, grad[0].1);
        let gr = gradients_of(grad[1].0, grad[1].1);
        let d = sub(x[1], x[0]);
        let half = T::splat(0.5);
        let grad: [[T; 3]; 4] = std::array::from_fn(|q| {
            let mean = std::array::from_fn(|k| half * (gl[q][k] + gr[q][k]));
            face_gradient(mean, qr[q] - ql[q], d)
        });
        let v: [T; 3] = std::array::from_fn(|k| half * (ql[k] + qr[k]));
        let t = half * (ql[3] + qr[3]);
        self.flux(gas, v, t, [grad[0], grad[1], grad[2]], grad[3], n)
    }

    /// The viscous flux times `area` through a boundary face of condition `bc` (see
    /// [`Viscous::face`]): a slip wall passes the normal stress only.
    #[inline]
    pub fn boundary_face(
        self,
        gas: Gas,
        bc: &Boundary,
        q: [&Prim; 2],
        grad: &Gradient,
        x: [Vec3; 2],
        (n, area): (Vec3, f64),
    ) -> [f64; 5] {
        let mut flux = self.face(gas, q, [(q[0], grad), (q[0], grad)], x, n);
        if matches!(bc, Boundary::SlipWall) {
            let normal = dot([flux[1], flux[2], flux[3]], n);
            flux = [0.0, normal * n[0], normal * n[1], normal * n[2], 0.0];
        }
        flux.map(|x| x * area)
    }
}

/// A face's gradient from the mean `mean` of its two cells' gradients, the difference
/// `jump` = q_R − q_L of their values and `d` = x_R − x_L:
/// ∇q_f = mean − (mean·e − jump/|d|) e with e = d/|d|.
#[inline(always)]
pub fn face_gradient<T: Lane>(mean: [T; 3], jump: T, d: [T; 3]) -> [T; 3] {
    let dd = dot(d, d);
    let along = (dot(mean, d) - jump) / dd;
    std::array::from_fn(|k| mean[k] - along * d[k])
}

/// Velocity and temperature of a primitive state.
#[inline(always)]
fn velocity_temperature<T: Lane>(w: &[T; 5]) -> [T; 4] {
    [w[1], w[2], w[3], w[4] / w[0]]
}

/// Gradients of u, v, w and T from those of the primitive variables: ∇T = (∇p − T∇ρ)/ρ.
#[inline(always)]
fn gradients_of<T: Lane>(w: &[T; 5], g: &[[T; 3]; 5]) -> [[T; 3]; 4] {
    let t = w[4] / w[0];
    let dt = std::array::from_fn(|k| (g[4][k] - t * g[0][k]) / w[0]);
    [g[1], g[2], g[3], dt]
}

/// The viscous flux times area of face `f` of `s`'s prepared state (after
/// [`Solver::prepare`]), from left to right.
pub fn face_flux(s: &Solver, visc: Viscous, f: usize) -> [f64; 5] {
    let g = &s.geometry;
    let (l, r) = (g.left[f] as usize, g.right[f] as usize);
    let q = [&s.prim[l], &s.prim[r]];
    let x = [g.centroid[l], g.centroid[r]];
    if f < g.internal {
        let grad = [(q[0], &s.grad[l]), (q[1], &s.grad[r])];
        let flux = visc.face(s.gas, q, grad, x, g.normal[f]);
        flux.map(|x| x * g.area[f])
    } else {
        let bc = &s.boundaries[g.patch[f - g.internal] as usize];
        visc.boundary_face(s.gas, bc, q, &s.grad[l], x, (g.normal[f], g.area[f]))
    }
}

/// The face loop's viscous part: every face's viscous flux times area taken from its stored
/// flux, so that the gather sums F − F_v.
pub(crate) fn subtract_fluxes(s: &mut Solver, visc: Viscous) {
    let mut flux = std::mem::take(&mut s.flux);
    (flux.par_iter_mut().with_min_len(MIN_FACES))
        .enumerate()
        .for_each(|(f, out)| {
            let v = face_flux(s, visc, f);
            (0..5).for_each(|k| out[k] -= v[k]);
        });
    s.flux = flux;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::Boundary;
    use crate::flux::Limiter;
    use crate::gas::Cons;
    use crate::geometry::tests::mixed_mesh;
    use crate::implicit::{steady_implicit, Implicit};
    use crate::time::{in_batches, steady, FOUR_STAGE};
    use ferroflow_mesh::generate::{box_mesh, BoxCells};

    const MU: f64 = 0.03;

    /// ∂v_i/∂x_j of the linear test field, its divergence not zero.
    const SLOPES: [Vec3; 3] = [[0.3, -0.5, 0.1], [0.2, 0.4, -0.3], [-0.6, 0.1, 0.25]];

    /// ρ = 1 (so that T = p is linear too), a linear velocity, T with gradient (0.2, −0.1,
    /// 0.3) times `heat`.
    fn linear(x: Vec3, heat: f64) -> Prim {
        let v: Vec3 = std::array::from_fn(|i| 0.1 * i as f64 + dot(SLOPES[i], x));
        [1.0, v[0], v[1], v[2], 1.0 + heat * dot([0.2, -0.1, 0.3], x)]
    }

    fn moving(x: Vec3, _: f64) -> Prim {
        linear(x, 1.0)
    }

    fn still(x: Vec3, _: f64) -> Prim {
        let mut w = linear(x, 1.0);
        w[1..4].fill(0.0);
        w
    }

    /// On a jittered mesh of every cell kind the least-squares gradients of linear fields
    /// are exact, and the difference along the cell-to-cell direction agrees with them: each
    /// face's stress and heat flux are the exact ones, and the constant stress leaves every
    /// cell's momentum residual unchanged.
    #[test]
    fn linear_fields_give_the_exact_stress_and_heat_flux() {
        let visc = Viscous::air(Viscosity::Constant(MU));
        let gas = Gas::AIR;
        let div = SLOPES[0][0] + SLOPES[1][1] + SLOPES[2][2];
        let stress: [Vec3; 3] = std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                MU * (SLOPES[i][j] + SLOPES[j][i] - (i == j) as u8 as f64 * 2.0 / 3.0 * div)
            })
        });
        let kappa = 1.4 / 0.4 * MU / 0.72;
        for (field, moves) in [(moving as fn(Vec3, f64) -> Prim, true), (still, false)] {
            let bc = [("boundary", Boundary::Exact(field))];
            let mut s = Solver::new(&mixed_mesh(), gas, Limiter::None, &bc).unwrap();
            let u = s.sample(|x| field(x, 0.0));
            let mut euler = vec![[0.0; 5]; u.len()];
            s.residual(&u, 0.0, &mut euler);
            s.viscous = Some(visc);
            let mut r = vec![[0.0; 5]; u.len()];
            s.residual(&u, 0.0, &mut r);
            for f in 0..s.geometry.faces() {
                let (n, a) = (s.geometry.normal[f], s.geometry.area[f]);
                let flux = face_flux(&s, visc, f);
                for i in 0..3 {
                    let exact = a * dot(stress[i], n);
                    let e = flux[i + 1] - if moves { exact } else { 0.0 };
                    assert!(e.abs() < 1e-14, "face {f}: {flux:?}");
                }
                if !moves {
                    let heat = a * kappa * dot([0.2, -0.1, 0.3], n);
                    assert!((flux[4] - heat).abs() < 1e-14, "face {f}: {flux:?}");
                }
            }
            for (c, (r, e)) in r.iter().zip(&euler).enumerate() {
                assert!((1..4).all(|k| (r[k] - e[k]).abs() < 1e-14), "cell {c}");
            }
        }
    }

    /// Couette flow between a wall at rest at y = 0, T = T0, and one moving at U along x at
    /// y = 1, T = T1, constant μ: u = U y, p uniform and, the heat conducted away balancing
    /// the dissipation, T = T0 + (T1 − T0) y + Pr U²/(2 c_p) y (1 − y). The x sides take the
    /// inside state at the uniform pressure (the outflow's ghost), which in a flow uniform
    /// along x passes nothing; slip walls in z.
    const U: f64 = 0.8;
    const T0: f64 = 1.0;
    const T1: f64 = 1.2;

    fn couette_exact(y: f64) -> Prim {
        let heating = 0.72 * U * U / (2.0 * 3.5);
        let t = T0 + (T1 - T0) * y + heating * y * (1.0 - y);
        [1.0 / t, U * y, 0.0, 0.0, 1.0]
    }

    fn couette(n: usize) -> (Solver, Vec<Cons>) {
        let h = 1.0 / n as f64;
        let mesh = box_mesh(BoxCells::Hex, [1, n, 1], [h, 1.0, h]).unwrap();
        let wall = |velocity, temperature| Boundary::IsothermalWall {
            velocity,
            temperature,
        };
        let bc = [
            ("xmin", Boundary::Outflow(1.0)),
            ("xmax", Boundary::Outflow(1.0)),
            ("ymin", wall([0.0; 3], T0)),
            ("ymax", wall([U, 0.0, 0.0], T1)),
            ("zmin", Boundary::SlipWall),
            ("zmax", Boundary::SlipWall),
        ];
        let mut s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &bc).unwrap();
        s.viscous = Some(Viscous::air(Viscosity::Constant(0.05)));
        let u = s.sample(|_| [1.0, 0.0, 0.0, 0.0, 1.0]);
        (s, u)
    }

    /// Largest |u − u_exact| and |T − T_exact| over the cells.
    fn couette_errors(s: &Solver, u: &[Cons]) -> (f64, f64) {
        let mut out = (0.0f64, 0.0f64);
        for (u, x) in u.iter().zip(&s.geometry.centroid) {
            let (w, exact) = (s.gas.prim(u), couette_exact(x[1]));
            out.0 = out.0.max((w[1] - exact[1]).abs());
            out.1 = out.1.max((w[4] / w[0] - exact[4] / exact[0]).abs());
        }
        out
    }

    /// The implicit iteration converges Couette flow on 8, 16 and 32 cells (250, 800 and 4,250
    /// iterations when written: Jacobi sweeps carry diffusion slowly): u is linear, which
    /// the scheme reproduces exactly, and the temperature's error falls at second order
    /// (2.57e-4, 6.43e-5, 1.61e-5). The explicit local steps, viscous radius included, reach
    /// the same state (7,100 iterations on 8 cells).
    #[test]
    fn couette_flow_converges_at_second_order() {
        let how = Implicit {
            cfl: 1000.0,
            sweeps: 16,
        };
        // The density's residual vanishes from the start (v = 0 throughout): every
        // component's is watched, the batches run with a drop they cannot reach.
        let converged = |r: [f64; 5]| r.iter().all(|&x| x < 1e-11);
        let mut errors = Vec::new();
        for n in [8, 16, 32] {
            let (mut s, mut u) = couette(n);
            let implicit = |s: &mut Solver, u: &mut [Cons], k| {
                steady_implicit(s, u, how, (f64::NEG_INFINITY, k));
            };
            let iterations = in_batches(&mut s, &mut u, (50, 10_000), implicit, converged);
            println!("n {n}: {iterations:?} implicit iterations");
            assert!(iterations.is_some(), "n {n}");
            let (eu, et) = couette_errors(&s, &u);
            assert!(eu < 1e-8, "n {n}: u error {eu}");
            println!("n {n}: errors u {eu:.3e} T {et:.3e}");
            errors.push(et);
            if n == 8 {
                let (_, mut v) = couette(n);
                let explicit = |s: &mut Solver, u: &mut [Cons], k| {
                    steady(s, u, 2.0, &FOUR_STAGE, (f64::NEG_INFINITY, k));
                };
                let iterations = in_batches(&mut s, &mut v, (50, 50_000), explicit, converged);
                println!("n {n}: {iterations:?} explicit iterations");
                assert!(iterations.is_some());
                for (a, b) in u.iter().zip(&v) {
                    assert!((0..5).all(|k| (a[k] - b[k]).abs() < 1e-8), "{a:?} {b:?}");
                }
            }
        }
        for pair in errors.windows(2) {
            let order = (pair[0] / pair[1]).log2();
            assert!(order > 1.9, "temperature errors {errors:?}");
        }
    }
}
