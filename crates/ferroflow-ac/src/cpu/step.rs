//! The fused interior pass: one sweep over memory per pseudo-time iteration computes β², the
//! spectral radii, the fourth-difference dissipation, the local time step, the residuals, the
//! updated state and the residual partial sums, with no temporary arrays. The energy equation
//! (a const generic, so that flows without it compile to the same code as before) adds T,
//! its transport and its buoyancy in the momentum equations to the same pass.
use crate::cpu::around::{Around, Offsets, RowPointers};
use crate::cpu::boundary::XWalls;
use crate::cpu::formulas::*;
#[cfg(target_arch = "x86_64")]
use crate::cpu::lanes::Avx512;
use crate::cpu::lanes::{Isa, Lanes, Narrow};
use crate::cpu::rows::RowTiles;
use crate::cpu::xfaces::XFaces;
use crate::implicit::{GaugeSums, LaneSum};
use crate::Coefficients as Coeffs;
use ferroflow_core::{Fields, Layout, Real, Residuals, GHOST};
use rayon::prelude::*;

/// Most variables of a state: p, u, v, w, T.
pub(crate) const V: usize = 5;

/// Raw pointers to the output arrays. Rows are written by one task each, so writes never
/// overlap; the pointers outlive the pass (they borrow `next` mutably for its duration).
pub(crate) struct Out<R>([*mut R; V]);
unsafe impl<R> Send for Out<R> {}
unsafe impl<R> Sync for Out<R> {}

impl<R> Out<R> {
    /// The pointers (a method, so closures capture the `Sync` wrapper, not its field).
    fn ptrs(&self) -> [*mut R; V] {
        self.0
    }
}

/// The output slices of one row of `count` nodes starting at offset `start`.
///
/// # Safety
/// No other live slice may cover these nodes (each row belongs to one task), and `'a` must
/// not outlive the arrays behind `ptrs`.
unsafe fn row_slices<'a, R>(ptrs: [*mut R; V], start: usize, count: usize) -> [&'a mut [R]; V] {
    std::array::from_fn(|v| {
        if !ptrs[v].is_null() {
            std::slice::from_raw_parts_mut(ptrs[v].add(start), count)
        } else {
            &mut []
        }
    })
}

/// The variables of `fields` as slices, empty past its last (or all, without `fields`).
pub(crate) fn var_slices<R>(fields: Option<&Fields<R>>) -> [&[R]; V] {
    std::array::from_fn(|v| {
        fields
            .and_then(|f| f.vars.get(v))
            .map_or(&[][..], |a| a.as_slice())
    })
}

#[inline(always)]
pub(crate) fn at<R: Copy>(a: &[R], o: usize) -> R {
    debug_assert!(o < a.len());
    // SAFETY: every offset is a node or ghost of the layout that sized the array.
    unsafe { *a.get_unchecked(o) }
}

/// Nodes whose squared residuals are summed before the row's sum takes them: the order of
/// the sums, which the GPU's reduction follows.
pub(crate) const CHUNK: usize = 64;

/// Convection and Laplacian `∇²q` of the transported variable `m` (a velocity component or
/// T) at node `a`, where it is `centre`, by central differences (with `F`, of fourth order).
/// Convection is the advective form `u·∇q`, plus, with `K` (skew-symmetric), `c.divergence`
/// times its difference from the divergence form `∇·(u q)` (the velocity `u` of the state).
/// The advective form is a kernel of its own: computing the extra terms times 0 cost the 3D
/// pass a fifth of its speed.
#[inline(always)]
fn transport<R: Real, X: Arith + From<R>, const D: usize, const K: bool, const F: bool>(
    c: &Coeffs<R>,
    a: &impl Around<X>,
    m: usize,
    vel: &[X; D],
    centre: X,
) -> (X, X) {
    let (mut conv, mut lap) = (X::of(0.0), X::of(0.0));
    for d in 0..D {
        let (lo, hi) = (a.q(m, d, -1), a.q(m, d, 1));
        let (inv_2h, inv_h2) = (X::from(c.inv_2h[d]), X::from(c.inv_h2[d]));
        if F {
            let (lo2, hi2) = (a.q(m, d, -2), a.q(m, d, 2));
            conv = conv + vel[d] * central_difference_4(lo2, lo, hi, hi2, inv_2h);
            lap = lap + second_difference_4(lo2, lo, centre, hi, hi2, inv_h2);
        } else {
            let advective = vel[d] * central_difference(lo, hi, inv_2h);
            conv = conv + advective;
            if K {
                let (u_lo, u_hi) = (a.q(1 + d, d, -1), a.q(1 + d, d, 1));
                let divergence = central_difference(u_lo * lo, u_hi * hi, inv_2h);
                conv = conv + X::from(c.divergence) * (divergence - advective);
            }
            lap = lap + second_difference(lo, centre, hi, inv_h2);
        }
    }
    (conv, lap)
}

/// The first derivative of variable `v` along axis `d` at node `a`: central differences of
/// second or (with `F`) fourth order.
#[inline(always)]
fn derivative<X: Arith, const F: bool>(a: &impl Around<X>, v: usize, d: usize, inv_2h: X) -> X {
    match F {
        true => central_difference_4(
            a.q(v, d, -2),
            a.q(v, d, -1),
            a.q(v, d, 1),
            a.q(v, d, 2),
            inv_2h,
        ),
        false => central_difference(a.q(v, d, -1), a.q(v, d, 1), inv_2h),
    }
}

/// What the fused pass computes at one interior node (or, in `X`, at a vector of nodes): every
/// equation's residual (pseudo-time derivative) and the quantities its local time step and the
/// implicit operator are made of.
pub(crate) struct NodeResidual<X, const D: usize> {
    /// Residual per equation: continuity, momentum per axis, energy (if solved).
    pub r: [X; V],
    /// Rate of the local pseudo-time step: Δτ = cfl / rate.
    pub rate: X,
    /// Velocity.
    pub vel: [X; D],
    /// Local artificial compressibility β².
    pub beta2: X,
    /// Spectral radius of the inviscid flux Jacobian per axis.
    pub lam: [X; D],
}

/// The residuals of the scheme at node `a` of the state (with `SRC`, plus the source term).
/// With `E` (energy), T is variable `1 + D`.
#[inline(always)]
pub(crate) fn node_residual<
    R: Real,
    X: Arith + From<R>,
    const D: usize,
    const SRC: bool,
    const E: bool,
    const K: bool,
    const F: bool,
>(
    c: &Coeffs<R>,
    a: &impl Around<X>,
) -> NodeResidual<X, D> {
    let mut r = [X::of(0.0); V];
    let mut vel = [X::of(0.0); D];
    let mut speed2 = X::of(0.0);
    for d in 0..D {
        vel[d] = a.q(1 + d, 0, 0);
        speed2 = speed2 + vel[d] * vel[d];
    }
    let beta2 = local_beta2(speed2, X::from(c.beta2_min));
    let pc = a.q(0, 0, 0);
    let mut lam = [X::of(0.0); D];
    let (mut sum_lh, mut sum_l2, mut diss, mut div) =
        (X::of(0.0), X::of(0.0), X::of(0.0), X::of(0.0));
    for d in 0..D {
        lam[d] = spectral_radius(vel[d], beta2);
        let lh = lam[d] * X::from(c.inv_h[d]);
        sum_lh = sum_lh + lh;
        sum_l2 = sum_l2 + lam[d] * lam[d];
        let d4 = fourth_difference(a.q(0, d, -2), a.q(0, d, -1), pc, a.q(0, d, 1), a.q(0, d, 2));
        diss = diss + lh * d4;
        div = div + derivative::<X, F>(a, 1 + d, d, X::from(c.inv_2h[d]));
    }
    let rate = time_step_rate(sum_lh, X::from(c.viscous_rate), sum_l2 * X::from(c.inv_4nu));
    r[0] = -beta2 * div - X::from(c.c4) * diss;
    if SRC {
        r[0] = r[0] + a.src(0);
    }
    let tc = if E { a.q(1 + D, 0, 0) } else { X::of(0.0) };
    for m in 0..D {
        let (conv, lap) = transport::<R, X, D, K, F>(c, a, 1 + m, &vel, vel[m]);
        let grad_p = derivative::<X, F>(a, 0, m, X::from(c.inv_2h[m]));
        let mut rm = X::from(c.nu) * lap - conv - grad_p * X::from(c.inv_rho);
        if E {
            rm = rm + buoyancy(X::from(c.buoyancy[m]), tc, X::from(c.t_ref));
        }
        if SRC {
            rm = rm + a.src(1 + m);
        }
        r[1 + m] = rm;
    }
    if E {
        let (conv, lap) = transport::<R, X, D, K, F>(c, a, 1 + D, &vel, tc);
        let mut rt = X::from(c.alpha) * lap - conv;
        if SRC {
            rt = rt + a.src(1 + D);
        }
        r[1 + D] = rt;
    }
    NodeResidual {
        r,
        rate,
        vel,
        beta2,
        lam,
    }
}

/// Updates the interior nodes of one row (fixed j, k) by one explicit step and returns its
/// residual sums with `N` (zeros otherwise). `N` is a const generic so that the passes without
/// norms (all but the last of `advance`) neither compute nor store the residuals.
///
/// The nodes are computed a vector ([`Lanes`]) at a time and written straight to the output
/// rows: the loads of a vector come before its stores, so unlike a loop that LLVM vectorises,
/// nothing has to be checked for overlap, and the new state needs no buffer on the stack.
/// The last vector computes up to `Lanes::WIDTH - 1` nodes past the row's last interior
/// node, into its boundary node, ghosts and padding, and keeps none of them: the stencil
/// reads two nodes and planes out at most, which the ghost rows and planes after the last
/// interior row hold, so every read stays inside the arrays (checked in debug builds).
/// `centre`, if any: the row's own nodes read from this copy, from `GHOST` nodes before its
/// first interior node ([`XFaces::centre_row`]).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn update_row<
    R: Real,
    I: Isa,
    const D: usize,
    const SRC: bool,
    const E: bool,
    const K: bool,
    const F: bool,
    const N: bool,
>(
    c: &Coeffs<R>,
    st: [usize; 3],
    q: [&[R]; V],
    src: [&[R]; V],
    mut out: [&mut [R]; V],
    start: usize,
    p_shift: R,
    centre: Option<[&[R]; V]>,
) -> [f64; V] {
    let count = out[0].len();
    let equations = 1 + D + E as usize;
    let width = Lanes::<R, I>::WIDTH;
    let (mut sums, mut chunk) = ([0.0f64; V], [0.0f64; V]);
    let rows = RowPointers::new(q, src, st, start);
    let rows = match centre {
        Some(centre) => rows.with_centre(centre),
        None => rows,
    };
    let (cfl, shift) = (Lanes::<R, I>::from(c.cfl), Lanes::from(p_shift));
    for first in (0..count).step_by(width) {
        if first.is_multiple_of(CHUNK) {
            // The lines the next chunk will write (past the row's end: the next row's), asked
            // for now: an ordinary store must first read its line, and stores waiting for
            // memory stall the loop.
            for row in out.iter().take(equations) {
                prefetch(row.as_ptr().wrapping_add(first + CHUNK), CHUNK);
            }
        }
        let nodes = rows.nodes::<I>(first);
        let n = node_residual::<R, Lanes<R, I>, D, SRC, E, K, F>(c, &nodes);
        let dt = cfl / n.rate;
        let keep = width.min(count - first);
        for (v, row) in out.iter_mut().enumerate().take(equations) {
            let mut new = nodes.q(v, 0, 0) + dt * n.r[v];
            if v == 0 {
                new = new - shift;
            }
            // Whole vectors by a length the compiler knows: one vector store.
            match keep == width {
                true => row[first..first + width].copy_from_slice(new.values()),
                false => row[first..count].copy_from_slice(&new.values()[..keep]),
            }
        }
        if N {
            // The norm measures the change of the referenced pressure: a uniform drift
            // (which the reference shift removes) is not a residual.
            let mut res = n.r;
            res[0] = n.r[0] - shift * (n.rate * Lanes::from(c.inv_cfl));
            for (sum, r) in chunk.iter_mut().zip(&res).take(equations) {
                *sum = r.values()[..keep]
                    .iter()
                    .fold(*sum, |s, r| s + r.f64() * r.f64());
            }
            if (first + width).is_multiple_of(CHUNK) || first + width >= count {
                for (sum, chunk) in sums.iter_mut().zip(&mut chunk) {
                    *sum += std::mem::take(chunk);
                }
            }
        }
    }
    sums
}

/// Asks for the cache lines of `len` values from `at` (a hint: it never faults).
#[inline(always)]
fn prefetch<R: Real>(at: *const R, len: usize) {
    #[cfg(target_arch = "x86_64")]
    for b in (0..len * R::BYTES).step_by(64) {
        // SAFETY: a prefetch reads nothing and never faults, at any address.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(at.cast::<i8>().wrapping_add(b));
        }
    }
}

/// Runs `f` compiled for AVX-512 as well (x86-64-v4: 32 vector registers of 8 f64 or 16
/// f32), which the CPU must have: the AVX2 build of the 3D pass spills registers to the
/// stack. `f` (a call of the inlined [`update_row`] on [`Avx512`] vectors) is inlined here and
/// compiled with these instructions, which its intrinsics need. The operations are the same
/// IEEE operations, each correctly rounded at any vector width (square roots and divisions
/// included; Rust never fuses a multiply and an add), so the results are bitwise those of the
/// AVX2 build.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx512dq,avx512bw")]
fn with_avx512<T>(f: impl FnOnce() -> T) -> T {
    f()
}

/// Whether the CPU runs [`with_avx512`].
fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f") && has!("avx512vl") && has!("avx512dq") && has!("avx512bw")
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Runs the fused pass from `cur` into `next` over all interior nodes, fills `x_walls` of each
/// row it updates and moves `x_faces` (if any), with the residual sums when `norms` (none
/// otherwise); `row_sums` is scratch with one entry per row, summed in row order afterwards so
/// that the result does not depend on how rows were spread over threads.
#[allow(clippy::too_many_arguments)]
pub(crate) fn interior_pass<R: Real>(
    c: &Coeffs<R>,
    cur: &Fields<R>,
    next: &mut Fields<R>,
    source: Option<&Fields<R>>,
    energy: bool,
    p_shift: R,
    norms: bool,
    row_sums: &mut [[f64; V]],
    (x_walls, x_faces): (&XWalls, Option<&XFaces<R>>),
) -> Residuals {
    let wide = has_avx512();
    let x = (Some(x_walls), x_faces);
    macro_rules! go {
        ($d:literal, $s:literal, $e:literal, $k:literal, $f:literal) => {
            pass::<R, $d, $s, $e, $k, $f>(c, cur, next, source, p_shift, norms, row_sums, wide, x)
        };
    }
    for_variant!(
        cur.layout.dim,
        source.is_some(),
        energy,
        c.skew(),
        c.fourth(),
        go
    )
}

/// The scheme's residual R(Q) (with the source term, if any) of `cur` at every interior node
/// into `out` (same layout; other nodes untouched): the rate of change one explicit step
/// would scale by its local time step. Returns the weights 1 / Δτ at every node and the
/// gauge's sums: the continuity residual is to be projected off the uniform pressure drift
/// ([`project`]), as the implicit relaxation projects it, with the sums of the whole grid.
pub(crate) fn residual_field<R: Real>(
    c: &Coeffs<R>,
    cur: &Fields<R>,
    out: &mut Fields<R>,
    source: Option<&Fields<R>>,
    energy: bool,
) -> (Vec<R>, GaugeSums) {
    macro_rules! go {
        ($d:literal, $s:literal, $e:literal, $k:literal, $f:literal) => {
            residual_rows::<R, $d, $s, $e, $k, $f>(c, cur, out, source)
        };
    }
    for_variant!(
        cur.layout.dim,
        source.is_some(),
        energy,
        c.skew(),
        c.fourth(),
        go
    )
}

/// R_p − c / Δτ with c the gauge ([`GaugeSums::gauge`]): what both methods drive to zero (the
/// reference shift takes the drift).
pub(crate) fn project<R: Real>(out: &mut Fields<R>, weights: &[R], gauge: f64) {
    let drift = R::of(gauge);
    for (r, w) in out.vars[0].iter_mut().zip(weights) {
        *r = *r - drift * *w;
    }
}

fn residual_rows<
    R: Real,
    const D: usize,
    const SRC: bool,
    const E: bool,
    const K: bool,
    const F: bool,
>(
    c: &Coeffs<R>,
    cur: &Fields<R>,
    out: &mut Fields<R>,
    source: Option<&Fields<R>>,
) -> (Vec<R>, GaugeSums) {
    let l = cur.layout;
    let (q, src) = (var_slices(Some(cur)), var_slices(source));
    // The weights 1 / Δτ, as one more array written row by row.
    let mut weights = vec![R::zero(); l.len];
    let mut ptrs = [std::ptr::null_mut(); V];
    for (ptr, v) in ptrs.iter_mut().zip(out.vars.iter_mut()) {
        *ptr = v.as_mut_ptr();
    }
    let out_ptrs = Out(ptrs);
    let mut weight_ptr = [std::ptr::null_mut(); V];
    weight_ptr[0] = weights.as_mut_ptr();
    let weight_ptr = Out(weight_ptr);
    let equations = 1 + D + E as usize;
    let (rows_j, count, st) = (l.n[1] - 2, l.n[0] - 2, l.stride);
    let sums: Vec<[f64; 2]> = (0..interior_rows(&l))
        .into_par_iter()
        .map(|r| {
            let j = 1 + r % rows_j;
            let k = if D == 3 { 1 + r / rows_j } else { 0 };
            let start = l.index(1, j as isize, k as isize);
            // SAFETY: row r is this task's alone.
            let rows = unsafe { row_slices(out_ptrs.ptrs(), start, count) };
            // SAFETY: as above; only its first slice is used.
            let [weights, ..] = unsafe { row_slices(weight_ptr.ptrs(), start, count) };
            let (mut rp, mut w) = (LaneSum::default(), LaneSum::default());
            for x in 0..count {
                let o = start + x;
                let n = node_residual::<R, _, D, SRC, E, K, F>(c, &Offsets { q, src, st, o });
                for v in 0..equations {
                    rows[v][x] = n.r[v];
                }
                let weight = n.rate * c.inv_cfl;
                weights[x] = weight;
                rp.add(x, n.r[0].f64());
                w.add(x, weight.f64());
            }
            [rp.total(), w.total()]
        })
        .collect();
    // In lanes, as the implicit relaxation's gauge: a GPU sums the same way.
    let (mut rp, mut w) = (LaneSum::default(), LaneSum::default());
    for (r, s) in sums.iter().enumerate() {
        rp.add(r, s[0]);
        w.add(r, s[1]);
    }
    let gauge = GaugeSums {
        resid: rp.total(),
        weight: w.total(),
    };
    (weights, gauge)
}

/// Number of interior rows (fixed j, k) of a layout.
pub(crate) fn interior_rows(l: &Layout) -> usize {
    (l.n[1] - 2) * if l.dim == 3 { l.n[2] - 2 } else { 1 }
}

/// The fused pass (see [`interior_pass`]); `wide`: rows updated by the AVX-512 build
/// ([`with_avx512`]), which the CPU must have; `x_walls`: filled row by row, and `x_faces`:
/// moved row by row, if any.
#[allow(clippy::too_many_arguments)]
fn pass<R: Real, const D: usize, const SRC: bool, const E: bool, const K: bool, const F: bool>(
    c: &Coeffs<R>,
    cur: &Fields<R>,
    next: &mut Fields<R>,
    source: Option<&Fields<R>>,
    p_shift: R,
    norms: bool,
    row_sums: &mut [[f64; V]],
    wide: bool,
    (x_walls, x_faces): (Option<&XWalls>, Option<&XFaces<R>>),
) -> Residuals {
    let l = cur.layout;
    let (q, src) = (var_slices(Some(cur)), var_slices(source));
    let mut ptrs = [std::ptr::null_mut(); V];
    for (ptr, v) in ptrs.iter_mut().zip(next.vars.iter_mut()) {
        *ptr = v.as_mut_ptr();
    }
    let out = Out(ptrs);
    let tiles = RowTiles::new(&l, std::mem::size_of::<R>());
    let count = l.n[0] - 2;
    let min_rows = (4096 / count).max(1);
    // The sums in the order of the visit, added in plain row order below.
    row_sums
        .par_iter_mut()
        .with_min_len(min_rows)
        .enumerate()
        .for_each_init(Vec::new, |scratch, (p, sums)| {
            let (j, k) = tiles.row(p);
            let start = l.index(1, j as isize, k as isize);
            // SAFETY: row r is this task's alone.
            let rows = unsafe { row_slices(out.ptrs(), start, count) };
            let (st, p) = (l.stride, p_shift);
            // Rows next to a received halo: their centre row from a copy with the halo.
            let row_at = (j as isize, k as isize);
            let centre = (x_faces.filter(|f| f.reads_received()))
                .map(|f| f.centre_row(q, start - GHOST, row_at, scratch));
            // The norms' pass, too, has the AVX-512 build: a benchmark's timed chunk of a
            // 257³ grid is 2 or 3 iterations, and a run checks every few dozen.
            *sums = match (wide, norms) {
                // SAFETY: the CPU has the instructions (`has_avx512`).
                #[cfg(target_arch = "x86_64")]
                (true, false) => unsafe {
                    with_avx512(|| {
                        update_row::<R, Avx512, D, SRC, E, K, F, false>(
                            c, st, q, src, rows, start, p, centre,
                        )
                    })
                },
                // SAFETY: as above.
                #[cfg(target_arch = "x86_64")]
                (true, true) => unsafe {
                    with_avx512(|| {
                        update_row::<R, Avx512, D, SRC, E, K, F, true>(
                            c, st, q, src, rows, start, p, centre,
                        )
                    })
                },
                (_, true) => update_row::<R, Narrow, D, SRC, E, K, F, true>(
                    c, st, q, src, rows, start, p, centre,
                ),
                _ => update_row::<R, Narrow, D, SRC, E, K, F, false>(
                    c, st, q, src, rows, start, p, centre,
                ),
            };
            if x_walls.is_some() || x_faces.is_some() {
                let from = l.index(-(GHOST as isize), j as isize, k as isize);
                // SAFETY: the row, ghosts included, is this task's alone; the slices of its
                // interior above are gone.
                let mut row = unsafe { row_slices(out.ptrs(), from, l.n[0] + 2 * GHOST) };
                if let Some(walls) = x_walls {
                    walls.fill(&mut row, l.n[0]);
                }
                if let Some(faces) = x_faces {
                    faces.send(&row, j as isize, k as isize);
                }
            }
        });
    if !norms {
        return Residuals::default();
    }
    let mut total = Residuals::zeros(1 + D + E as usize, l.interior_nodes());
    for r in 0..tiles.rows() {
        total.add_sums(&row_sums[tiles.position(r)][..total.equations()]);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Numerics, Physics, Problem};

    /// A box with a moving lid and a twisted state, so that every term of the pass matters.
    fn problem<R: Real>(dim: usize, n: [usize; 3]) -> Problem<R> {
        let layout = Layout::new(dim, n);
        let mut initial = Fields::zeros(layout, 1 + dim);
        layout.for_each_node(|i, j, k, o| {
            for (v, a) in initial.vars.iter_mut().enumerate() {
                a[o] = R::of(((i * 7 + j * 3 + k * 5 + v) % 11) as f64 * 0.013 - 0.05);
            }
        });
        let physics = Physics {
            viscosity: 0.01,
            density: 1.0,
        };
        Problem::new(layout, [1.0; 3], physics, Numerics::default(), initial).unwrap()
    }

    /// The row update from the same state by its four builds: with the norms and without, AVX2
    /// and AVX-512; the new states and the sums.
    fn all_builds<R: Real>(dim: usize, n: [usize; 3]) -> [(Fields<R>, Residuals); 4] {
        let p = problem::<R>(dim, n);
        let c = Coeffs::new(&p);
        [(false, true), (false, false), (true, false), (true, true)].map(|(wide, norms)| {
            let mut next = p.initial.clone();
            let mut sums = vec![[0.0; V]; interior_rows(&p.layout)];
            let shift = R::of(0.01);
            let r = match dim {
                2 => pass::<R, 2, false, false, false, false>(
                    &c,
                    &p.initial,
                    &mut next,
                    None,
                    shift,
                    norms,
                    &mut sums,
                    wide,
                    (None, None),
                ),
                _ => pass::<R, 3, false, false, false, false>(
                    &c,
                    &p.initial,
                    &mut next,
                    None,
                    shift,
                    norms,
                    &mut sums,
                    wide,
                    (None, None),
                ),
            };
            (next, r)
        })
    }

    /// The pass with `x_walls`, then the other walls, against the pass, then every wall.
    #[test]
    fn the_x_walls_the_pass_fills_are_those_of_the_wall_fill() {
        use crate::cpu::boundary::fill_boundaries;
        use crate::SideBc::{AdiabaticWall, Wall};
        for (dim, n) in [(2, [37, 29, 1]), (3, [21, 19, 17])] {
            let p = problem::<f64>(dim, n);
            let c = Coeffs::new(&p);
            // A temperature, for the adiabatic side's mirror.
            let mut state = p.initial.clone();
            let t = 1 + dim;
            state
                .vars
                .push(state.vars[1].iter().map(|u| 2.0 * u + 0.5).collect());
            let sides = [AdiabaticWall, Wall, Wall, AdiabaticWall, Wall, Wall];
            for fourth in [false, true] {
                let walls = XWalls::of(&sides, Some(t), fourth, 2 + dim);
                let [fused, after] = [Some(&walls), None].map(|x| {
                    let mut next = state.clone();
                    let mut sums = vec![[0.0; V]; interior_rows(&p.layout)];
                    let wide = has_avx512();
                    match dim {
                        2 => pass::<f64, 2, false, false, false, false>(
                            &c,
                            &state,
                            &mut next,
                            None,
                            0.0,
                            false,
                            &mut sums,
                            wide,
                            (x, None),
                        ),
                        _ => pass::<f64, 3, false, false, false, false>(
                            &c,
                            &state,
                            &mut next,
                            None,
                            0.0,
                            false,
                            &mut sums,
                            wide,
                            (x, None),
                        ),
                    };
                    fill_boundaries(&mut next, &sides, Some(t), fourth, x.is_some());
                    next
                });
                assert!(fused.vars == after.vars, "{dim}D, fourth {fourth}");
                // The x walls were filled: the low side's first ghost of p and of T changed.
                let ghost = p.layout.index(-1, 3, (dim == 3) as isize);
                for v in [0, t] {
                    assert_ne!(fused.vars[v][ghost], state.vars[v][ghost], "{dim}D var {v}");
                }
            }
        }
    }

    #[test]
    fn every_build_of_the_row_update_gives_the_same_bits() {
        let wide = has_avx512();
        // Rows of 35 and 19 interior nodes: a partial vector at the end of each, computed past
        // the row.
        for (dim, n) in [(2, [37, 29, 1]), (3, [21, 19, 17])] {
            let [(a, ra), (b, rb), (w, _), (wn, rwn)] = all_builds::<f64>(dim, n);
            assert!(
                a.vars == b.vars && (!wide || (a.vars == w.vars && a.vars == wn.vars && ra == rwn)),
                "{dim}D f64"
            );
            assert!(
                a.vars != problem::<f64>(dim, n).initial.vars,
                "{dim}D f64: no update"
            );
            assert!(ra.sum_sq.iter().all(|s| *s > 0.0), "{dim}D: {ra:?}");
            assert_eq!(rb, Residuals::default(), "{dim}D: norms not asked for");
            let [(a, ra), (b, _), (w, _), (wn, rwn)] = all_builds::<f32>(dim, n);
            assert!(
                a.vars == b.vars && (!wide || (a.vars == w.vars && a.vars == wn.vars && ra == rwn)),
                "{dim}D f32"
            );
            assert!(ra.sum_sq.iter().all(|s| *s > 0.0), "{dim}D f32: {ra:?}");
        }
    }
}
