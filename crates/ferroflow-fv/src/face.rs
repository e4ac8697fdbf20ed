//! The face kernel, written once over [`Lane`] for one face or four: each side's limited
//! MUSCL state ([`side`]) and an internal face's flux times area ([`internal`]); the
//! spectral radius times area that the local time steps take ([`radius`]).
use crate::flux::{extrapolate, roe, Limiter};
use crate::gas::{dot, velocity, Gas};
use crate::geometry::sub;
use crate::lanes::Lane;
use crate::viscous::Viscous;

/// The state of cell `q` (gradients `grad`) extrapolated to a face at `r` from its centroid,
/// `other` the state across the face and `alpha` = (r·d)/|d|² (see [`extrapolate`]).
#[inline(always)]
pub fn side<T: Lane>(
    limiter: Limiter,
    q: &[T; 5],
    other: &[T; 5],
    grad: &[[T; 3]; 5],
    r: [T; 3],
    alpha: T,
) -> [T; 5] {
    let w: [T; 5] = std::array::from_fn(|v| {
        q[v] + extrapolate(limiter, dot(grad[v], r), other[v] - q[v], alpha)
    });
    // A state the gas cannot have falls back to the cell's (first order).
    let ok = T::and(T::splat(0.0).lt(w[0]), T::splat(0.0).lt(w[4]));
    std::array::from_fn(|v| T::select(ok, w[v], q[v]))
}

/// Roe's flux times `area` through an internal face of unit normal `n` and centroid `xf`,
/// between the cells of states `q`, centroids `x` and gradients `grad` (left, right).
#[inline(always)]
pub fn internal<T: Lane>(
    gas: Gas,
    limiter: Limiter,
    q: [&[T; 5]; 2],
    x: [[T; 3]; 2],
    grad: [&[[T; 3]; 5]; 2],
    face: ([T; 3], [T; 3], T),
) -> [T; 5] {
    let (n, xf, area) = face;
    let d = sub(x[1], x[0]);
    let dd = dot(d, d);
    let (rl, rr) = (sub(xf, x[0]), sub(xf, x[1]));
    let wl = side(limiter, q[0], q[1], grad[0], rl, dot(rl, d) / dd);
    let wr = side(limiter, q[1], q[0], grad[1], rr, -dot(rr, d) / dd);
    roe(gas, &wl, &wr, n).map(|x| x * area)
}

/// (|V·n| + c) A of the mean of a face's two states `q` (centroids `x`), plus
/// [`Viscous::spectral_radius`] times A in viscous flow: the face's share of its cells' time
/// steps.
#[inline(always)]
pub fn radius<T: Lane>(
    gas: Gas,
    viscous: Option<Viscous>,
    q: [&[T; 5]; 2],
    x: [[T; 3]; 2],
    n: [T; 3],
    area: T,
) -> T {
    let half = T::splat(0.5);
    let w: [T; 5] = std::array::from_fn(|v| half * (q[0][v] + q[1][v]));
    let inviscid = (dot(velocity(&w), n).abs() + gas.sound(&w)) * area;
    match viscous {
        Some(visc) => inviscid + visc.spectral_radius(gas, &w, dot(sub(x[1], x[0]), n)) * area,
        None => inviscid,
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::lanes::{avx2, F64x4};
    use ferroflow_core::random::SplitMix64;

    /// Four faces in AVX2 lanes give bitwise what each gives alone, also where the branches
    /// turn: a zero limiter, the entropy fix (sonic faces), the fall-back to first order
    /// (extrapolated densities below zero).
    #[test]
    fn four_lanes_are_four_faces_bitwise() {
        assert!(avx2(), "the lanes are not tested here");
        // SAFETY: AVX2 is present.
        unsafe { compare() }
    }

    #[target_feature(enable = "avx2")]
    unsafe fn compare() {
        let mut random = SplitMix64(17);
        let mut draw = |lo: f64, hi: f64| lo + (hi - lo) * 0.5 * (random.signed() + 1.0);
        let (mut sonic, mut fallback) = (0, 0);
        for group in 0..500 {
            let mut faces = Vec::new();
            for lane in 0..4 {
                let n = {
                    let v = [draw(-1.0, 1.0), draw(-1.0, 1.0), draw(0.1, 1.0)];
                    let l = crate::gas::dot(v, v).sqrt();
                    v.map(|x| x / l)
                };
                let mut q: [[f64; 5]; 2] = std::array::from_fn(|_| {
                    [
                        draw(0.2, 2.0),
                        draw(-2.0, 2.0),
                        draw(-2.0, 2.0),
                        draw(-2.0, 2.0),
                        draw(0.2, 2.0),
                    ]
                });
                let scale = if group % 3 == 0 { 8.0 } else { 0.5 };
                let mut grad: [[[f64; 3]; 5]; 2] = std::array::from_fn(|_| {
                    std::array::from_fn(|_| std::array::from_fn(|_| draw(-scale, scale)))
                });
                if (group + lane) % 4 == 0 {
                    // Equal states moving along n at the speed of sound: λ = Ṽn − c̃ = 0.
                    let c = Gas::AIR.sound(&q[0]);
                    for k in 0..3 {
                        q[0][k + 1] = c * n[k];
                    }
                    q[1] = q[0];
                    grad = [[[0.0; 3]; 5]; 2];
                    sonic += 1;
                }
                let x = [[0.0; 3], [draw(0.5, 1.0), draw(-0.2, 0.2), draw(-0.2, 0.2)]];
                let xf = [draw(0.2, 0.8) * x[1][0], draw(-0.2, 0.2), draw(-0.2, 0.2)];
                let r = sub(xf, x[0]);
                let w = side(Limiter::None, &q[0], &q[1], &grad[0], r, 0.5);
                fallback += usize::from(w == q[0] && grad[0][0].iter().any(|&g| g != 0.0));
                faces.push((q, grad, x, (n, xf, draw(0.1, 2.0))));
            }
            for limiter in [Limiter::None, Limiter::VanAlbada] {
                let one: Vec<[f64; 5]> = (faces.iter())
                    .map(|(q, g, x, f)| {
                        internal(Gas::AIR, limiter, [&q[0], &q[1]], *x, [&g[0], &g[1]], *f)
                    })
                    .collect();
                let lanes = |f: &dyn Fn(usize) -> f64| F64x4::from_fn(f);
                let q: [[F64x4; 5]; 2] =
                    std::array::from_fn(|s| std::array::from_fn(|v| lanes(&|i| faces[i].0[s][v])));
                let g: [[[F64x4; 3]; 5]; 2] = std::array::from_fn(|s| {
                    std::array::from_fn(|v| {
                        std::array::from_fn(|a| lanes(&|i| faces[i].1[s][v][a]))
                    })
                });
                let x: [[F64x4; 3]; 2] =
                    std::array::from_fn(|s| std::array::from_fn(|a| lanes(&|i| faces[i].2[s][a])));
                let n = std::array::from_fn(|a| lanes(&|i| faces[i].3 .0[a]));
                let xf = std::array::from_fn(|a| lanes(&|i| faces[i].3 .1[a]));
                let area = lanes(&|i| faces[i].3 .2);
                let four = internal(
                    Gas::AIR,
                    limiter,
                    [&q[0], &q[1]],
                    x,
                    [&g[0], &g[1]],
                    (n, xf, area),
                );
                for v in 0..5 {
                    let got = four[v].to_array();
                    for i in 0..4 {
                        assert_eq!(
                            got[i].to_bits(),
                            one[i][v].to_bits(),
                            "group {group} lane {i} variable {v}"
                        );
                    }
                }
            }
        }
        assert!(
            sonic >= 400 && fallback >= 20,
            "sonic {sonic}, fallback {fallback}"
        );
    }
}
