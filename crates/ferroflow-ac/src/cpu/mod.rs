//! The scheme on the CPU, the reference backend. The state lives in host memory; each
//! iteration is one fused pass over all interior nodes on a rayon pool owned by the backend
//! (`ferroflow_cpu::pool`: subnormals flushed), then the boundary fill and a buffer swap.

/// Runs `$go!(D, SRC, E, K, F)`, a macro of the caller's, with the const generics matching the
/// run-time dimension, source term, energy equation, skew-symmetric convection and fourth-order
/// differences: one specialised kernel each (a run-time test of the convection form cost the
/// 2D pass its vectorisation). Skew-symmetric convection by fourth-order differences is not a
/// scheme (`Problem::new` refuses it).
macro_rules! for_variant {
    ($dim:expr, $source:expr, $energy:expr, $skew:expr, $fourth:expr, $go:ident) => {
        match ($skew, $fourth) {
            (false, false) => for_variant!(@each $dim, $source, $energy, false, false, $go),
            (true, false) => for_variant!(@each $dim, $source, $energy, true, false, $go),
            (false, true) => for_variant!(@each $dim, $source, $energy, false, true, $go),
            (true, true) => unreachable!("skew-symmetric fourth-order differences"),
        }
    };
    (@each $dim:expr, $source:expr, $energy:expr, $k:literal, $f:literal, $go:ident) => {
        match ($dim, $source, $energy) {
            (2, false, false) => $go!(2, false, false, $k, $f),
            (2, true, false) => $go!(2, true, false, $k, $f),
            (3, false, false) => $go!(3, false, false, $k, $f),
            (3, true, false) => $go!(3, true, false, $k, $f),
            (2, false, true) => $go!(2, false, true, $k, $f),
            (2, true, true) => $go!(2, true, true, $k, $f),
            (3, false, true) => $go!(3, false, true, $k, $f),
            (3, true, true) => $go!(3, true, true, $k, $f),
            (dim, ..) => unreachable!("dimension {dim}"),
        }
    };
}

/// Runs `$body` with `$r` bound to the implicit relaxation `$relaxation` (a reference in an
/// `Option` that must be set), whichever its precision.
macro_rules! with_relaxer {
    ($relaxation:expr, $r:ident => $body:expr) => {
        match $relaxation {
            Some(Relaxation::Single($r)) => $body,
            Some(Relaxation::Double($r)) => $body,
            None => unreachable!("an explicit backend"),
        }
    };
}

mod around;
mod boundary;
pub mod formulas;
mod implicit;
mod lanes;
mod rows;
mod step;
mod xfaces;

use crate::blocks::FaceBuffers;
use crate::implicit::{GaugeSums, ImplicitBlock};
use crate::iteration::{finish, iterate, AcKernels};
use crate::{BlockBackend, Coefficients, Method, Problem, SideBc};
use boundary::XWalls;
use ferroflow_core::decomposition::{region_len, Face, Region};
use ferroflow_core::{Backend, BackendError, Fields, Layout, Real, Residuals};
use implicit::Relaxer;
use rayon::prelude::*;
use std::sync::Arc;
use xfaces::XFaces;

/// CPU backend for one block (a whole grid, or one block of a decomposed one).
pub struct CpuBackend<R: Real> {
    coeffs: Coefficients<R>,
    sides: [SideBc; 6],
    temperature: Option<usize>,
    p_ref: usize,
    source: Option<Fields<R>>,
    cur: Fields<R>,
    next: Fields<R>,
    row_sums: Vec<[f64; step::V]>,
    /// The residual sums of the last pass.
    residuals: Residuals,
    pool: Arc<rayon::ThreadPool>,
    /// The implicit relaxation's arrays, when the problem asks for it.
    implicit: Option<Relaxation<R>>,
}

/// The implicit relaxation in the precision it was asked for.
enum Relaxation<R> {
    Single(Relaxer<R, f32>),
    Double(Relaxer<R, f64>),
}

impl<R: Real> CpuBackend<R> {
    /// Sets up the state from `problem.initial` on a pool of `threads` threads (0 = all cores).
    pub fn new(problem: &Problem<R>, threads: usize) -> Result<CpuBackend<R>, BackendError> {
        CpuBackend::on(problem, Arc::new(ferroflow_cpu::pool(threads)?))
    }

    /// Sets up the state from `problem.initial` on `pool`, which other backends may share:
    /// the blocks of a decomposed grid, iterated at once, share all its threads instead of a
    /// thread each.
    pub fn on(
        problem: &Problem<R>,
        pool: Arc<rayon::ThreadPool>,
    ) -> Result<CpuBackend<R>, BackendError> {
        let mut backend = CpuBackend {
            coeffs: Coefficients::new(problem),
            sides: problem.sides,
            temperature: problem.temperature(),
            p_ref: problem.pressure_ref_offset(),
            source: problem.source.clone(),
            cur: problem.initial.clone(),
            next: problem.initial.clone(),
            row_sums: vec![[0.0; step::V]; step::interior_rows(&problem.layout)],
            residuals: Residuals::default(),
            pool,
            implicit: match problem.numerics.method {
                Method::Explicit => None,
                Method::Implicit(imp) if imp.single => {
                    Some(Relaxation::Single(Relaxer::new(problem, imp.on(false))))
                }
                Method::Implicit(imp) => {
                    Some(Relaxation::Double(Relaxer::new(problem, imp.on(false))))
                }
            },
        };
        backend.upload(&problem.initial)?;
        Ok(backend)
    }

    /// The pool the backend runs on.
    pub fn pool(&self) -> &Arc<rayon::ThreadPool> {
        &self.pool
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// The scheme's residual R(Q) of the current state, source term included, at the interior
    /// nodes (zero elsewhere): what multigrid restricts to a coarser level.
    pub fn residual_field(&self) -> Fields<R> {
        let (mut out, weights, gauge) = self.unprojected_residual();
        step::project(&mut out, &weights, gauge.gauge());
        out
    }

    /// [`CpuBackend::residual_field`] before the projection of its continuity residual, the
    /// weights 1 / Δτ, and this block's sums for the whole grid's gauge (a block of a
    /// decomposed grid projects with all blocks' sums: [`CpuBackend::project_residual`]).
    pub fn unprojected_residual(&self) -> (Fields<R>, Vec<R>, GaugeSums) {
        let mut out = Fields::zeros(self.cur.layout, self.cur.vars.len());
        let (c, cur, src, t) = (
            &self.coeffs,
            &self.cur,
            self.source.as_ref(),
            self.temperature.is_some(),
        );
        let (weights, gauge) = self
            .pool
            .install(|| step::residual_field(c, cur, &mut out, src, t));
        (out, weights, gauge)
    }

    /// Projects the continuity residual of [`CpuBackend::unprojected_residual`] with the
    /// whole grid's `gauge` ([`GaugeSums::gauge`]).
    pub fn project_residual(residual: &mut Fields<R>, weights: &[R], gauge: f64) {
        step::project(residual, weights, gauge);
    }

    /// Replaces the source term (a multigrid level's forcing); `None` removes it.
    pub fn set_source(&mut self, source: Option<Fields<R>>) -> Result<(), BackendError> {
        if let Some(s) = &source {
            s.check_state(&self.cur.layout, self.cur.vars.len(), "cpu")?;
        }
        self.source = source;
        Ok(())
    }

    /// The explicit pass, with the x walls, and moving `x_faces` (if any); whether the x
    /// walls are filled (always).
    fn pass(&mut self, p_shift: R, norms: bool, x_faces: Option<&XFaces<R>>) -> bool {
        let vars = self.cur.vars.len();
        let x_walls = XWalls::of(&self.sides, self.temperature, self.coeffs.fourth(), vars);
        let (c, cur, next, src, t, sums) = (
            &self.coeffs,
            &self.cur,
            &mut self.next,
            self.source.as_ref(),
            self.temperature.is_some(),
            &mut self.row_sums,
        );
        let x = (&x_walls, x_faces);
        self.residuals = self
            .pool
            .install(|| step::interior_pass(c, cur, next, src, t, p_shift, norms, sums, x));
        true
    }

    /// One implicit iteration of the current state in place, walls not yet filled.
    fn iterate_implicit(&mut self) {
        let (c, cur, src, t, p_ref) = (
            &self.coeffs,
            &mut self.cur,
            self.source.as_ref(),
            self.temperature.is_some(),
            self.p_ref,
        );
        self.residuals =
            with_relaxer!(self.implicit.as_mut(), r => r.iterate(c, cur, src, t, p_ref));
        self.fill_current_walls();
    }

    fn fill_current_walls(&mut self) {
        let (cur, sides, t) = (&mut self.cur, &self.sides, self.temperature);
        let fourth = self.coeffs.fourth();
        self.pool
            .install(|| boundary::fill_boundaries(cur, sides, t, fourth, false));
    }
}

impl<R: Real> Backend for CpuBackend<R> {
    type Real = R;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        // All iterations from inside the pool: each kernel's own `install` then runs at once,
        // where from outside it would wake the pool twice per iteration (a quarter of the
        // time of a 65^2 grid).
        let pool = Arc::clone(&self.pool);
        pool.install(|| {
            for it in 0..iterations {
                if self.implicit.is_some() {
                    self.iterate_implicit();
                } else {
                    // Only the last iteration's norms are returned, as on a GPU.
                    let norms = it + 1 == iterations;
                    iterate(self, self.cur.vars[0][self.p_ref], norms)?;
                }
            }
            Ok(self.residuals.clone())
        })
    }

    fn layout(&self) -> Layout {
        self.cur.layout
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        Ok(self.cur.clone())
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        fields.check_state(&self.cur.layout, self.cur.vars.len(), "cpu")?;
        self.cur.clone_from(fields);
        self.fill_current_walls();
        // Boundary nodes of both buffers carry the wall data; the pass writes interiors only.
        self.next.clone_from(&self.cur);
        Ok(())
    }
}

// Each kernel on the pool, whose threads flush subnormals (see `ferroflow_cpu::pool`).
impl<R: Real> AcKernels for CpuBackend<R> {
    type Shift = R;
    /// Whether the pass filled the x walls (the explicit pass does, row by row).
    type Filled = bool;

    fn interior_pass(&mut self, p_shift: R, norms: bool) -> Result<bool, BackendError> {
        Ok(self.pass(p_shift, norms, None))
    }

    fn fill_walls(&mut self, x_filled: bool) -> Result<(), BackendError> {
        let (next, sides, t) = (&mut self.next, &self.sides, self.temperature);
        let fourth = self.coeffs.fourth();
        self.pool
            .install(|| boundary::fill_boundaries(next, sides, t, fourth, x_filled));
        Ok(())
    }

    /// The pass sums its rows in order itself.
    fn reduce_norms(&mut self) -> Result<(), BackendError> {
        Ok(())
    }

    fn swap(&mut self) {
        std::mem::swap(&mut self.cur, &mut self.next);
    }
}

impl<R: Real> BlockBackend for CpuBackend<R> {
    /// On a thread of the first block's pool, which the blocks of a decomposed grid share
    /// ([`CpuBackend::on`]): their kernels then run there without waking another thread.
    fn batch<T: Send>(
        blocks: &mut [(usize, Self)],
        work: impl FnOnce(&mut [(usize, Self)]) -> T + Send,
    ) -> T {
        match blocks.first() {
            Some((_, b)) => Arc::clone(&b.pool).install(|| work(blocks)),
            None => work(blocks),
        }
    }

    fn pressure_at(&mut self, offset: usize) -> Result<R, BackendError> {
        Ok(self.cur.vars[0][offset])
    }

    fn step(
        &mut self,
        p_shift: R,
        norms: bool,
        faces: &mut [FaceBuffers<'_, R>],
    ) -> Result<Residuals, BackendError> {
        let layout = self.cur.layout;
        let x_faces = XFaces::of(faces, &layout);
        let filled = self.pass(p_shift, norms, x_faces.as_ref());
        finish(self, filled, norms)?;
        Ok(self.residuals.clone())
    }

    /// The x faces of short rows ([`xfaces::moves`]): a row's one or two nodes, in the rows
    /// the pass reads and writes.
    fn moves_in_step(&self, face: &Face) -> bool {
        xfaces::moves(face, &self.cur.layout, std::mem::size_of::<R>())
    }

    fn pack(&mut self, face: &Face, buf: &mut [R]) -> Result<(), BackendError> {
        self.pool.install(|| pack(&self.cur, face, buf));
        Ok(())
    }

    fn unpack(&mut self, face: &Face, buf: &[R]) -> Result<(), BackendError> {
        let cur = &mut self.cur;
        self.pool.install(|| unpack(cur, face, buf));
        Ok(())
    }

    fn implicit(&mut self) -> Result<&mut dyn ImplicitBlock<R>, BackendError> {
        match self.implicit {
            Some(_) => Ok(self),
            None => Err(crate::implicit::explicit_block("cpu")),
        }
    }
}

impl<R: Real> ImplicitBlock<R> for CpuBackend<R> {
    fn sweeps(&self) -> usize {
        with_relaxer!(self.implicit.as_ref(), r => r.sweeps())
    }

    fn residual(&mut self) -> Result<GaugeSums, BackendError> {
        let (c, cur, src, t) = (
            &self.coeffs,
            &self.cur,
            self.source.as_ref(),
            self.temperature.is_some(),
        );
        let pool = &self.pool;
        let (residuals, gauge) =
            with_relaxer!(self.implicit.as_mut(), r => pool.install(|| r.residual(c, cur, src, t)));
        self.residuals = residuals;
        Ok(gauge)
    }

    fn project(&mut self, gauge: f64) -> Result<(), BackendError> {
        let pool = &self.pool;
        self.residuals.sum_sq[0] =
            with_relaxer!(self.implicit.as_mut(), r => pool.install(|| r.project(gauge)));
        Ok(())
    }

    fn residuals(&mut self) -> Result<Residuals, BackendError> {
        Ok(self.residuals.clone())
    }

    fn sweep(&mut self, sweep: usize) -> Result<(), BackendError> {
        let (pool, t) = (&self.pool, self.temperature.is_some());
        with_relaxer!(self.implicit.as_mut(), r => pool.install(|| r.sweep(sweep, t)));
        Ok(())
    }

    fn pack_increments(&mut self, face: &Face, buf: &mut [R]) -> Result<(), BackendError> {
        let pool = &self.pool;
        with_relaxer!(self.implicit.as_mut(), r => pool.install(|| pack(r.increments(), face, buf)));
        Ok(())
    }

    fn unpack_increments(&mut self, face: &Face, buf: &[R]) -> Result<(), BackendError> {
        let pool = &self.pool;
        with_relaxer!(self.implicit.as_mut(), r => pool.install(|| unpack(r.increments(), face, buf)));
        Ok(())
    }

    fn reference_after(&mut self, offset: usize) -> Result<R, BackendError> {
        let cur = &self.cur;
        Ok(with_relaxer!(self.implicit.as_ref(), r => r.reference_after(cur, offset)))
    }

    fn update(&mut self, shift: R) -> Result<(), BackendError> {
        let (pool, cur) = (&self.pool, &mut self.cur);
        with_relaxer!(self.implicit.as_mut(), r => pool.install(|| r.update(cur, shift)));
        self.fill_current_walls();
        Ok(())
    }
}

/// Rows of a face handed to one task: the x faces' rows hold one or two values.
const FACE_ROWS_PER_TASK: usize = 64;

/// The region of each variable `face` carries (sent or, with `receive`, received) and the part
/// of the face buffer that holds it, rows in the order of [`Face::rows`] (which would list
/// every row).
pub(crate) fn face_parts(
    face: &Face,
    layout: &Layout,
    receive: bool,
) -> Vec<(Region, std::ops::Range<usize>)> {
    let mut at = 0;
    (0..face.vars)
        .map(|var| {
            let r = face.region(layout, var, receive);
            let part = at..at + region_len(&r);
            at = part.end;
            (r, part)
        })
        .collect()
}

/// Packs the values of `fields` that `face` sends into `buf`, in the buffer's precision.
pub(crate) fn pack<T: Real, R: Real>(fields: &Fields<T>, face: &Face, buf: &mut [R]) {
    let l = &fields.layout;
    for ((r, part), values) in face_parts(face, l, false).into_iter().zip(&fields.vars) {
        let (width, rows_j) = ((r[0].1 - r[0].0) as usize, r[1].1 - r[1].0);
        buf[part]
            .par_chunks_mut(width)
            .with_min_len(FACE_ROWS_PER_TASK)
            .enumerate()
            .for_each(|(row, out)| {
                let (j, k) = (
                    r[1].0 + row as isize % rows_j,
                    r[2].0 + row as isize / rows_j,
                );
                let o = l.index(r[0].0, j, k);
                for (p, v) in out.iter_mut().zip(&values[o..o + width]) {
                    *p = R::of(v.f64());
                }
            });
    }
}

/// Writes `buf` into the halo of `fields` that `face` receives.
pub(crate) fn unpack<T: Real, R: Real>(fields: &mut Fields<T>, face: &Face, buf: &[R]) {
    let l = fields.layout;
    let (row_len, rows_per_plane) = (l.stride[1], (l.stride[2] / l.stride[1]) as isize);
    for ((r, part), values) in face_parts(face, &l, true).into_iter().zip(&mut fields.vars) {
        let (width, rows_j) = ((r[0].1 - r[0].0) as usize, r[1].1 - r[1].0);
        let part = &buf[part];
        // The memory rows from the region's first to its last, in parallel; those of other j
        // in between are skipped.
        let (first, last) = (
            l.index(0, r[1].0, r[2].0) / row_len,
            l.index(0, r[1].1 - 1, r[2].1 - 1) / row_len,
        );
        values[first * row_len..(last + 1) * row_len]
            .par_chunks_mut(row_len)
            .with_min_len(FACE_ROWS_PER_TASK)
            .enumerate()
            .for_each(|(q, row)| {
                let q = (first + q) as isize;
                let j = q % rows_per_plane - l.ghost[1] as isize - r[1].0;
                let k = q / rows_per_plane - l.ghost[2] as isize - r[2].0;
                if !(0..rows_j).contains(&j) {
                    return;
                }
                let at = (k * rows_j + j) as usize * width;
                let i = (r[0].0 + l.ghost[0] as isize) as usize;
                for (t, v) in row[i..i + width].iter_mut().zip(&part[at..at + width]) {
                    *t = T::of(v.f64());
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_core::Side;

    #[test]
    fn faces_pack_and_unpack_in_the_order_of_their_rows() {
        for (dim, n) in [(2, [9, 7, 1]), (3, [7, 6, 9])] {
            let layout = Layout::new(dim, n);
            let mut fields = Fields::<f64>::zeros(layout, 1 + dim);
            for (v, a) in fields.vars.iter_mut().enumerate() {
                for (o, x) in a.iter_mut().enumerate() {
                    *x = (v * layout.len + o) as f64;
                }
            }
            for side in Side::ALL.into_iter().take(2 * dim) {
                for reach in [1, 2] {
                    let face = Face {
                        side,
                        vars: 1 + dim,
                        reach,
                    };
                    let mut buf = vec![0.0f32; face.len(&layout)];
                    pack(&fields, &face, &mut buf);
                    let mut expected = Vec::new();
                    for r in face.rows(&layout, false) {
                        let values = &fields.vars[r.var][r.offset..r.offset + r.len];
                        expected.extend(values.iter().map(|v| *v as f32));
                    }
                    assert_eq!(buf, expected, "{dim}D {side:?} reach {reach}");
                    let mut halo = Fields::<f64>::zeros(layout, 1 + dim);
                    unpack(&mut halo, &face, &buf);
                    let mut written = vec![vec![false; layout.len]; 1 + dim];
                    for r in face.rows(&layout, true) {
                        let got = &halo.vars[r.var][r.offset..r.offset + r.len];
                        let want: Vec<f64> =
                            buf[r.at..r.at + r.len].iter().map(|v| *v as f64).collect();
                        assert_eq!(got, want, "{dim}D {side:?} reach {reach}");
                        written[r.var][r.offset..r.offset + r.len].fill(true);
                    }
                    // Nothing but the halo is written.
                    for (v, a) in halo.vars.iter().enumerate() {
                        for (o, x) in a.iter().enumerate() {
                            assert!(written[v][o] || *x == 0.0, "{dim}D {side:?} {v} {o}");
                        }
                    }
                }
            }
        }
    }
}
