//! The fused interior pass: one sweep over memory per pseudo-time iteration computes β², the
//! spectral radii, the fourth-difference dissipation, the local time step, the residuals, the
//! updated state and the residual partial sums, with no temporary arrays.
use crate::formulas::*;
use ferroflow_core::{Coefficients as Coeffs, Fields, Layout, Real, Residuals, MAX_EQUATIONS};
use rayon::prelude::*;

/// Raw pointers to the output arrays. Rows are written by one task each, so writes never
/// overlap; the pointers outlive the pass (they borrow `next` mutably for its duration).
struct Out<R>([*mut R; 4]);
unsafe impl<R> Send for Out<R> {}
unsafe impl<R> Sync for Out<R> {}

impl<R> Out<R> {
    /// The pointers (a method, so closures capture the `Sync` wrapper, not its field).
    fn ptrs(&self) -> [*mut R; 4] {
        self.0
    }
}

/// The output slices of one row of `count` nodes starting at offset `start`.
///
/// # Safety
/// No other live slice may cover these nodes (each row belongs to one task), and `'a` must
/// not outlive the arrays behind `ptrs`.
unsafe fn row_slices<'a, R, const D: usize>(
    ptrs: [*mut R; 4],
    start: usize,
    count: usize,
) -> [&'a mut [R]; 4] {
    std::array::from_fn(|v| {
        if v <= D {
            std::slice::from_raw_parts_mut(ptrs[v].add(start), count)
        } else {
            &mut []
        }
    })
}

#[inline(always)]
fn at<R: Copy>(a: &[R], o: usize) -> R {
    debug_assert!(o < a.len());
    // SAFETY: every offset is a node or ghost of the layout that sized the array.
    unsafe { *a.get_unchecked(o) }
}

/// Nodes per inner loop: residuals go to a stack buffer and are summed after each chunk, so
/// the update loop carries no dependency and vectorises.
const CHUNK: usize = 64;

/// Updates the interior nodes of one row (fixed j, k) and returns its residual sums.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn update_row<R: Real, const D: usize, const SRC: bool>(
    c: &Coeffs<R>,
    st: [usize; 3],
    q: [&[R]; 4],
    src: [&[R]; 4],
    out: [&mut [R]; 4],
    start: usize,
    p_shift: R,
) -> [f64; MAX_EQUATIONS] {
    let p = q[0];
    let count = out[0].len();
    let mut sums = [0.0f64; MAX_EQUATIONS];
    let mut res = [[R::zero(); CHUNK]; 4];
    for first in (0..count).step_by(CHUNK) {
        let len = CHUNK.min(count - first);
        for t in 0..len {
            let (x, o) = (first + t, start + first + t);
            let mut vel = [R::zero(); D];
            let mut speed2 = R::zero();
            for d in 0..D {
                vel[d] = at(q[1 + d], o);
                speed2 = speed2 + vel[d] * vel[d];
            }
            let beta2 = local_beta2(speed2, c.beta2_min);
            let pc = at(p, o);
            let (mut sum_lh, mut sum_l2, mut diss, mut div) =
                (R::zero(), R::zero(), R::zero(), R::zero());
            for d in 0..D {
                let s = st[d];
                let lam = spectral_radius(vel[d], beta2);
                let lh = lam * c.inv_h[d];
                sum_lh = sum_lh + lh;
                sum_l2 = sum_l2 + lam * lam;
                let d4 = fourth_difference(
                    at(p, o - 2 * s),
                    at(p, o - s),
                    pc,
                    at(p, o + s),
                    at(p, o + 2 * s),
                );
                diss = diss + lh * d4;
                div =
                    div + central_difference(at(q[1 + d], o - s), at(q[1 + d], o + s), c.inv_2h[d]);
            }
            let dt = local_time_step(c.cfl, sum_lh, c.viscous_rate, sum_l2 * c.inv_4nu);
            let mut rp = -beta2 * div - c.c4 * diss;
            if SRC {
                rp = rp + at(src[0], o);
            }
            out[0][x] = pc + dt * rp - p_shift;
            // The norm measures the change of the referenced pressure: a uniform drift (which
            // the reference shift removes) is not a residual.
            res[0][t] = rp - p_shift / dt;
            for m in 0..D {
                let um = q[1 + m];
                let (mut conv, mut lap) = (R::zero(), R::zero());
                for d in 0..D {
                    let s = st[d];
                    let (lo, hi) = (at(um, o - s), at(um, o + s));
                    conv = conv + vel[d] * central_difference(lo, hi, c.inv_2h[d]);
                    lap = lap + second_difference(lo, vel[m], hi, c.inv_h2[d]);
                }
                let s = st[m];
                let grad_p = central_difference(at(p, o - s), at(p, o + s), c.inv_2h[m]);
                let mut r = c.nu * lap - conv - grad_p * c.inv_rho;
                if SRC {
                    r = r + at(src[1 + m], o);
                }
                res[1 + m][t] = r;
                out[1 + m][x] = vel[m] + dt * r;
            }
        }
        for (sum, r) in sums.iter_mut().zip(&res).take(1 + D) {
            *sum += r[..len].iter().map(|r| r.f64() * r.f64()).sum::<f64>();
        }
    }
    sums
}

/// Runs the fused pass from `cur` into `next` over all interior nodes; `row_sums` is scratch
/// with one entry per row, summed in row order afterwards so that the result does not depend
/// on how rows were spread over threads.
pub(crate) fn interior_pass<R: Real>(
    c: &Coeffs<R>,
    cur: &Fields<R>,
    next: &mut Fields<R>,
    source: Option<&Fields<R>>,
    p_shift: R,
    row_sums: &mut [[f64; MAX_EQUATIONS]],
) -> Residuals {
    let l = cur.layout;
    match (l.dim, source.is_some()) {
        (2, false) => pass::<R, 2, false>(c, cur, next, source, p_shift, row_sums),
        (2, true) => pass::<R, 2, true>(c, cur, next, source, p_shift, row_sums),
        (3, false) => pass::<R, 3, false>(c, cur, next, source, p_shift, row_sums),
        _ => pass::<R, 3, true>(c, cur, next, source, p_shift, row_sums),
    }
}

/// Number of interior rows (fixed j, k) of a layout.
pub(crate) fn interior_rows(l: &Layout) -> usize {
    (l.n[1] - 2) * if l.dim == 3 { l.n[2] - 2 } else { 1 }
}

fn pass<R: Real, const D: usize, const SRC: bool>(
    c: &Coeffs<R>,
    cur: &Fields<R>,
    next: &mut Fields<R>,
    source: Option<&Fields<R>>,
    p_shift: R,
    row_sums: &mut [[f64; MAX_EQUATIONS]],
) -> Residuals {
    let l = cur.layout;
    let empty: &[R] = &[];
    let q: [&[R]; 4] = std::array::from_fn(|v| cur.vars.get(v).map_or(empty, |a| a.as_slice()));
    let src: [&[R]; 4] = std::array::from_fn(|v| {
        source
            .and_then(|s| s.vars.get(v))
            .map_or(empty, |a| a.as_slice())
    });
    let mut ptrs = [std::ptr::null_mut(); 4];
    for (ptr, v) in ptrs.iter_mut().zip(next.vars.iter_mut()) {
        *ptr = v.as_mut_ptr();
    }
    let out = Out(ptrs);
    let rows_j = l.n[1] - 2;
    let count = l.n[0] - 2;
    let min_rows = (4096 / count).max(1);
    row_sums
        .par_iter_mut()
        .with_min_len(min_rows)
        .enumerate()
        .for_each(|(r, sums)| {
            let j = 1 + r % rows_j;
            let k = if D == 3 { 1 + r / rows_j } else { 0 };
            let start = l.index(1, j as isize, k as isize);
            // SAFETY: row r is this task's alone.
            let rows = unsafe { row_slices::<R, D>(out.ptrs(), start, count) };
            *sums = update_row::<R, D, SRC>(c, l.stride, q, src, rows, start, p_shift);
        });
    let mut total = Residuals {
        equations: 1 + D,
        nodes: l.interior_nodes(),
        ..Default::default()
    };
    for sums in row_sums.iter() {
        for (t, s) in total.sum_sq.iter_mut().zip(sums) {
            *t += s;
        }
    }
    total
}
