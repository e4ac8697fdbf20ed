//! A node's row of A ΔQ = R, in two parts: what its y and z neighbours and its frozen operator
//! give ([`prepare`]), and the x neighbours' terms and the solve of the node's block
//! ([`finish`]). In a Gauss–Seidel sweep along x only the second part waits for the node
//! behind, so the sweep computes the first for a chunk of a line in a vector loop ahead of the
//! chain (`gauss_seidel`). Every relaxation runs both parts in this order: the terms are added
//! z, y, then x, as they always were, so the bits do not depend on how the parts are scheduled.
use super::{Ctx, Ptrs, Sources, Walls, BETA2, INV_DIAG_P, INV_DIAG_T, INV_DIAG_U};
use crate::cpu::step::{at, V};
use ferroflow_core::Real;

/// What [`prepare`] gives for one node (`T` a value), or for a chunk of nodes (`T` an array
/// of them).
#[derive(Clone, Copy)]
pub(super) struct Across<T> {
    /// The y and z neighbours' terms of the continuity, momentum and energy rows.
    pub(super) sp: T,
    pub(super) su: [T; 3],
    pub(super) st: T,
    /// The pressure coupling of the walls next to the node, per axis.
    pub(super) wall_p: [T; 3],
    /// The x couplings: β² / 2h of the velocity, λ_p / 2h of the pressure, the velocity's
    /// and T's to the neighbours above and below.
    pub(super) beta_x: T,
    pub(super) lam_x: T,
    pub(super) u_hi: T,
    pub(super) u_lo: T,
    pub(super) t_hi: T,
    pub(super) t_lo: T,
    /// The right side and the inverse diagonals of p, u and T.
    pub(super) rhs: [T; V],
    pub(super) inv_p: T,
    pub(super) inv_u: T,
    pub(super) inv_t: T,
}

impl<T: Copy> Across<T> {
    /// Every field `z`.
    pub(super) fn filled(z: T) -> Across<T> {
        Across {
            sp: z,
            su: [z; 3],
            st: z,
            wall_p: [z; 3],
            beta_x: z,
            lam_x: z,
            u_hi: z,
            u_lo: z,
            t_hi: z,
            t_lo: z,
            rhs: [z; V],
            inv_p: z,
            inv_u: z,
            inv_t: z,
        }
    }
}

/// The terms of the row of the node at `o` that do not depend on its x neighbours, the
/// increments across read from `across`.
///
/// # Safety
/// The values read from `across` are not being written by another thread.
#[inline(always)]
pub(super) unsafe fn prepare<S: Real, const D: usize, const E: bool>(
    cx: &Ctx<S>,
    o: usize,
    w: Walls,
    across: &Ptrs<S, V>,
) -> Across<S> {
    let op = &cx.op;
    let fz = &cx.frozen;
    let beta2 = at(fz[BETA2], o);
    let mut n = Across::filled(S::zero());
    (n.inv_p, n.inv_u) = (at(fz[INV_DIAG_P], o), at(fz[INV_DIAG_U], o));
    if E {
        n.inv_t = at(fz[INV_DIAG_T], o);
    }
    for (v, r) in n.rhs.iter_mut().enumerate().take(1 + D + E as usize) {
        *r = at(cx.rhs[v], o);
    }
    for d in (0..D).rev() {
        let s = cx.st[d];
        let a = at(fz[d], o) * op.inv_2h[d];
        let ap = op.pressure_radius(at(fz[d], o), beta2, op.inv_h[d]) * op.inv_2h[d];
        let b = at(fz[3 + d], o) * op.inv_2h[d];
        let beta = beta2 * op.inv_2h[d];
        let (c_hi, c_lo) = (b - a - op.nu_h2[d], -b - a - op.nu_h2[d]);
        let (t_hi, t_lo) = (b - a - op.alpha_h2[d], -b - a - op.alpha_h2[d]);
        n.wall_p[d] =
            op.inv_2h_rho[d] * (S::of(w.hi[d] as u8 as f64) - S::of(w.lo[d] as u8 as f64));
        if d == 0 {
            (n.beta_x, n.lam_x, n.u_hi, n.u_lo) = (beta, ap, c_hi, c_lo);
            if E {
                (n.t_hi, n.t_lo) = (t_hi, t_lo);
            }
            continue;
        }
        let (p_lo, p_hi) = (across.get(0, o - s), across.get(0, o + s));
        n.sp = n.sp + beta * (across.get(1 + d, o + s) - across.get(1 + d, o - s))
            - ap * (p_lo + p_hi);
        for m in 0..D {
            n.su[m] = n.su[m] + c_hi * across.get(1 + m, o + s) + c_lo * across.get(1 + m, o - s);
        }
        n.su[d] = n.su[d] + op.inv_2h_rho[d] * (p_hi - p_lo);
        if E {
            n.st = n.st + t_hi * across.get(1 + D, o + s) + t_lo * across.get(1 + D, o - s);
        }
    }
    n
}

/// The increment of a node from `n` (its [`prepare`]) and the increments `lo` and
/// `hi` of its x neighbours below and above. The node's block is triangular (T, then p, then
/// u): solved exactly.
#[inline(always)]
pub(super) fn finish<S: Real, const D: usize, const E: bool>(
    cx: &Ctx<S>,
    n: &Across<S>,
    lo: &[S; V],
    hi: &[S; V],
) -> [S; V] {
    let op = &cx.op;
    let sp = n.sp + n.beta_x * (hi[1] - lo[1]) - n.lam_x * (lo[0] + hi[0]);
    let mut su = n.su;
    for m in 0..D {
        su[m] = su[m] + n.u_hi * hi[1 + m] + n.u_lo * lo[1 + m];
    }
    su[0] = su[0] + op.inv_2h_rho[0] * (hi[0] - lo[0]);
    let mut out = [S::zero(); V];
    let dt = if E {
        let st = n.st + n.t_hi * hi[1 + D] + n.t_lo * lo[1 + D];
        (n.rhs[1 + D] - st) * n.inv_t
    } else {
        S::zero()
    };
    let dp = (n.rhs[0] - sp) * n.inv_p;
    out[0] = dp;
    for m in 0..D {
        let mut r = n.rhs[1 + m] - su[m] - n.wall_p[m] * dp;
        if E {
            r = r + op.buoyancy[m] * dt;
        }
        out[1 + m] = r * n.inv_u;
    }
    if E {
        out[1 + D] = dt;
    }
    out
}

/// The increments of the `1 + D (+ 1)` equations at offset `o` of `from`.
///
/// # Safety
/// `o` is a node of the arrays, which no other thread is writing there.
#[inline(always)]
pub(super) unsafe fn increments<S: Real, const D: usize, const E: bool>(
    from: &Ptrs<S, V>,
    o: usize,
) -> [S; V] {
    let mut x = [S::zero(); V];
    for (v, x) in x.iter_mut().enumerate().take(1 + D + E as usize) {
        *x = from.get(v, o);
    }
    x
}

/// The increment of the node at `o` from its whole row, the other nodes' increments read from
/// `nb`.
///
/// # Safety
/// The neighbours' values in `nb` are not being written by another thread.
#[inline(always)]
pub(super) unsafe fn relax_node<S: Real, const D: usize, const E: bool>(
    cx: &Ctx<S>,
    o: usize,
    w: Walls,
    nb: &Sources<S>,
) -> [S; V] {
    let lo = increments::<S, D, E>(&nb.x_lo, o - cx.st[0]);
    let hi = increments::<S, D, E>(&nb.x_hi, o + cx.st[0]);
    finish::<S, D, E>(cx, &prepare::<S, D, E>(cx, o, w, &nb.across), &lo, &hi)
}
