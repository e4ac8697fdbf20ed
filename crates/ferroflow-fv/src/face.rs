//! The face kernel, written once over [`Lane`] for one face or four: each side's limited
//! MUSCL state ([`side`]) and an internal face's flux times area ([`internal`]).
use crate::flux::{extrapolate, roe, Limiter};
use crate::gas::{dot, Gas};
use crate::geometry::sub;
use crate::lanes::Lane;

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
