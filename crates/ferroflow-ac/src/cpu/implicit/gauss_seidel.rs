//! The lexicographic Gauss–Seidel sweep over one tile, in place. The x chain is sequential by
//! definition: each node needs the increment of the node behind it. What does not wait for
//! that node (the y and z neighbours' terms, every term of the frozen operator: `row::prepare`)
//! is computed ahead of the chain for a chunk of [`CHUNK`] nodes of a line at a time in a
//! vector loop, and the chains of a few lines run interleaved, so that the processor overlaps
//! their latencies.
//!
//! Lines of one plane go in groups of [`SKEW`], line r of a group one chunk behind line
//! r − 1. When a chunk of line r is prepared, the chunk of line r − 1 below it is final and
//! the chunk of line r + 1 above it not yet relaxed, the plane behind is final and the plane
//! ahead untouched: every node sees its neighbours behind as new and those ahead as old, as in
//! a line-by-line sweep, and its terms are added in the same order (same bits).
use super::row::{finish, increments, prepare, Across};
use super::{Ctx, Ptrs, Tile};
use crate::cpu::step::V;
use ferroflow_core::Real;

/// Lines relaxed together.
const SKEW: usize = 4;

/// Nodes of a line prepared at once; line r of a group runs this far behind line r − 1.
const CHUNK: usize = 8;

/// [`Across`] for a chunk of nodes, an array per field (`prepare` vectorises into them).
type Chunk<S> = Across<[S; CHUNK]>;

impl<S: Real> Chunk<S> {
    #[inline(always)]
    fn put<const D: usize, const E: bool>(&mut self, t: usize, n: &Across<S>) {
        self.sp[t] = n.sp;
        for d in 0..D {
            self.su[d][t] = n.su[d];
            self.wall_p[d][t] = n.wall_p[d];
        }
        (self.beta_x[t], self.lam_x[t]) = (n.beta_x, n.lam_x);
        (self.u_hi[t], self.u_lo[t]) = (n.u_hi, n.u_lo);
        if E {
            (self.st[t], self.t_hi[t], self.t_lo[t]) = (n.st, n.t_hi, n.t_lo);
            self.inv_t[t] = n.inv_t;
        }
        for v in 0..1 + D + E as usize {
            self.rhs[v][t] = n.rhs[v];
        }
        (self.inv_p[t], self.inv_u[t]) = (n.inv_p, n.inv_u);
    }

    #[inline(always)]
    fn get(&self, t: usize) -> Across<S> {
        Across {
            sp: self.sp[t],
            su: std::array::from_fn(|d| self.su[d][t]),
            st: self.st[t],
            wall_p: std::array::from_fn(|d| self.wall_p[d][t]),
            beta_x: self.beta_x[t],
            lam_x: self.lam_x[t],
            u_hi: self.u_hi[t],
            u_lo: self.u_lo[t],
            t_hi: self.t_hi[t],
            t_lo: self.t_lo[t],
            rhs: std::array::from_fn(|v| self.rhs[v][t]),
            inv_p: self.inv_p[t],
            inv_u: self.inv_u[t],
            inv_t: self.inv_t[t],
        }
    }
}

/// One lexicographic sweep (forward, or backward in reverse order) over the nodes of tile `t`
/// of `cur`, in place.
///
/// # Safety
/// The tiles that run at the same time are those of one wavefront (see `wavefronts`).
pub(super) unsafe fn sweep_tile<S: Real, const D: usize, const E: bool>(
    cx: &Ctx<S>,
    t: &Tile,
    forward: bool,
    cur: Ptrs<S, V>,
) {
    let mut lines: Vec<(usize, usize)> = (t.lo[2]..t.hi[2])
        .flat_map(|k| (t.lo[1]..t.hi[1]).map(move |j| (j, k)))
        .collect();
    if !forward {
        lines.reverse();
    }
    let (x0, nx) = (t.lo[0], t.hi[0] - t.lo[0]);
    let chunks = nx.div_ceil(CHUNK);
    let equations = 1 + D + E as usize;
    let back: isize = if forward { -1 } else { 1 };
    let mut pre: [Chunk<S>; SKEW] = std::array::from_fn(|_| Chunk::filled([S::zero(); CHUNK]));
    let mut behind = [[S::zero(); V]; SKEW];
    let mut first = 0;
    while first < lines.len() {
        // A group never spans two planes: the plane before must be done first.
        let k = lines[first].1;
        let mut end = first + 1;
        while end < lines.len() && end - first < SKEW && lines[end].1 == k {
            end += 1;
        }
        let group = &lines[first..end];
        // Chunk c of a line: its first node in memory order and its length.
        let span = |c: usize| {
            let len = CHUNK.min(nx - c * CHUNK);
            let lo = if forward {
                c * CHUNK
            } else {
                nx - c * CHUNK - len
            };
            (x0 + lo, len)
        };
        for step in 0..chunks + group.len() - 1 {
            let active = |r: usize| step.checked_sub(r).filter(|c| *c < chunks);
            for (r, &(j, k)) in group.iter().enumerate() {
                let Some(c) = active(r) else { continue };
                let (i0, len) = span(c);
                let o0 = cx.l.index(i0 as isize, j as isize, k as isize);
                for u in 0..CHUNK.min(len) {
                    let w = cx.sides.at([i0 + u, j, k], D);
                    pre[r].put::<D, E>(u, &prepare::<S, D, E>(cx, o0 + u, w, &cur));
                }
                if c == 0 {
                    let o = if forward { o0 } else { o0 + len - 1 };
                    behind[r] = increments::<S, D, E>(&cur, o.wrapping_add_signed(back));
                }
            }
            for u in 0..CHUNK {
                for (r, &(j, k)) in group.iter().enumerate() {
                    let Some(c) = active(r) else { continue };
                    let (i0, len) = span(c);
                    if u >= len {
                        continue;
                    }
                    let at = if forward { u } else { len - 1 - u };
                    let o = cx.l.index((i0 + at) as isize, j as isize, k as isize);
                    let ahead = increments::<S, D, E>(&cur, o.wrapping_add_signed(-back));
                    let (lo, hi) = match forward {
                        true => (&behind[r], &ahead),
                        false => (&ahead, &behind[r]),
                    };
                    let x = finish::<S, D, E>(cx, &pre[r].get(at), lo, hi);
                    for (v, x) in x.iter().enumerate().take(equations) {
                        cur.set(v, o, *x);
                    }
                    behind[r] = x;
                }
            }
        }
        first = end;
    }
}
