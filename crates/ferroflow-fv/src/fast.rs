//! The residual's loops with seed 004's optimisations each switchable ([`Options`]), so that
//! one binary measures the ablation: scalar or AVX2 loops (four faces or cells per
//! instruction, gathered from their cells), cell data as structure of arrays or 64-byte
//! records ([`Layout`]), face conflicts handled by stored fluxes and a per-cell gather, by a
//! serial scatter or by colouring ([`Conflicts`]), software prefetching. Renumbering is the
//! solver's ([`Solver::renumbered`]): these loops run in the order they are given.
//!
//! Every variant computes each face's flux, inviscid and viscous, with the same operations
//! as [`Solver`]. Stored fluxes and the serial scatter add each cell's faces in ascending
//! order, as [`Solver::gather`] does: their residuals are bitwise the solver's on any thread
//! count. Colouring adds them colour by colour: the same for any thread count, not bitwise
//! the solver's. The time integrators evaluate the residual through these loops with the
//! options of [`Solver::loops`] ([`Solver::evaluate`]).
use crate::boundary::{ghost, Boundary};
use crate::face::{internal, radius, side};
use crate::flux::{roe, Limiter};
use crate::gas::{dot, Cons, Gas, Vec3};
use crate::geometry::{sub, Geometry};
use crate::gradients::MIN_CELLS;
use crate::lanes::Lane;
use crate::layout::{CellView, Cells, Layout};
use crate::residual::Solver;
use crate::viscous::Viscous;
use ferroflow_mesh::colour::greedy;
use rayon::prelude::*;
use std::ops::Range;

/// Faces per rayon task.
const MIN_FACES: usize = 2048;

/// How faces that share a cell add to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflicts {
    /// Each face's flux stored, then each cell gathers its faces (any thread count).
    Stored,
    /// Each face adds to its two cells as it is computed, on one thread.
    Scatter,
    /// Faces in colours that share no cell; each colour's faces add to their cells in
    /// parallel.
    Colour,
}

/// Which optimisations the loops use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// AVX2 face and cell loops (where the CPU has AVX2; scalar otherwise).
    pub simd: bool,
    /// Layout of the cell data.
    pub layout: Layout,
    /// How the face loop's results reach the cells.
    pub conflicts: Conflicts,
    /// With [`Layout::Aos`]: read a cell's records whole and transpose four cells' in
    /// registers, instead of number by number.
    pub transpose: bool,
    /// Prefetch the cells of the faces this many faces ahead (0: none).
    pub prefetch: usize,
}

impl Options {
    /// Seed 004's baseline: scalar, structure of arrays, stored fluxes, no prefetch.
    pub const BASELINE: Options = Options {
        simd: false,
        layout: Layout::Soa,
        conflicts: Conflicts::Stored,
        transpose: false,
        prefetch: 0,
    };

    /// The fastest variant that is bitwise [`Solver::residual`] on any thread count (in the
    /// ablation on 1M cells): AVX2, 64-byte records transposed in registers, stored fluxes,
    /// no prefetch.
    pub const DEFAULT: Options = Options {
        simd: true,
        layout: Layout::Aos,
        conflicts: Conflicts::Stored,
        transpose: true,
        prefetch: 0,
    };
}

impl Default for Options {
    fn default() -> Options {
        Options::DEFAULT
    }
}

/// Face data in loop order, one array per number.
struct Faces {
    left: Vec<u32>,
    right: Vec<u32>,
    normal: [Vec<f64>; 3],
    area: Vec<f64>,
    centroid: [Vec<f64>; 3],
}

/// For four cells at a time, rows of four (index, coefficients): each cell's faces in
/// ascending order, padded with zero coefficients to the group's longest.
struct Slots {
    /// First row of each group of four cells, and the end.
    rows: Vec<usize>,
    index: Vec<u32>,
    coef: [Vec<f64>; 3],
}

/// The residual's loops on one solver's mesh, as [`Options`] says: the data the loops keep
/// in their own order and layout. The mesh, conditions, gas, limiter and viscosity are read
/// from the solver at each call.
pub struct Loops {
    options: Options,
    simd: bool,
    cells: Cells,
    faces: Faces,
    /// Internal faces of each colour, in loop positions (one range without colouring).
    colours: Vec<Range<usize>>,
    /// Flux times area of each face (stored fluxes).
    flux: [Vec<f64>; 5],
    /// Σ F A over the boundary faces, in face order.
    outflow: [f64; 5],
    /// Spectral radius times area of each face (see [`crate::face::radius`]).
    wave: Vec<f64>,
    /// Gradient stencils: neighbour, weights.
    stencils: Slots,
    /// Gathers: face, sign.
    gathers: Slots,
}

impl Loops {
    /// The loops of `solver`'s mesh.
    pub fn new(solver: &Solver, options: Options) -> Loops {
        let g = &solver.geometry;
        let mut order: Vec<u32> = (0..g.faces() as u32).collect();
        // Without colouring, one "colour" of every internal face.
        let mut groups = vec![(0..g.internal as u32).collect()];
        if options.conflicts == Conflicts::Colour {
            groups = greedy(g.internal, g.cells, |f| [g.left[f], g.right[f]]).groups();
        }
        let (mut colours, mut start) = (Vec::new(), 0);
        for group in groups {
            order[start..start + group.len()].copy_from_slice(&group);
            colours.push(start..start + group.len());
            start += group.len();
        }
        let pick = |a: &dyn Fn(usize) -> f64| order.iter().map(|&f| a(f as usize)).collect();
        let faces = Faces {
            left: order.iter().map(|&f| g.left[f as usize]).collect(),
            right: order.iter().map(|&f| g.right[f as usize]).collect(),
            normal: std::array::from_fn(|k| pick(&|f| g.normal[f][k])),
            area: pick(&|f| g.area[f]),
            centroid: std::array::from_fn(|k| pick(&|f| g.face_centroid[f][k])),
        };
        let stencils = slots(g, |c, s, f| {
            let w = solver.weights[g.cell_offsets[c] + s];
            (g.across(f, c).0 as u32, w)
        });
        let gathers = slots(g, |c, _, f| (f as u32, [g.across(f, c).1, 0.0, 0.0]));
        Loops {
            simd: options.simd && crate::lanes::avx2(),
            options,
            cells: Cells::new(options.layout, &g.centroid, g.cells),
            flux: std::array::from_fn(|_| vec![0.0; g.faces()]),
            outflow: [0.0; 5],
            wave: vec![0.0; g.faces()],
            faces,
            colours,
            stencils,
            gathers,
        }
    }

    /// The options the loops were built with.
    pub fn options(&self) -> Options {
        self.options
    }

    /// The number of colours (1 without colouring).
    pub fn colours(&self) -> usize {
        self.colours.len()
    }

    /// R(u) at time `t` into `r`, as [`Solver::residual`] computes it for `s`, the solver
    /// the loops were built for; returns Σ F A over the boundary.
    pub fn residual(&mut self, s: &Solver, u: &[Cons], t: f64, r: &mut [Cons]) -> [f64; 5] {
        self.prepare(s, u, t);
        self.face_loop(s, t, r);
        self.gather(s, r)
    }

    /// The cell loops before the face loop: primitive states, ghosts, gradients.
    pub fn prepare(&mut self, s: &Solver, u: &[Cons], t: f64) {
        let (g, gas, simd) = (&s.geometry, s.gas, self.simd);
        let view = self.cells.view(self.options.transpose);
        for_groups(g.cells, simd, |c0, vector| {
            // SAFETY: each group writes its own cells.
            unsafe {
                if vector {
                    #[cfg(target_arch = "x86_64")]
                    primitives_avx2(view, gas, u, c0)
                } else {
                    primitives::<f64>(view, gas, u, c0)
                }
            }
        });
        let boundaries = &s.boundaries;
        (g.internal..g.faces()).into_par_iter().for_each(|f| {
            let bc = &boundaries[g.patch[f - g.internal] as usize];
            let ghost_cell = g.right[f] as usize;
            // SAFETY: each face writes its own ghost and reads its cell, written above.
            unsafe {
                let w = view.prim1(g.left[f] as usize);
                let wg = ghost(gas, bc, &w, g.normal[f], g.centroid[ghost_cell], t);
                view.set_prim(ghost_cell, &wg);
            }
        });
        let (stencils, weights) = (&self.stencils, &s.weights);
        for_groups(g.cells, simd, |c0, vector| {
            // SAFETY: each group writes its own cells' gradients and reads states only.
            unsafe {
                if vector {
                    #[cfg(target_arch = "x86_64")]
                    gradients_avx2(view, stencils, c0)
                } else {
                    scalar_gradient(view, g, weights, c0)
                }
            }
        });
    }

    /// Each cell's time step CFL Ω_i / Σ_f λ_f A_f into `dt` from the prepared states (after
    /// [`Loops::prepare`]), bitwise [`Solver::time_steps`]: a face loop of the spectral
    /// radii in face order, then each cell's sum over its faces in ascending order.
    pub fn time_steps(&mut self, s: &Solver, cfl: f64, dt: &mut [f64]) {
        let (g, gas, viscous, simd) = (&s.geometry, s.gas, s.viscous, self.simd);
        let view = self.cells.view(self.options.transpose);
        (self.wave.par_chunks_mut(MIN_FACES))
            .enumerate()
            .for_each(|(k, wave)| {
                let f0 = k * MIN_FACES;
                let mut done = 0;
                #[cfg(target_arch = "x86_64")]
                if simd {
                    // SAFETY: AVX2 is present (`simd`); faces in range.
                    done = unsafe { radii_avx2(view, g, (gas, viscous), f0, wave) };
                }
                // SAFETY: faces in range; the states are only read.
                unsafe { radii::<f64>(view, g, (gas, viscous), f0 + done, &mut wave[done..]) };
            });
        let (wave, gathers) = (&self.wave, &self.gathers);
        let dt = Steps(dt.as_mut_ptr());
        for_groups(g.cells, simd, |c0, vector| {
            // SAFETY: each group writes its own cells' steps.
            unsafe {
                if vector {
                    #[cfg(target_arch = "x86_64")]
                    steps_avx2(dt, g, wave, gathers, (cfl, c0))
                } else {
                    scalar_step(dt, g, wave, (cfl, c0))
                }
            }
        });
    }

    /// The face loop: every face's flux; with [`Conflicts::Scatter`] or [`Conflicts::Colour`]
    /// added into `r` (zeroed first), else stored.
    pub fn face_loop(&mut self, s: &Solver, t: f64, r: &mut [Cons]) {
        let view = self.cells.view(self.options.transpose);
        let g = &s.geometry;
        let out = Out {
            flux: self.flux.each_mut().map(|f| f.as_mut_ptr()),
            r: r.as_mut_ptr(),
            cells: g.cells,
        };
        let (n, internal) = (g.faces(), g.internal);
        let kernel = Kernel {
            options: self.options,
            simd: self.simd,
            geometry: g,
            faces: &self.faces,
            gas: s.gas,
            limiter: s.limiter,
            viscous: s.viscous,
            boundaries: &s.boundaries,
        };
        let run = |span: Range<usize>| kernel.faces(view, out, span, t);
        match self.options.conflicts {
            Conflicts::Stored => chunks(0..n, MIN_FACES).into_par_iter().for_each(run),
            Conflicts::Scatter => {
                r.fill([0.0; 5]);
                run(0..n);
            }
            Conflicts::Colour => {
                r.fill([0.0; 5]);
                for colour in &self.colours {
                    chunks(colour.clone(), MIN_FACES)
                        .into_par_iter()
                        .for_each(run);
                }
                run(internal..n);
            }
        }
        let mut sum = [0.0; 5];
        for f in internal..n {
            for v in 0..5 {
                sum[v] += self.flux[v][f];
            }
        }
        self.outflow = sum;
    }

    /// The cell loop after the face loop: with stored fluxes, each cell's residual gathered
    /// from its faces into `r`. Returns Σ F A over the boundary faces.
    pub fn gather(&mut self, s: &Solver, r: &mut [Cons]) -> [f64; 5] {
        if self.options.conflicts == Conflicts::Stored {
            let (g, flux, gathers) = (&s.geometry, &self.flux, &self.gathers);
            let r = Rows(r.as_mut_ptr());
            for_groups(g.cells, self.simd, |c0, vector| {
                // SAFETY: each group writes its own cells' rows.
                unsafe {
                    if vector {
                        #[cfg(target_arch = "x86_64")]
                        gather_avx2(r, flux, gathers, c0)
                    } else {
                        scalar_gather(r, g, flux, c0)
                    }
                }
            });
        }
        self.outflow
    }
}

/// What the face loop reads besides the cells.
struct Kernel<'a> {
    options: Options,
    simd: bool,
    geometry: &'a Geometry,
    faces: &'a Faces,
    gas: Gas,
    limiter: Limiter,
    viscous: Option<Viscous>,
    boundaries: &'a [Boundary],
}

impl Kernel<'_> {
    /// Faces at loop positions `span`: four at a time where the loops are vectorised, the
    /// rest one at a time; boundary faces one at a time.
    fn faces(&self, view: CellView, out: Out, span: Range<usize>, t: f64) {
        let split = span.end.min(self.geometry.internal).max(span.start);
        let mut p = span.start;
        #[cfg(target_arch = "x86_64")]
        if self.simd {
            // SAFETY: AVX2 is present (`simd`); positions in range.
            p = unsafe { self.internal_avx2(view, out, p..split) };
        }
        // SAFETY: positions in range; the caller's spans write disjoint cells or faces.
        unsafe {
            self.internal::<f64>(view, out, p..split);
        }
        for p in split..span.end {
            // SAFETY: as above.
            unsafe { self.boundary(view, out, p, t) };
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn internal_avx2(&self, view: CellView, out: Out, span: Range<usize>) -> usize {
        self.internal::<F>(view, out, span)
    }

    /// Internal faces at positions `span`, `T::LANES` at a time; returns where the whole
    /// groups end.
    #[inline(always)]
    unsafe fn internal<T: Lane>(&self, view: CellView, out: Out, span: Range<usize>) -> usize {
        let f = &self.faces;
        let ahead = self.options.prefetch;
        let mut p = span.start;
        while p + T::LANES <= span.end {
            if ahead > 0 && p + ahead + T::LANES <= span.end {
                for i in 0..T::LANES {
                    view.prefetch(f.left[p + ahead + i] as usize);
                    view.prefetch(f.right[p + ahead + i] as usize);
                }
            }
            let l = |i: usize| f.left[p + i] as usize;
            let r = |i: usize| f.right[p + i] as usize;
            let at = |a: &Vec<f64>| T::load(a[p..p + T::LANES].as_ptr());
            let ((ql, xl), (qr, xr)) = (view.state(l), view.state(r));
            let (gl, gr) = (view.grad(l), view.grad(r));
            let (n, area) = (f.normal.each_ref().map(at), at(&f.area));
            let face = (n, f.centroid.each_ref().map(at), area);
            let mut flux = internal(
                self.gas,
                self.limiter,
                [&ql, &qr],
                [xl, xr],
                [&gl, &gr],
                face,
            );
            if let Some(visc) = self.viscous {
                let grad = [(&ql, &gl), (&qr, &gr)];
                let fv = visc.face(self.gas, [&ql, &qr], grad, [xl, xr], n);
                for v in 0..5 {
                    flux[v] = flux[v] - fv[v] * area;
                }
            }
            out.put(self.options.conflicts, p, l, r, &flux);
            p += T::LANES;
        }
        p
    }

    /// Boundary face at position `p` (its face number too): its cell's extrapolated state
    /// against the ghost of it; stored for the outflow, and added to the cell as the
    /// internal faces are.
    unsafe fn boundary(&self, view: CellView, out: Out, p: usize, t: f64) {
        let (g, f) = (&self.geometry, &self.faces);
        let (l, gh) = (f.left[p] as usize, f.right[p] as usize);
        let n = [0, 1, 2].map(|k| f.normal[k][p]);
        let xf = [0, 1, 2].map(|k| f.centroid[k][p]);
        let (xl, xg) = (view.centroid::<f64>(|_| l), view.centroid::<f64>(|_| gh));
        let d = sub(xg, xl);
        let rl = sub(xf, xl);
        let alpha = dot(rl, d) / dot(d, d);
        let (q, qg, grad) = (view.prim1(l), view.prim1(gh), view.grad1(l));
        let wl = side(self.limiter, &q, &qg, &grad, rl, alpha);
        let bc = &self.boundaries[g.patch[p - g.internal] as usize];
        let wr = ghost(self.gas, bc, &wl, n, xf, t);
        let area = f.area[p];
        let mut flux = roe(self.gas, &wl, &wr, n).map(|x| x * area);
        if let Some(visc) = self.viscous {
            let fv = visc.boundary_face(self.gas, bc, [&q, &qg], &grad, [xl, xg], (n, area));
            for v in 0..5 {
                flux[v] -= fv[v];
            }
        }
        out.put(Conflicts::Stored, p, |_| l, |_| gh, &flux);
        if self.options.conflicts != Conflicts::Stored {
            out.put(self.options.conflicts, p, |_| l, |_| gh, &flux);
        }
    }
}

/// The AVX2 lanes.
#[cfg(target_arch = "x86_64")]
type F = crate::lanes::F64x4;

/// Where the face loop's results go.
#[derive(Clone, Copy)]
struct Out {
    flux: [*mut f64; 5],
    r: *mut Cons,
    cells: usize,
}

// SAFETY: the face loop's tasks write disjoint faces, or cells that no other task of the
// colour touches.
unsafe impl Send for Out {}
// SAFETY: as for Send.
unsafe impl Sync for Out {}

impl Out {
    /// The flux of the faces at positions `p + lane` (cells `l(lane)`, `r(lane)`): stored,
    /// or added to the left cell and taken from the right one.
    #[inline(always)]
    unsafe fn put<T: Lane>(
        self,
        how: Conflicts,
        p: usize,
        l: impl Fn(usize) -> usize,
        r: impl Fn(usize) -> usize,
        flux: &[T; 5],
    ) {
        if how == Conflicts::Stored {
            for v in 0..5 {
                flux[v].store(self.flux[v].add(p));
            }
            return;
        }
        // Lane by lane: the faces' order, which the cells' sums keep.
        let lanes: [[f64; 4]; 5] = std::array::from_fn(|v| {
            let mut a = [0.0; 4];
            flux[v].each(|i, x| a[i] = x);
            a
        });
        for i in 0..T::LANES {
            let left = &mut *self.r.add(l(i));
            for v in 0..5 {
                left[v] += lanes[v][i];
            }
            if r(i) < self.cells {
                let right = &mut *self.r.add(r(i));
                for v in 0..5 {
                    right[v] -= lanes[v][i];
                }
            }
        }
    }
}

/// `r`'s rows, written by disjoint groups of cells.
#[derive(Clone, Copy)]
struct Rows(*mut Cons);
// SAFETY: each task writes its own cells' rows.
unsafe impl Send for Rows {}
// SAFETY: as for Send.
unsafe impl Sync for Rows {}

/// `dt`'s entries, written by disjoint groups of cells.
#[derive(Clone, Copy)]
struct Steps(*mut f64);
// SAFETY: each task writes its own cells' entries.
unsafe impl Send for Steps {}
// SAFETY: as for Send.
unsafe impl Sync for Steps {}

/// `range` in pieces of at least `min` (a multiple of 4).
fn chunks(range: Range<usize>, min: usize) -> Vec<Range<usize>> {
    (range.clone().step_by(min))
        .map(|s| s..(s + min).min(range.end))
        .collect()
}

/// `f(c0, vector)` over the groups of four cells (vector where `simd`) in parallel, then
/// `f(c, false)` for the cells left over.
fn for_groups(cells: usize, simd: bool, f: impl Fn(usize, bool) + Sync) {
    let groups = cells / 4;
    (0..groups)
        .into_par_iter()
        .with_min_len(MIN_CELLS / 4)
        .for_each(|k| {
            if simd {
                f(4 * k, true);
            } else {
                (4 * k..4 * k + 4).for_each(|c| f(c, false));
            }
        });
    (4 * groups..cells).for_each(|c| f(c, false));
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn primitives_avx2(view: CellView, gas: Gas, u: &[Cons], c0: usize) {
    primitives::<F>(view, gas, u, c0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gradients_avx2(view: CellView, s: &Slots, c0: usize) {
    gradients::<F>(view, s, c0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn gather_avx2(r: Rows, flux: &[Vec<f64>; 5], s: &Slots, c0: usize) {
    gather::<F>(r, flux, s, c0)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn radii_avx2(
    view: CellView,
    g: &Geometry,
    flow: (Gas, Option<Viscous>),
    f0: usize,
    wave: &mut [f64],
) -> usize {
    radii::<F>(view, g, flow, f0, wave)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn steps_avx2(dt: Steps, g: &Geometry, wave: &[f64], s: &Slots, at: (f64, usize)) {
    steps::<F>(dt, g, wave, s, at)
}

/// The gradient stencils or gathers of `g`: `entry(c, s, f)` for cell c's s-th face f.
fn slots(g: &Geometry, entry: impl Fn(usize, usize, usize) -> (u32, Vec3)) -> Slots {
    let mut out = Slots {
        rows: vec![0],
        index: Vec::new(),
        coef: std::array::from_fn(|_| Vec::new()),
    };
    for c0 in (0..g.cells / 4).map(|k| 4 * k) {
        let rows = (c0..c0 + 4).map(|c| g.faces_of(c).len()).max().unwrap_or(0);
        for s in 0..rows {
            for c in c0..c0 + 4 {
                let faces = g.faces_of(c);
                // Padding: the first face's entry with zero coefficients adds ±0 to a sum
                // that started at +0 and so is never −0: bitwise no change.
                let (i, w) = match faces.get(s) {
                    Some(&f) => entry(c, s, f as usize),
                    None => (entry(c, 0, faces[0] as usize).0, [0.0; 3]),
                };
                out.index.push(i);
                for a in 0..3 {
                    out.coef[a].push(w[a]);
                }
            }
        }
        out.rows.push(out.rows.last().unwrap() + rows);
    }
    out
}

/// Primitive states of cells `c0 + lane` from `u`.
#[inline(always)]
unsafe fn primitives<T: Lane>(view: CellView, gas: Gas, u: &[Cons], c0: usize) {
    let u: [T; 5] = std::array::from_fn(|v| T::from_fn(|i| u[c0 + i][v]));
    view.set_prim(c0, &gas.prim(&u));
}

/// Gradients of cells `c0 + lane` (four), rows of neighbours in each cell's face order.
#[inline(always)]
unsafe fn gradients<T: Lane>(view: CellView, s: &Slots, c0: usize) {
    let k = c0 / 4;
    let q: [T; 5] = view.prim(|i| c0 + i);
    let mut grad = [[T::splat(0.0); 3]; 5];
    for row in s.rows[k]..s.rows[k + 1] {
        let at = 4 * row;
        let qj: [T; 5] = view.state(|i| s.index[at + i] as usize).0;
        let w: [T; 3] = std::array::from_fn(|a| T::load(s.coef[a][at..at + 4].as_ptr()));
        for v in 0..5 {
            let dq = qj[v] - q[v];
            for a in 0..3 {
                grad[v][a] = grad[v][a] + w[a] * dq;
            }
        }
    }
    view.set_grad(c0, &grad);
}

/// The gradients of cell `c` as [`crate::gradients::gradients`] computes them.
unsafe fn scalar_gradient(view: CellView, g: &Geometry, weights: &[Vec3], c: usize) {
    let q = view.prim1(c);
    let mut grad = [[0.0; 3]; 5];
    for (k, &f) in g.faces_of(c).iter().enumerate() {
        let qj = view.prim1(g.across(f as usize, c).0);
        let w = weights[g.cell_offsets[c] + k];
        for v in 0..5 {
            let dq = qj[v] - q[v];
            for a in 0..3 {
                grad[v][a] += w[a] * dq;
            }
        }
    }
    view.set_grad(c, &grad);
}

/// The spectral radii times areas of faces `f0 + i` into `wave[i]`, `T::LANES` at a time;
/// returns how many whole groups it did.
#[inline(always)]
unsafe fn radii<T: Lane>(
    view: CellView,
    g: &Geometry,
    (gas, viscous): (Gas, Option<Viscous>),
    f0: usize,
    wave: &mut [f64],
) -> usize {
    let mut i = 0;
    while i + T::LANES <= wave.len() {
        let f = f0 + i;
        let ((ql, xl), (qr, xr)) = (
            view.state::<T>(|k| g.left[f + k] as usize),
            view.state::<T>(|k| g.right[f + k] as usize),
        );
        let n = std::array::from_fn(|a| T::from_fn(|k| g.normal[f + k][a]));
        let area = T::load(g.area[f..f + T::LANES].as_ptr());
        radius(gas, viscous, [&ql, &qr], [xl, xr], n, area).store(wave[i..].as_mut_ptr());
        i += T::LANES;
    }
    i
}

/// The time steps of cells `c0 + lane` (four) from their faces' radii, summed in each cell's
/// face order (the gathers' rows, whose padding adds +0).
#[inline(always)]
unsafe fn steps<T: Lane>(
    dt: Steps,
    g: &Geometry,
    wave: &[f64],
    s: &Slots,
    (cfl, c0): (f64, usize),
) {
    let k = c0 / 4;
    let mut sum = T::splat(0.0);
    for row in s.rows[k]..s.rows[k + 1] {
        let at = 4 * row;
        // |sign|: 1 for a face of the cell, 0 for padding.
        let weight = T::load(s.coef[0][at..at + 4].as_ptr()).abs();
        let index = &s.index[at..at + 4];
        // SAFETY: the slots hold face numbers.
        sum = sum + weight * T::from_fn(|i| *wave.get_unchecked(index[i] as usize));
    }
    let volume = T::load(g.volume[c0..c0 + 4].as_ptr());
    (T::splat(cfl) * volume / sum).store(dt.0.add(c0));
}

/// The time step of cell `c` as [`Solver::time_steps`] computes it.
unsafe fn scalar_step(dt: Steps, g: &Geometry, wave: &[f64], (cfl, c): (f64, usize)) {
    let sum: f64 = g.faces_of(c).iter().map(|&f| wave[f as usize]).sum();
    *dt.0.add(c) = cfl * g.volume[c] / sum;
}

/// The residuals of cells `c0 + lane` (four) gathered from the stored fluxes.
#[inline(always)]
unsafe fn gather<T: Lane>(r: Rows, flux: &[Vec<f64>; 5], s: &Slots, c0: usize) {
    let k = c0 / 4;
    let mut sum = [T::splat(0.0); 5];
    for row in s.rows[k]..s.rows[k + 1] {
        let at = 4 * row;
        let sign = T::load(s.coef[0][at..at + 4].as_ptr());
        let index = &s.index[at..at + 4];
        for v in 0..5 {
            // SAFETY: the slots hold face numbers.
            let f = T::from_fn(|i| *flux[v].get_unchecked(index[i] as usize));
            sum[v] = sum[v] + sign * f;
        }
    }
    for v in 0..5 {
        sum[v].each(|i, x| (*r.0.add(c0 + i))[v] = x);
    }
}

/// The residual of cell `c` as [`Solver::gather`] sums it.
unsafe fn scalar_gather(r: Rows, g: &Geometry, flux: &[Vec<f64>; 5], c: usize) {
    let mut sum = [0.0; 5];
    for &f in g.faces_of(c) {
        let sign = g.across(f as usize, c).1;
        for v in 0..5 {
            sum[v] += sign * flux[v][f as usize];
        }
    }
    *r.0.add(c) = sum;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::tests::mixed_mesh;
    use crate::Boundary;
    use ferroflow_core::random::SplitMix64;
    use ferroflow_mesh::generate::{box_mesh, shuffle, BoxCells};
    use ferroflow_mesh::Mesh;

    const FREE: [f64; 5] = [1.0, 0.6, -0.3, 0.2, 1.0 / 1.4];

    /// A solver on `mesh` and a random state (limiters active): patches in turn far field,
    /// slip wall, adiabatic and isothermal no-slip walls, outflow, inflow.
    fn random_state(mesh: &Mesh, viscous: Option<Viscous>) -> (Solver, Vec<Cons>) {
        let kinds = [
            Boundary::FarField(FREE),
            Boundary::SlipWall,
            Boundary::AdiabaticWall {
                velocity: [0.1, 0.0, 0.0],
            },
            Boundary::IsothermalWall {
                velocity: [0.0; 3],
                temperature: 0.9,
            },
            Boundary::Outflow(0.7),
            Boundary::Inflow {
                p0: 1.0,
                t0: 1.0,
                direction: [1.0, 0.0, 0.0],
            },
        ];
        let bc: Vec<(&str, Boundary)> = (mesh.patches.iter().enumerate())
            .map(|(k, p)| (p.as_str(), kinds[k % kinds.len()]))
            .collect();
        let mut s = Solver::new(mesh, Gas::AIR, Limiter::VanAlbada, &bc).unwrap();
        s.viscous = viscous;
        let mut random = SplitMix64(9);
        let u = s.sample(|x| {
            let mut w = FREE.map(|f| f + 0.3 * random.signed());
            w[0] += 0.5 + x[0];
            w[4] += 0.5;
            w
        });
        (s, u)
    }

    /// Sutherland's law, so that the viscosity varies lane by lane.
    const SUTHERLAND: Viscous = Viscous {
        viscosity: crate::Viscosity::Sutherland {
            mu: 0.02,
            t: 0.7,
            s: 0.3,
        },
        prandtl: Viscous::AIR_PRANDTL,
    };

    fn run(s: &Solver, loops: &mut Loops, u: &[Cons], threads: usize) -> (Vec<Cons>, [f64; 5]) {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut r = vec![[f64::NAN; 5]; u.len()];
        let out = pool.install(|| loops.residual(s, u, 0.0, &mut r));
        (r, out)
    }

    fn every_option() -> Vec<Options> {
        let mut all = Vec::new();
        for simd in [false, true] {
            for layout in [Layout::Soa, Layout::Aos] {
                for conflicts in [Conflicts::Stored, Conflicts::Scatter, Conflicts::Colour] {
                    for (transpose, prefetch) in [(false, 0), (true, 0), (true, 16)] {
                        all.push(Options {
                            simd,
                            layout,
                            conflicts,
                            transpose,
                            prefetch,
                        });
                    }
                }
            }
        }
        all
    }

    fn meshes() -> Vec<Mesh> {
        let mut tets = box_mesh(BoxCells::Tet6, [9, 8, 7], [1.0, 0.9, 0.8]).unwrap();
        shuffle(&mut tets, 4);
        vec![mixed_mesh(), tets]
    }

    /// Stored fluxes and the serial scatter add in the solver's order: bitwise its residual,
    /// inviscid or viscous, with or without AVX2, in either layout, on 1 and 2 threads. Colouring adds in another
    /// order: within a few units of the last place, and the same on any thread count.
    #[test]
    fn every_variant_gives_the_solvers_residual() {
        assert!(
            crate::lanes::avx2(),
            "the vectorised loops are not tested here"
        );
        for (mesh, viscous) in meshes()
            .iter()
            .flat_map(|m| [(m, None), (m, Some(SUTHERLAND))])
        {
            let (mut solver, u) = random_state(mesh, viscous);
            let mut expected = vec![[0.0; 5]; u.len()];
            let outflow = solver.residual(&u, 0.0, &mut expected);
            let scale = expected
                .iter()
                .flatten()
                .fold(0.0f64, |m, x| m.max(x.abs()));
            for options in every_option() {
                let mut loops = Loops::new(&solver, options);
                let (one, out) = run(&solver, &mut loops, &u, 1);
                let (two, out2) = run(&solver, &mut loops, &u, 2);
                assert_eq!(out, outflow, "{options:?}");
                assert_eq!((&one, out), (&two, out2), "{options:?}: threads");
                if options.conflicts == Conflicts::Colour {
                    assert!(loops.colours() >= 4, "{}", loops.colours());
                    for (a, b) in one.iter().flatten().zip(expected.iter().flatten()) {
                        assert!((a - b).abs() <= 1e-14 * scale, "{options:?}: {a} {b}");
                    }
                    assert_ne!(one, expected, "{options:?}: the order should differ");
                } else {
                    let bits = |r: &[Cons]| -> Vec<u64> {
                        r.iter().flatten().map(|x| x.to_bits()).collect()
                    };
                    assert!(bits(&one) == bits(&expected), "{options:?}");
                }
            }
        }
    }

    /// The time steps from the loops' prepared states are bitwise the solver's own, inviscid
    /// and viscous, for every variant (colouring reorders the faces, not the steps' sums), on
    /// 1 and 2 threads.
    #[test]
    fn every_variant_gives_the_solvers_time_steps() {
        for (mesh, viscous) in meshes()
            .iter()
            .flat_map(|m| [(m, None), (m, Some(SUTHERLAND))])
        {
            let (mut solver, u) = random_state(mesh, viscous);
            let mut expected = vec![0.0; u.len()];
            solver.time_steps(&u, 0.5, 1.7, &mut expected);
            assert!(expected.iter().all(|dt| dt.is_finite() && *dt > 0.0));
            for options in every_option() {
                let mut loops = Loops::new(&solver, options);
                for threads in [1, 2] {
                    let pool = rayon::ThreadPoolBuilder::new()
                        .num_threads(threads)
                        .build()
                        .unwrap();
                    let mut dt = vec![f64::NAN; u.len()];
                    pool.install(|| {
                        loops.prepare(&solver, &u, 0.5);
                        loops.time_steps(&solver, 1.7, &mut dt);
                    });
                    let bits = |x: &[f64]| -> Vec<u64> { x.iter().map(|x| x.to_bits()).collect() };
                    assert!(
                        bits(&dt) == bits(&expected),
                        "{options:?}, {threads} thread(s)"
                    );
                }
            }
        }
    }

    /// Renumbering changes the faces' orientation and the order of every sum: the residual
    /// of the renumbered solver (its default loops), mapped back to the mesh's numbering,
    /// agrees with the randomly numbered one's to 1e-13 of the largest.
    #[test]
    fn renumbered_cells_give_the_same_residual() {
        let mut mesh = box_mesh(BoxCells::Tet6, [9, 8, 7], [1.0, 0.9, 0.8]).unwrap();
        shuffle(&mut mesh, 4);
        let (mut random, u) = random_state(&mesh, Some(SUTHERLAND));
        let mut r = vec![[0.0; 5]; u.len()];
        random.residual(&u, 0.0, &mut r);
        let bc: Vec<(&str, Boundary)> = (mesh.patches.iter().zip(&random.boundaries))
            .map(|(p, b)| (p.as_str(), *b))
            .collect();
        let mut ordered = Solver::renumbered(&mesh, Gas::AIR, Limiter::VanAlbada, &bc).unwrap();
        ordered.viscous = Some(SUTHERLAND);
        let cells = u.len();
        let centroids = ordered.from_user(&random.geometry.centroid[..cells]);
        assert!(centroids == ordered.geometry.centroid[..cells]);
        let moved = (0..cells)
            .filter(|&c| centroids[c] != random.geometry.centroid[c])
            .count();
        assert!(moved > cells / 2, "{moved}");
        let mut r2 = vec![[0.0; 5]; cells];
        ordered.evaluate(&ordered.from_user(&u), 0.0, &mut r2);
        let back = ordered.to_user(&r2);
        let scale = r.iter().flatten().fold(0.0f64, |m, x| m.max(x.abs()));
        for (c, (a, b)) in r.iter().zip(&back).enumerate() {
            for v in 0..5 {
                assert!(
                    (a[v] - b[v]).abs() <= 1e-13 * scale,
                    "cell {c}: {a:?} {b:?}"
                );
            }
        }
    }
}
