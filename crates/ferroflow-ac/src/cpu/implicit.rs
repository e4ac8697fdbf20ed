//! The implicit relaxation on the CPU (seed 003): each iteration writes the scheme's residual
//! R(Q) with the fused pass's formulas, freezes a first-order operator A at Q, relaxes
//! A ΔQ = R by sweeps and adds ΔQ. R and the state keep the run's precision `R`; the operator
//! and the relaxation work in `S` (f32 or f64).
//!
//! A is I / Δτ_imp plus, per axis d, the central convection and pressure couplings split by the
//! spectral radius λ_d (Yoon–Jameson: the neighbour blocks (B_d ∓ λ_d I) / 2h, the node's own
//! block Σ λ_d / h_d), plus the viscous and thermal Laplacians; B_d and λ_d are taken at the
//! node, so each row of A depends on its own node's state only. T is split by λ_d as well:
//! with its own wave speed |u_d| the coarse buoyant cavities (cell Péclet numbers of 3 and
//! more) did not converge. At a wall, velocity (and T of an isothermal wall) is fixed, so its increment is
//! zero; the extrapolated wall pressure moves with the node next to it, so a wall neighbour's
//! pressure increment is the node's own (folded into the node's block); so is T at an
//! adiabatic wall.
//!
//! The pressure row is split by its own radius λ_p ≤ λ with symmetric Gauss–Seidel and Jacobi
//! (`ImplicitCoefficients::pressure_radius`): its
//! neighbour terms −λ_p / 2h and its own Σ λ_p / h are a pressure Laplacian of weight λ_p h / 2
//! that R does not have. Where viscosity dominates, pressure is stiff only through the
//! velocity (the Stokes Schur complement, about β² / ν), so with λ_p = λ each iteration
//! corrected short pressure waves by a fraction of order β h / ν, and multigrid cycles grew
//! 1.7x per grid doubling at Re = 100. λ_p = σ β² / (h · 2ν Σ 1/h²) matches that stiffness;
//! λ_p ≥ θ λ keeps the sweeps stable. With Jacobi (the GPU's) the Re = 100 cycles fell from 95
//! to 28 on 513²; red–black and line relaxation keep λ (not measured with λ_p).
//!
//! The pressure level is free (walls extrapolate it), so A is singular in a uniform pressure
//! increment when Δτ_imp is infinite. The continuity residual is projected off that mode's
//! image, the explicit step's weights 1 / Δτ: R_p − c / Δτ with c = Σ R_p / Σ (1 / Δτ). A
//! state where that vanishes is the explicit scheme's fixed point, so both converge to the
//! same answer, and its norm is the continuity residual this method reports.
mod gauss_seidel;
mod row;

use super::around::Offsets;
use super::step::{interior_rows, node_residual, var_slices, CHUNK, V};
use crate::implicit::{GaugeSums, ImplicitCoefficients as Op, LaneSum};
use crate::{Coefficients, Problem, Relax, Relaxation, SideBc};
use ferroflow_core::decomposition::Face;
use ferroflow_core::{Fields, Layout, Real, Residuals, Side};
use rayon::prelude::*;

/// Frozen per-node quantities: λ_d and u_d per axis, then these.
const BETA2: usize = 6;
const INV_DIAG_P: usize = 7;
const INV_DIAG_U: usize = 8;
const INV_DIAG_T: usize = 9;
const FROZEN: usize = 10;

/// Per-row sums: one per equation, then these.
const SUM_RP: usize = V;
const SUM_W: usize = V + 1;
const SUMS: usize = V + 2;

/// Rows of tiles along the axes a Gauss–Seidel wavefront crosses: 2D tiles are this many
/// nodes in x by rows in y, 3D tiles rows in y by planes in z (whole x lines).
const TILE_X: usize = 64;
const TILE_ROWS: usize = 16;
const TILE_PLANES: usize = 8;

/// Which sides of the node at (i, j, k) are walls next to it: `lo[d]`, `hi[d]`.
#[derive(Clone, Copy)]
struct Walls {
    lo: [bool; 3],
    hi: [bool; 3],
}

impl Walls {
    const NONE: Walls = Walls {
        lo: [false; 3],
        hi: [false; 3],
    };
}

/// The inverse diagonals (p, u, T) of the frozen operator at a node where the radii are
/// `lam`, the velocity `u`, β² `beta2`, 1 / Δτ_imp `pseudo` and `walls` are next to it:
/// Σ λ_d / h_d, and Σ λ_p,d / h_d less the walls' halves (folded, see the module's notes).
#[inline(always)]
fn inverse_diagonals<S: Real, const D: usize>(
    op: &Op<S>,
    sides: &Sides,
    lam: [S; 3],
    u: [S; 3],
    beta2: S,
    pseudo: S,
    walls: Walls,
) -> [S; 3] {
    let (mut sum_lh, mut sum_lph, mut wall_lph) = (S::zero(), S::zero(), S::zero());
    let mut adiabatic = S::zero();
    for d in 0..D {
        sum_lh = sum_lh + lam[d] * op.inv_h[d];
        let lp = op.pressure_radius(lam[d], beta2, op.inv_h[d]);
        sum_lph = sum_lph + lp * op.inv_h[d];
        let b = u[d] * op.inv_2h[d];
        for (is_wall, side, sign) in [
            (walls.lo[d], 2 * d, -S::one()),
            (walls.hi[d], 2 * d + 1, S::one()),
        ] {
            if is_wall {
                wall_lph = wall_lph + lp * op.inv_2h[d];
                if sides.adiabatic[side] {
                    adiabatic = adiabatic + sign * b - b.abs() - op.alpha_h2[d];
                }
            }
        }
    }
    [
        S::one() / (pseudo + sum_lph - wall_lph),
        S::one() / (pseudo + sum_lh + op.visc_diag),
        S::one() / (pseudo + sum_lh + op.therm_diag + adiabatic),
    ]
}

/// The walls (not halos) of a block, and which hold T fixed.
#[derive(Clone, Copy)]
struct Sides {
    wall: [bool; 6],
    adiabatic: [bool; 6],
    n: [usize; 3],
}

impl Sides {
    fn at(&self, idx: [usize; 3], dim: usize) -> Walls {
        let mut w = Walls {
            lo: [false; 3],
            hi: [false; 3],
        };
        for d in 0..dim {
            w.lo[d] = idx[d] == 1 && self.wall[2 * d];
            w.hi[d] = idx[d] == self.n[d] - 2 && self.wall[2 * d + 1];
        }
        w
    }
}

/// The implicit relaxation's arrays for one block.
pub(crate) struct Relaxer<R, S> {
    imp: Relax,
    op: Op<S>,
    sides: Sides,
    /// Continuity residual and the explicit step's rate / cfl = 1 / Δτ, in the state's
    /// precision (the projection subtracts nearly equal values).
    resid_p: Vec<R>,
    inv_dt: Vec<R>,
    /// Right-hand side, frozen operator data and the increments (two buffers for the sweeps
    /// that read the previous one).
    rhs: Fields<S>,
    frozen: Fields<S>,
    delta: Fields<S>,
    previous: Fields<S>,
    /// Per row: residual sums of squares per equation, then Σ R_p and Σ 1 / Δτ.
    row_sums: Vec<[f64; SUMS]>,
    /// Gauss–Seidel tiles, grouped in wavefronts that may run in parallel.
    waves: Vec<Vec<Tile>>,
    /// The block's interfaces: their halo increments are the neighbours'.
    interfaces: Vec<Face>,
}

/// A box of interior nodes, index ranges per axis.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Tile {
    lo: [usize; 3],
    hi: [usize; 3],
}

/// The wavefronts of tiles over the interior of `l`: tile (a, b) of the two tiled axes needs
/// (a − 1, b) and (a, b − 1) done and never reads its diagonal neighbours, so the tiles of one
/// wavefront a + b are independent and every node sees exactly the values of a lexicographic
/// sweep: the result is bitwise that of one thread, for any tile size.
fn wavefronts(l: &Layout) -> Vec<Vec<Tile>> {
    let n = l.n;
    let (axes, sizes) = if l.dim == 2 {
        ([0, 1], [TILE_X, TILE_ROWS])
    } else {
        ([1, 2], [TILE_ROWS, TILE_PLANES])
    };
    let cuts = |d: usize, size: usize| -> Vec<(usize, usize)> {
        (1..n[d] - 1)
            .step_by(size)
            .map(|s| (s, (s + size).min(n[d] - 1)))
            .collect()
    };
    let (ca, cb) = (cuts(axes[0], sizes[0]), cuts(axes[1], sizes[1]));
    let mut waves = vec![Vec::new(); ca.len() + cb.len() - 1];
    for (a, ra) in ca.iter().enumerate() {
        for (b, rb) in cb.iter().enumerate() {
            let mut t = Tile {
                lo: [1, 1, 0],
                hi: [n[0] - 1, n[1] - 1, 1],
            };
            if l.dim == 3 {
                t.lo[2] = 1;
                t.hi[2] = n[2] - 1;
            }
            t.lo[axes[0]] = ra.0;
            t.hi[axes[0]] = ra.1;
            t.lo[axes[1]] = rb.0;
            t.hi[axes[1]] = rb.1;
            waves[a + b].push(t);
        }
    }
    waves
}

/// Raw views of `N` arrays that the tasks of one parallel pass share: each node is written by
/// one task, and every read of a node another task writes is ordered after or before that
/// write by the pass's schedule (see each pass).
#[derive(Clone, Copy)]
struct Ptrs<S, const N: usize>([*mut S; N]);
unsafe impl<S, const N: usize> Send for Ptrs<S, N> {}
unsafe impl<S, const N: usize> Sync for Ptrs<S, N> {}

impl<S: Copy, const N: usize> Ptrs<S, N> {
    fn of(arrays: &mut [Vec<S>]) -> Ptrs<S, N> {
        let mut p = [std::ptr::null_mut(); N];
        for (p, v) in p.iter_mut().zip(arrays.iter_mut()) {
            *p = v.as_mut_ptr();
        }
        Ptrs(p)
    }
    /// # Safety
    /// `o` is inside array `v`, and no other thread writes it now.
    #[inline(always)]
    unsafe fn get(&self, v: usize, o: usize) -> S {
        *self.0[v].add(o)
    }
    /// # Safety
    /// `o` is inside array `v`, and no other thread reads or writes it now.
    #[inline(always)]
    unsafe fn set(&self, v: usize, o: usize, x: S) {
        *self.0[v].add(o) = x;
    }
    /// Elements `o..o + len` of array `v`.
    ///
    /// # Safety
    /// They are inside array `v`, and no other thread reads or writes them while the slice
    /// lives.
    #[inline(always)]
    unsafe fn row<'a>(&self, v: usize, o: usize, len: usize) -> &'a mut [S] {
        std::slice::from_raw_parts_mut(self.0[v].add(o), len)
    }
}

/// Where a node's neighbours' increments are read: below and above along x, and across.
#[derive(Clone, Copy)]
struct Sources<S> {
    x_lo: Ptrs<S, V>,
    x_hi: Ptrs<S, V>,
    across: Ptrs<S, V>,
}

/// Everything a sweep reads besides the increments.
struct Ctx<'a, S> {
    op: Op<S>,
    sides: Sides,
    l: Layout,
    st: [usize; 3],
    rhs: [&'a [S]; V],
    frozen: [&'a [S]; FROZEN],
}

impl<R: Real, S: Real> Relaxer<R, S> {
    pub(crate) fn new(problem: &Problem<R>, imp: Relax) -> Relaxer<R, S> {
        let l = problem.layout;
        let eq = problem.equations();
        let mut sides = Sides {
            wall: [false; 6],
            adiabatic: [false; 6],
            n: l.n,
        };
        for (s, bc) in problem.sides.iter().enumerate() {
            sides.wall[s] = *bc != SideBc::Interface;
            sides.adiabatic[s] = *bc == SideBc::AdiabaticWall && problem.energy.is_some();
        }
        Relaxer {
            imp,
            op: Op::new(problem, &imp),
            sides,
            resid_p: vec![R::zero(); l.len],
            inv_dt: vec![R::zero(); l.len],
            rhs: Fields::zeros(l, eq),
            frozen: Fields::zeros(l, FROZEN),
            delta: Fields::zeros(l, eq),
            previous: Fields::zeros(l, eq),
            row_sums: vec![[0.0; SUMS]; interior_rows(&l)],
            waves: wavefronts(&l),
            interfaces: Side::ALL
                .into_iter()
                .filter(|s| problem.sides[*s as usize] == SideBc::Interface)
                .map(|side| Face {
                    side,
                    vars: eq,
                    reach: problem.halo_reach(),
                })
                .collect(),
        }
    }

    /// Sweeps per iteration.
    pub(crate) fn sweeps(&self) -> usize {
        self.imp.sweeps
    }

    /// One implicit iteration of a whole grid's `cur` in place (interior nodes; the caller
    /// fills the walls), pressure re-referenced at `p_ref`; returns the residuals of `cur` as
    /// it was. A decomposed grid runs the same phases with its blocks' sums added and its
    /// increments' halos exchanged in between (`crate::decomposed`).
    pub(crate) fn iterate(
        &mut self,
        c: &Coefficients<R>,
        cur: &mut Fields<R>,
        source: Option<&Fields<R>>,
        energy: bool,
        p_ref: usize,
    ) -> Residuals {
        let (mut total, gauge) = self.residual(c, cur, source, energy);
        total.sum_sq[0] = self.project(gauge.gauge());
        for sweep in 0..self.imp.sweeps {
            self.sweep(sweep, energy);
        }
        let shift = self.reference_after(cur, p_ref);
        self.update(cur, shift);
        total
    }

    /// R(Q) and the frozen operator at every interior node, the increments zeroed (halos
    /// included); returns the residual sums of every equation but continuity, which
    /// [`Self::project`] gives once the gauge is known, and the gauge's sums.
    pub(crate) fn residual(
        &mut self,
        c: &Coefficients<R>,
        cur: &Fields<R>,
        source: Option<&Fields<R>>,
        energy: bool,
    ) -> (Residuals, GaugeSums) {
        macro_rules! go {
            ($d:literal, $s:literal, $e:literal, $k:literal, $f:literal) => {
                self.residual_pass::<$d, $s, $e, $k, $f>(c, cur, source)
            };
        }
        let out = for_variant!(
            cur.layout.dim,
            source.is_some(),
            energy,
            c.skew(),
            c.fourth(),
            go
        );
        for face in &self.interfaces {
            for r in face.rows(&self.delta.layout, true) {
                self.delta.vars[r.var][r.offset..r.offset + r.len].fill(S::zero());
            }
        }
        out
    }

    /// One sweep of the relaxation (number `sweep` of the iteration's).
    pub(crate) fn sweep(&mut self, sweep: usize, energy: bool) {
        macro_rules! go {
            ($d:literal, $s:literal, $e:literal, $k:literal, $f:literal) => {
                self.relax::<$d, $e>(sweep)
            };
        }
        for_variant!(self.rhs.layout.dim, false, energy, false, false, go)
    }

    /// The pressure at offset `o` once the increment is added: what the update subtracts.
    pub(crate) fn reference_after(&self, cur: &Fields<R>, o: usize) -> R {
        cur.vars[0][o] + R::of(self.delta.vars[0][o].f64())
    }

    /// Adds the increments to `cur`'s interior, less `shift` in pressure.
    pub(crate) fn update(&self, cur: &mut Fields<R>, shift: R) {
        for (v, (q, dq)) in cur.vars.iter_mut().zip(&self.delta.vars).enumerate() {
            let s = if v == 0 { shift } else { R::zero() };
            // Boundary increments are zero; the wall fill that follows overwrites the walls,
            // the halo exchange the interfaces.
            q.par_iter_mut()
                .zip(dq.par_iter())
                .with_min_len(4096)
                .for_each(|(q, dq)| *q = *q + R::of(dq.f64()) - s);
        }
    }

    /// The increments, whose interface halos a decomposed grid exchanges between sweeps.
    pub(crate) fn increments(&mut self) -> &mut Fields<S> {
        &mut self.delta
    }

    /// R(Q) and the frozen operator at every interior node; the increments reset to zero.
    fn residual_pass<
        const D: usize,
        const SRC: bool,
        const E: bool,
        const K: bool,
        const F: bool,
    >(
        &mut self,
        c: &Coefficients<R>,
        cur: &Fields<R>,
        source: Option<&Fields<R>>,
    ) -> (Residuals, GaugeSums) {
        let l = cur.layout;
        let (q, src) = (var_slices(Some(cur)), var_slices(source));
        let (op, sides) = (self.op, self.sides);
        let rhs: Ptrs<S, V> = Ptrs::of(&mut self.rhs.vars);
        let frozen: Ptrs<S, FROZEN> = Ptrs::of(&mut self.frozen.vars);
        let delta: Ptrs<S, V> = Ptrs::of(&mut self.delta.vars);
        let resid: Ptrs<R, 2> = Ptrs([self.resid_p.as_mut_ptr(), self.inv_dt.as_mut_ptr()]);
        let equations = 1 + D + E as usize;
        for_rows(&l, &mut self.row_sums, |j, k, start, count, sums| {
            // Here, not captured: captured, it is a value the closure loads (it runs inside
            // rayon's calls), so `res[v][t]` below needed a bounds check, an early exit from
            // the node loop, which then ran scalar.
            let equations = 1 + D + E as usize;
            *sums = [0.0; SUMS];
            let (mut sum_rp, mut sum_w) = (LaneSum::default(), LaneSum::default());
            // Every output goes through the stack, chunk by chunk, as in the explicit pass
            // (`step::update_row`): written through the arrays' pointers, which may alias the
            // state read as far as the compiler knows, the pass took 1.2x as long.
            let mut res = [[R::zero(); CHUNK]; V];
            let mut weight = [R::zero(); CHUNK];
            let mut fz = [[S::zero(); CHUNK]; FROZEN];
            let row = sides.at([0, j, k], D);
            let across_walls = (1..D).any(|d| row.lo[d] || row.hi[d]);
            for first in (0..count).step_by(CHUNK) {
                let len = CHUNK.min(count - first);
                // The frozen operator's inverse diagonals, with the walls next to node t of
                // the chunk (from what the loop stored for it).
                let inverse = |fz: &mut [[S; CHUNK]; FROZEN], t: usize, w: R, walls: Walls| {
                    let lam: [S; 3] = std::array::from_fn(|d| fz[d][t]);
                    let u: [S; 3] = std::array::from_fn(|d| fz[3 + d][t]);
                    let pseudo = S::of(w.f64()) * op.inv_cfl_imp;
                    let inv =
                        inverse_diagonals::<S, D>(&op, &sides, lam, u, fz[BETA2][t], pseudo, walls);
                    [fz[INV_DIAG_P][t], fz[INV_DIAG_U][t], fz[INV_DIAG_T][t]] = inv;
                };
                // Every node as if no wall were next to it (a loop the compiler vectorises:
                // with the walls' terms in it, it found vectorising not worth it), then again
                // the nodes next to walls: the first and last of the row, or all of it.
                for t in 0..len {
                    let (st, o) = (l.stride, start + first + t);
                    let n = node_residual::<R, _, D, SRC, E, K, F>(c, &Offsets { q, src, st, o });
                    let w = n.rate * c.inv_cfl;
                    weight[t] = w;
                    for v in 0..equations {
                        res[v][t] = n.r[v];
                    }
                    for d in 0..D {
                        fz[d][t] = S::of(n.lam[d].f64());
                        fz[3 + d][t] = S::of(n.vel[d].f64());
                    }
                    fz[BETA2][t] = S::of(n.beta2.f64());
                    inverse(&mut fz, t, w, Walls::NONE);
                }
                for t in 0..len {
                    let x = first + t;
                    if across_walls || x == 0 || x + 1 == count {
                        inverse(&mut fz, t, weight[t], sides.at([x + 1, j, k], D));
                    }
                }
                for t in 0..len {
                    sum_rp.add(first + t, res[0][t].f64());
                    sum_w.add(first + t, weight[t].f64());
                }
                for (sum, r) in sums.iter_mut().zip(&res).take(equations).skip(1) {
                    for r in &r[..len] {
                        *sum += r.f64() * r.f64();
                    }
                }
                let at = start + first;
                // SAFETY (the rows below): each row, and so each node, is one task's.
                unsafe {
                    resid.row(0, at, len).copy_from_slice(&res[0][..len]);
                    resid.row(1, at, len).copy_from_slice(&weight[..len]);
                    for (v, r) in res.iter().enumerate().take(equations).skip(1) {
                        for (out, r) in rhs.row(v, at, len).iter_mut().zip(r) {
                            *out = S::of(r.f64());
                        }
                    }
                    for v in 0..equations {
                        delta.row(v, at, len).fill(S::zero());
                    }
                    for (v, fz) in fz.iter().enumerate() {
                        // The axes this grid lacks hold nothing.
                        if v < BETA2 && v % 3 >= D {
                            continue;
                        }
                        frozen.row(v, at, len).copy_from_slice(&fz[..len]);
                    }
                }
            }
            sums[SUM_RP] = sum_rp.total();
            sums[SUM_W] = sum_w.total();
        });
        let mut total = Residuals::zeros(equations, l.interior_nodes());
        let (mut sum_rp, mut sum_w) = (LaneSum::default(), LaneSum::default());
        for (r, s) in self.row_sums.iter().enumerate() {
            let mut eq = [0.0; V];
            eq[1..equations].copy_from_slice(&s[1..equations]);
            total.add_sums(&eq[..equations]);
            sum_rp.add(r, s[SUM_RP]);
            sum_w.add(r, s[SUM_W]);
        }
        // The sums go in lanes (`LaneSum`): a GPU adds them the same way, so the gauge,
        // which enters the state, has the same bits on both.
        let gauge = GaugeSums {
            resid: sum_rp.total(),
            weight: sum_w.total(),
        };
        (total, gauge)
    }

    /// The continuity residual projected off the uniform pressure mode with `gauge` (see
    /// [`GaugeSums`]) into the right-hand side; returns its sum of squares.
    pub(crate) fn project(&mut self, gauge: f64) -> f64 {
        let gauge = R::of(gauge);
        let (resid_p, inv_dt) = (&self.resid_p, &self.inv_dt);
        let rhs_p: Ptrs<S, 1> = Ptrs::of(&mut self.rhs.vars[..1]);
        for_rows(
            &self.rhs.layout,
            &mut self.row_sums,
            |_, _, start, count, sums| {
                sums[0] = 0.0;
                for o in start..start + count {
                    let rp = resid_p[o] - gauge * inv_dt[o];
                    sums[0] += rp.f64() * rp.f64();
                    // SAFETY: each row is one task's.
                    unsafe { rhs_p.set(0, o, S::of(rp.f64())) };
                }
            },
        );
        self.row_sums.iter().map(|s| s[0]).sum()
    }

    /// Sweep number `sweep` of the relaxation; the result ends in `self.delta`.
    fn relax<const D: usize, const E: bool>(&mut self, sweep: usize) {
        let l = self.rhs.layout;
        let sides = self.sides;
        let forward = sweep.is_multiple_of(2);
        let cur: Ptrs<S, V> = Ptrs::of(&mut self.delta.vars);
        let prev: Ptrs<S, V> = Ptrs::of(&mut self.previous.vars);
        let cx = Ctx {
            op: self.op,
            sides,
            l,
            st: l.stride,
            rhs: std::array::from_fn(|v| self.rhs.vars.get(v).map_or(&[][..], |a| a)),
            frozen: std::array::from_fn(|v| self.frozen.vars[v].as_slice()),
        };
        match self.imp.relaxation {
            Relaxation::Sgs => {
                // In place: a forward and a backward lexicographic sweep, each a sequence of
                // wavefronts whose tiles run in parallel.
                for forward in [true, false] {
                    let order: Box<dyn Iterator<Item = &Vec<Tile>>> = if forward {
                        Box::new(self.waves.iter())
                    } else {
                        Box::new(self.waves.iter().rev())
                    };
                    for wave in order {
                        wave.par_iter().for_each(|t| {
                            // SAFETY: see `wavefronts`.
                            unsafe { gauss_seidel::sweep_tile::<S, D, E>(&cx, t, forward, cur) }
                        });
                    }
                }
            }
            Relaxation::RedBlack => {
                let nb = Sources {
                    x_lo: cur,
                    x_hi: cur,
                    across: cur,
                };
                // Sweeps alternate the colour order, so a sweep after the first starts with
                // the colour the one before ended with: relaxing it again from the same
                // other-colour values gives the same bits, and is skipped (unless a halo
                // exchange changed some of those values in between).
                let colours = if forward { [0, 1] } else { [1, 0] };
                let skip_first = sweep > 0 && self.interfaces.is_empty();
                for &colour in &colours[skip_first as usize..] {
                    // SAFETY: a node of one colour reads only nodes of the other.
                    par_lines(&l, |j, k| unsafe {
                        let first = 1 + (colour + j + k + 1) % 2;
                        relax_line::<S, D, E>(&cx, j, k, (first..l.n[0] - 1).step_by(2), &nb, cur)
                    });
                }
            }
            Relaxation::Jacobi | Relaxation::Line => {
                std::mem::swap(&mut self.delta, &mut self.previous);
                let (new, old) = (prev, cur);
                let along = self.imp.relaxation == Relaxation::Line;
                // Line: the x neighbour behind the march is new, the one ahead and those
                // across are the previous sweep's.
                let nb = Sources {
                    x_lo: if along && forward { new } else { old },
                    x_hi: if along && !forward { new } else { old },
                    across: old,
                };
                // SAFETY: each line writes only its own nodes of `new` and reads only its
                // own nodes of it (Jacobi: none).
                par_lines(&l, |j, k| unsafe {
                    let xs = 1..l.n[0] - 1;
                    match (along, forward) {
                        (false, _) => relax_line_jacobi::<S, D, E>(&cx, j, k, &nb, new),
                        (true, true) => relax_line::<S, D, E>(&cx, j, k, xs, &nb, new),
                        (true, false) => relax_line::<S, D, E>(&cx, j, k, xs.rev(), &nb, new),
                    }
                });
            }
        }
    }
}

/// Runs `f(j, k, start, count, sums)` over the interior rows of `l` in parallel, one `sums`
/// entry per row (summed by the caller in row order: independent of the thread count).
fn for_rows<T: Send>(
    l: &Layout,
    row_sums: &mut [T],
    f: impl Fn(usize, usize, usize, usize, &mut T) + Sync,
) {
    let rows_j = l.n[1] - 2;
    let count = l.n[0] - 2;
    row_sums
        .par_iter_mut()
        .with_min_len((4096 / count).max(1))
        .enumerate()
        .for_each(|(r, sums)| {
            let j = 1 + r % rows_j;
            let k = if l.dim == 3 { 1 + r / rows_j } else { 0 };
            f(j, k, l.index(1, j as isize, k as isize), count, sums)
        });
}

/// Runs `f(j, k)` over the interior x lines of `l` in parallel.
fn par_lines(l: &Layout, f: impl Fn(usize, usize) + Sync) {
    let rows_j = l.n[1] - 2;
    let count = l.n[0] - 2;
    (0..interior_rows(l))
        .into_par_iter()
        .with_min_len((4096 / count).max(1))
        .for_each(|r| f(1 + r % rows_j, if l.dim == 3 { 1 + r / rows_j } else { 0 }));
}

/// Relaxes the nodes `xs` of line (j, k) in that order into `dst`.
///
/// # Safety
/// No other thread writes these nodes of `dst` or any node `nb` reads for them.
#[inline(always)]
unsafe fn relax_line<S: Real, const D: usize, const E: bool>(
    cx: &Ctx<S>,
    j: usize,
    k: usize,
    xs: impl Iterator<Item = usize>,
    nb: &Sources<S>,
    dst: Ptrs<S, V>,
) {
    for i in xs {
        let o = cx.l.index(i as isize, j as isize, k as isize);
        let w = cx.sides.at([i, j, k], D);
        let x = row::relax_node::<S, D, E>(cx, o, w, nb);
        for (v, x) in x.into_iter().enumerate().take(1 + D + E as usize) {
            dst.set(v, o, x);
        }
    }
}

/// Relaxes the interior nodes of line (j, k) into `dst` from neighbours that no node of the
/// line changes (Jacobi: the order does not matter). The increments go through the stack,
/// chunk by chunk, as in the explicit pass (`step::update_row`): written through `dst`'s
/// pointer, which may alias what the line reads as far as the compiler knows, the loop ran
/// scalar.
///
/// # Safety
/// No other thread writes these nodes of `dst` or any node `nb` reads for them, and `nb`
/// reads no node of the line in `dst`.
unsafe fn relax_line_jacobi<S: Real, const D: usize, const E: bool>(
    cx: &Ctx<S>,
    j: usize,
    k: usize,
    nb: &Sources<S>,
    dst: Ptrs<S, V>,
) {
    let (count, start) = (cx.l.n[0] - 2, cx.l.index(1, j as isize, k as isize));
    let equations = 1 + D + E as usize;
    let mut new = [[S::zero(); CHUNK]; V];
    for first in (0..count).step_by(CHUNK) {
        let len = CHUNK.min(count - first);
        for t in 0..len {
            let w = cx.sides.at([1 + first + t, j, k], D);
            let x = row::relax_node::<S, D, E>(cx, start + first + t, w, nb);
            for v in 0..equations {
                new[v][t] = x[v];
            }
        }
        for (v, new) in new.iter().enumerate().take(equations) {
            dst.row(v, start + first, len).copy_from_slice(&new[..len]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Numerics, Physics};

    /// A 2D or 3D box at rest with a moving lid and a twisted initial state, so that every
    /// neighbour term of the sweep matters.
    fn problem(dim: usize, n: usize) -> Problem<f64> {
        heated(dim, n, false, None)
    }

    /// [`problem`], with `energy` the energy equation too (T varying, walls at y adiabatic),
    /// and the implicit CFL number `cfl` (unset: infinite).
    fn heated(dim: usize, n: usize, energy: bool, cfl: Option<f64>) -> Problem<f64> {
        let layout = Layout::new(dim, [n, n, if dim == 3 { n } else { 1 }]);
        let mut initial = Fields::zeros(layout, 1 + dim + energy as usize);
        layout.for_each_node(|i, j, k, o| {
            for (v, a) in initial.vars.iter_mut().enumerate() {
                a[o] = ((i * 7 + j * 3 + k * 5 + v) % 11) as f64 * 0.01;
            }
        });
        let imp = crate::Implicit {
            relaxation: Some(Relaxation::Sgs),
            sweeps: Some(3),
            cfl,
            ..crate::Implicit::default()
        };
        let numerics = Numerics {
            method: crate::Method::Implicit(imp),
            ..Numerics::default()
        };
        let physics = Physics {
            viscosity: 0.01,
            density: 1.0,
        };
        let p = Problem::new(layout, [1.0; 3], physics, numerics, initial).unwrap();
        if !energy {
            return p;
        }
        let mut p = p
            .with_energy(crate::Energy {
                diffusivity: 0.02,
                buoyancy: [0.0, 0.5, 0.0],
                t_ref: 0.05,
            })
            .unwrap();
        p.sides[Side::YLo as usize] = SideBc::AdiabaticWall;
        p.sides[Side::YHi as usize] = SideBc::AdiabaticWall;
        p
    }

    /// The grids of the tests below: 2D and 3D, with and without T; 150 nodes in x give 2D
    /// tiles of 64, 64 and 20 nodes (chunks of the sweep cut short), 23 and 19 in 3D.
    fn cases() -> Vec<Problem<f64>> {
        vec![
            heated(2, 150, false, None),
            heated(3, 23, false, None),
            heated(2, 70, true, Some(3.0)),
            heated(3, 19, true, Some(3.0)),
        ]
    }

    /// The relaxer of `p` after its residual pass and projection.
    fn relaxer(p: &Problem<f64>) -> Relaxer<f64, f64> {
        let imp = match p.numerics.method {
            crate::Method::Implicit(imp) => imp.on(false),
            _ => unreachable!(),
        };
        let c = Coefficients::new(p);
        let mut r = Relaxer::<f64, f64>::new(p, imp);
        let energy = p.energy.is_some();
        let (_, gauge) = r.residual(&c, &p.initial, None, energy);
        r.project(gauge.gauge());
        r
    }

    #[test]
    fn the_sweep_prepared_ahead_of_the_x_chain_is_the_node_by_node_sweep_bit_for_bit() {
        for p in cases() {
            let (dim, energy) = (p.layout.dim, p.energy.is_some());
            let mut swept = relaxer(&p);
            let pool = ferroflow_cpu::pool(2).unwrap();
            // Two symmetric sweeps: the second starts from non-zero increments.
            pool.install(|| (0..2).for_each(|s| swept.sweep(s, energy)));
            // The same sweeps node by node, each node's row whole (`row::relax_node`), lines
            // in lexicographic order, forward then backward.
            let mut plain = relaxer(&p);
            let l = plain.rhs.layout;
            let cur: Ptrs<f64, V> = Ptrs::of(&mut plain.delta.vars);
            let cx = Ctx {
                op: plain.op,
                sides: plain.sides,
                l,
                st: l.stride,
                rhs: std::array::from_fn(|v| plain.rhs.vars.get(v).map_or(&[][..], |a| a)),
                frozen: std::array::from_fn(|v| plain.frozen.vars[v].as_slice()),
            };
            let nb = Sources {
                x_lo: cur,
                x_hi: cur,
                across: cur,
            };
            let ks = if dim == 3 { 1..l.n[2] - 1 } else { 0..1 };
            let lines: Vec<(usize, usize)> = ks
                .flat_map(|k| (1..l.n[1] - 1).map(move |j| (j, k)))
                .collect();
            let xs = 1..l.n[0] - 1;
            for _ in 0..2 {
                // SAFETY: one thread, every node in order.
                unsafe {
                    for &(j, k) in &lines {
                        match (dim, energy) {
                            (2, false) => {
                                relax_line::<f64, 2, false>(&cx, j, k, xs.clone(), &nb, cur)
                            }
                            (2, true) => {
                                relax_line::<f64, 2, true>(&cx, j, k, xs.clone(), &nb, cur)
                            }
                            (_, false) => {
                                relax_line::<f64, 3, false>(&cx, j, k, xs.clone(), &nb, cur)
                            }
                            (_, true) => {
                                relax_line::<f64, 3, true>(&cx, j, k, xs.clone(), &nb, cur)
                            }
                        }
                    }
                    for &(j, k) in lines.iter().rev() {
                        match (dim, energy) {
                            (2, false) => {
                                relax_line::<f64, 2, false>(&cx, j, k, xs.clone().rev(), &nb, cur)
                            }
                            (2, true) => {
                                relax_line::<f64, 2, true>(&cx, j, k, xs.clone().rev(), &nb, cur)
                            }
                            (_, false) => {
                                relax_line::<f64, 3, false>(&cx, j, k, xs.clone().rev(), &nb, cur)
                            }
                            (_, true) => {
                                relax_line::<f64, 3, true>(&cx, j, k, xs.clone().rev(), &nb, cur)
                            }
                        }
                    }
                }
            }
            assert!(
                swept.delta.vars == plain.delta.vars,
                "{dim}D, energy {energy}"
            );
            assert!(swept.delta.vars.iter().all(|v| v.iter().any(|x| *x != 0.0)));
        }
    }

    #[test]
    fn the_residual_pass_folds_the_walls_into_exactly_the_nodes_next_to_them() {
        for p in cases() {
            let r = relaxer(&p);
            let l = r.rhs.layout;
            let fz = &r.frozen.vars;
            let mut walled = 0;
            l.for_each_node(|i, j, k, o| {
                let idx = [i, j, k];
                if (0..l.dim).any(|d| idx[d] == 0 || idx[d] == l.n[d] - 1) {
                    return;
                }
                let walls = r.sides.at(idx, l.dim);
                walled += (0..l.dim).any(|d| walls.lo[d] || walls.hi[d]) as usize;
                let lam = std::array::from_fn(|d| fz[d][o]);
                let u = std::array::from_fn(|d| fz[3 + d][o]);
                let pseudo = r.inv_dt[o] * r.op.inv_cfl_imp;
                let (beta2, op, sides) = (fz[BETA2][o], &r.op, &r.sides);
                let want = match l.dim {
                    2 => inverse_diagonals::<f64, 2>(op, sides, lam, u, beta2, pseudo, walls),
                    _ => inverse_diagonals::<f64, 3>(op, sides, lam, u, beta2, pseudo, walls),
                };
                let got = [fz[INV_DIAG_P][o], fz[INV_DIAG_U][o], fz[INV_DIAG_T][o]];
                assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{idx:?}");
            });
            assert!(walled > 0);
        }
    }

    #[test]
    fn wavefront_tiles_are_the_lexicographic_sweep_bit_for_bit() {
        for (dim, n) in [(2, 150), (3, 23)] {
            let p = problem(dim, n);
            let imp = match p.numerics.method {
                crate::Method::Implicit(imp) => imp.on(false),
                _ => unreachable!(),
            };
            let c = Coefficients::new(&p);
            let mut tiled = Relaxer::<f64, f64>::new(&p, imp);
            let (mut a, mut b) = (p.initial.clone(), p.initial.clone());
            let pool = ferroflow_cpu::pool(3).unwrap();
            pool.install(|| tiled.iterate(&c, &mut a, None, false, 0));
            // The same iteration with every line relaxed in order on this thread.
            let mut plain = Relaxer::<f64, f64>::new(&p, imp);
            plain.waves = vec![vec![Tile {
                lo: [1, 1, (dim == 3) as usize],
                hi: [n - 1, n - 1, if dim == 3 { n - 1 } else { 1 }],
            }]];
            let lines_in_order = |r: &mut Relaxer<f64, f64>| {
                let t = r.waves[0][0];
                r.waves = (t.lo[2]..t.hi[2])
                    .flat_map(|k| (t.lo[1]..t.hi[1]).map(move |j| (j, k)))
                    .map(|(j, k)| {
                        vec![Tile {
                            lo: [1, j, k],
                            hi: [n - 1, j + 1, k + 1],
                        }]
                    })
                    .collect();
            };
            lines_in_order(&mut plain);
            plain.iterate(&c, &mut b, None, false, 0);
            assert!(a == b, "{dim}D");
            assert!(tiled.waves.len() > 1 && tiled.waves.iter().any(|w| w.len() > 1));
        }
    }
}
