//! Multigrid over the node-centred grids: the full-approximation scheme (FAS), one block, each
//! level a backend iterating by its own method (the implicit relaxation is the
//! smoother that works: the explicit step's smoothing is too weak below two levels). The
//! hierarchy takes every other node of the level above; boundary nodes carry the walls' data
//! on every level, so the transfers act on interior nodes and leave boundary nodes to
//! injection.
//!
//! - [`levels`]: node counts per axis of each level, finest first.
//! - [`inject`]: a fine grid's values at the coarse grid's nodes (the FAS start of a coarse
//!   level's state).
//! - [`restrict`]: full weighting, the tensor product of (1/4, 1/2, 1/4) along each axis, for
//!   residuals: it keeps linear functions exactly and is the transpose of [`prolong_add`]
//!   divided by 2^dim.
//! - [`prolong_add`]: (bi/tri)linear interpolation of a coarse correction, added to the fine
//!   grid's interior.
//! - [`Level`]: what a level's backend does besides iterating: hand the state and residual
//!   down, take the correction up. A coarse level's forcing is its source term: the
//!   restricted fine residual (`CpuBackend::residual_field`, with the continuity residual
//!   projected off the uniform pressure drift, as the iteration converges it) minus the
//!   coarse residual of the injected state. The CPU's levels move fields on the host; the
//!   CUDA backend's (`crate::cuda`) stay on the device.
//! - [`Fas`]: the V- and W-cycles and the full-multigrid start over any [`Level`].
//! - `blocks`: levels cut into blocks, in one process or over MPI processes.
use crate::cpu::CpuBackend;
use crate::{InitialRule, Multigrid, Problem};

mod blocks;
pub use blocks::level_cuts;
use ferroflow_core::{
    Backend, BackendError, Fields, Layout, Points, ProblemError, Real, Residuals, Snapshot,
};
use std::sync::Arc;

/// Node counts per axis of each level of a grid of `n` nodes per axis (`dim` active axes),
/// finest first. A level is added while every active axis has an odd count (an even number of
/// intervals, so that every other node is a node of the coarser grid), the coarser grid keeps
/// at least `min` nodes on each active axis, and there are fewer than `max` levels. A grid that
/// does not coarsen well keeps fewer levels (one: no multigrid).
pub fn levels(dim: usize, n: [usize; 3], min: usize, max: usize) -> Vec<[usize; 3]> {
    let mut all = vec![n];
    loop {
        let fine = all[all.len() - 1];
        let halves = (0..dim).all(|a| (fine[a] - 1) % 2 == 0 && (fine[a] - 1) / 2 + 1 >= min);
        if !halves || all.len() >= max {
            return all;
        }
        let mut coarse = fine;
        for c in coarse.iter_mut().take(dim) {
            *c = (*c - 1) / 2 + 1;
        }
        all.push(coarse);
    }
}

/// Checks that `coarse` is the grid of every other node of `fine`: node i of `coarse` is node
/// 2i of `fine`. A block of a decomposed level may end one fine node short of its coarse
/// twin's last node (where it ends at a cut: that node is the neighbour's).
fn check_pair(fine: &Layout, coarse: &Layout) {
    assert_eq!(fine.dim, coarse.dim, "levels of one grid");
    for a in 0..fine.dim {
        let twins = 2 * (coarse.n[a] - 1);
        assert!(
            fine.n[a] == twins + 1 || fine.n[a] == twins,
            "every other node on axis {a}"
        );
    }
}

/// The fine grid's values at the coarse grid's nodes, every node (boundary nodes included):
/// the coarse grid takes every s-th node of the fine one, s a whole number per axis (2 between
/// neighbouring levels, a power of 2 across several).
pub fn inject<R: Real>(fine: &Fields<R>, coarse: &mut Fields<R>) {
    let (fl, cl) = (fine.layout, coarse.layout);
    assert_eq!(fl.dim, cl.dim, "levels of one grid");
    let step: [usize; 3] = std::array::from_fn(|a| (fl.n[a] - 1) / (cl.n[a] - 1).max(1));
    for a in 0..fl.dim {
        assert_eq!(
            fl.n[a] - 1,
            step[a] * (cl.n[a] - 1),
            "every s-th node on axis {a}"
        );
    }
    inject_twins(fine, coarse, step);
}

/// Node i of `coarse` from node `step` · i of `fine`, where `fine` has it (a block's last
/// coarse node at a cut has no twin in the block: its halo brings it).
fn inject_twins<R: Real>(fine: &Fields<R>, coarse: &mut Fields<R>, step: [usize; 3]) {
    let (fl, cl) = (fine.layout, coarse.layout);
    for (c, f) in coarse.vars.iter_mut().zip(&fine.vars) {
        cl.for_each_node(|i, j, k, o| {
            let twin = [i * step[0], j * step[1], k * step[2]];
            if (0..3).all(|a| twin[a] < fl.n[a]) {
                let [fi, fj, fk] = twin.map(|x| x as isize);
                c[o] = f[fl.index(fi, fj, fk)];
            }
        });
    }
}

/// A fine level's values at the twins of the next coarser level's nodes: [`inject`] between
/// neighbouring levels, for blocks of decomposed levels too ([`check_pair`]).
pub fn inject_pair<R: Real>(fine: &Fields<R>, coarse: &mut Fields<R>) {
    check_pair(&fine.layout, &coarse.layout);
    inject_twins(fine, coarse, step(&coarse.layout));
}

/// `a` − `b`, node by node, into `a` (same layout).
fn subtract<R: Real>(a: &mut Fields<R>, b: &Fields<R>) {
    for (a, b) in a.vars.iter_mut().zip(&b.vars) {
        a.iter_mut().zip(b).for_each(|(a, b)| *a = *a - *b);
    }
}

/// 2 along active axes, 1 along the others.
fn step(l: &Layout) -> [usize; 3] {
    std::array::from_fn(|a| if a < l.dim { 2 } else { 1 })
}

/// Full-weighting restriction of `fine` to the interior nodes of `coarse` (its boundary
/// nodes are left as they are): at each coarse node, the weighted sum of the fine nodes
/// around its fine twin, weights (1/4, 1/2, 1/4) along each active axis.
pub fn restrict<R: Real>(fine: &Fields<R>, coarse: &mut Fields<R>) {
    let (fl, cl) = (fine.layout, coarse.layout);
    check_pair(&fl, &cl);
    let step = step(&cl);
    let weight = |d: isize| if d == 0 { 0.5 } else { 0.25 };
    // Offsets along inactive axes are 0 only.
    let span = |a: usize| if a < cl.dim { -1..=1 } else { 0..=0 };
    for (c, f) in coarse.vars.iter_mut().zip(&fine.vars) {
        cl.for_each_node(|i, j, k, o| {
            let at = [i, j, k];
            if (0..cl.dim).any(|a| at[a] == 0 || at[a] == cl.n[a] - 1) {
                return;
            }
            let centre = [0, 1, 2].map(|a| (at[a] * step[a]) as isize);
            let mut sum = 0.0;
            for dk in span(2) {
                for dj in span(1) {
                    for di in span(0) {
                        let w = [di, dj, dk]
                            .iter()
                            .take(cl.dim)
                            .map(|d| weight(*d))
                            .product::<f64>();
                        let node = fl.index(centre[0] + di, centre[1] + dj, centre[2] + dk);
                        sum += w * f[node].f64();
                    }
                }
            }
            c[o] = R::of(sum);
        });
    }
}

/// Adds the (bi/tri)linear interpolation of `coarse` to the interior nodes of `fine` (its
/// boundary nodes are left as they are): a fine node midway between coarse nodes along some
/// axes takes the mean of the coarse nodes around it.
pub fn prolong_add<R: Real>(coarse: &Fields<R>, fine: &mut Fields<R>) {
    interpolate_into(coarse, fine, true);
}

/// Sets the interior nodes of `fine` to the (bi/tri)linear interpolation of `coarse` (a
/// full-multigrid start); boundary nodes are left as they are.
pub fn prolong<R: Real>(coarse: &Fields<R>, fine: &mut Fields<R>) {
    interpolate_into(coarse, fine, false);
}

fn interpolate_into<R: Real>(coarse: &Fields<R>, fine: &mut Fields<R>, add: bool) {
    let (fl, cl) = (fine.layout, coarse.layout);
    check_pair(&fl, &cl);
    for (f, c) in fine.vars.iter_mut().zip(&coarse.vars) {
        fl.for_each_node(|i, j, k, o| {
            let at = [i, j, k];
            if (0..fl.dim).any(|a| at[a] == 0 || at[a] == fl.n[a] - 1) {
                return;
            }
            // Along each active axis: the coarse node below, and whether the fine node lies
            // midway to the next one.
            let below: [usize; 3] = std::array::from_fn(|a| if a < fl.dim { at[a] / 2 } else { 0 });
            let midway: [bool; 3] = std::array::from_fn(|a| a < fl.dim && at[a] % 2 == 1);
            let mut sum = 0.0;
            let mut count = 0;
            for corner in 0..8usize {
                let up = [corner & 1 == 1, corner & 2 == 2, corner & 4 == 4];
                if (0..3).any(|a| up[a] && !midway[a]) {
                    continue;
                }
                let node = [0, 1, 2].map(|a| (below[a] + up[a] as usize) as isize);
                sum += c[cl.index(node[0], node[1], node[2])].f64();
                count += 1;
            }
            let base = if add { f[o].f64() } else { 0.0 };
            f[o] = R::of(base + sum / count as f64);
        });
    }
}

/// The problem of a coarser level of `fine`'s grid, `n` nodes per axis: the same fluid,
/// numerics and walls, its initial state and source term (a manufactured solution's)
/// injected from `fine`'s, and its initial rule, if any, `fine`'s at the twin nodes. Without
/// `values` a problem with a rule leaves the whole grid's initial state unwritten (the blocks
/// of a decomposed level take theirs from the rule).
pub fn coarse_problem<R: Real>(
    fine: &Problem<R>,
    n: [usize; 3],
    values: bool,
) -> Result<Problem<R>, ProblemError> {
    let dim = fine.layout.dim;
    let layout = Layout::new(dim, n);
    let mut lengths = [1.0; 3];
    for a in 0..dim {
        lengths[a] = fine.spacing[a] * (fine.layout.n[a] - 1) as f64;
    }
    let mut initial = Fields::zeros(layout, fine.equations());
    if values || fine.rule.is_none() {
        inject(&fine.initial, &mut initial);
    }
    let mut p = Problem::new(layout, lengths, fine.physics, fine.numerics, initial)?;
    p.energy = fine.energy;
    p.sides = fine.sides;
    p.rule = fine.rule.as_ref().map(|rule| {
        let step: [usize; 3] = std::array::from_fn(|a| (fine.layout.n[a] - 1) / (n[a] - 1).max(1));
        let rule = Arc::clone(&rule.0);
        InitialRule(Arc::new(move |node: [usize; 3], out: &mut [f64]| {
            rule(std::array::from_fn(|a| node[a] * step[a]), out)
        }))
    });
    if let Some(source) = &fine.source {
        let mut coarse = Fields::zeros(layout, source.vars.len());
        inject(source, &mut coarse);
        p = p.with_source(coarse)?;
    }
    Ok(p)
}

/// The fewest nodes per axis of a coarse level. The fourth-difference dissipation needs 5 (it
/// reaches two nodes each way), but W-cycles down to 5 diverged on the buoyancy-driven
/// cavities (bdc2d 129², bdc3d 65³; 448 cycles on bdc3d 33³), which converge in 51, 22 and 37
/// down to 9; the lid-driven cavities' cycles hardly change (1025², Re = 1000: 28 either way).
pub const MIN_COARSE_NODES: usize = 9;

/// What a level of the cycle does besides iterating, on its backend's own memory (the host's,
/// or a GPU's, where the whole hierarchy stays): the transfers between it and the next
/// coarser level, and its forcing.
pub trait Level: Backend + Sized {
    /// The coarser level's state at the start of its correction, kept until
    /// [`Level::correct`] (on a GPU it stays on the device).
    type Start;

    /// Replaces the source term: `source`, or none (zero).
    fn set_source(&mut self, source: Option<&Fields<Self::Real>>) -> Result<(), BackendError>;

    /// Sets `coarse` up to correct this level's state: its state the injection of this one's
    /// (walls filled), its source term the full-weighted residual of this level
    /// ([`CpuBackend::residual_field`]) minus its own residual at that state, so that a
    /// converged fine state is a fixed point of the cycle. Returns the coarse state.
    fn hand_down(&mut self, coarse: &mut Self) -> Result<Self::Start, BackendError>;

    /// Adds the (bi/tri)linear interpolation of `coarse`'s change since `start` to this
    /// level's interior, less the change of its pressure at offset `reference` (a uniform
    /// pressure shift is not a correction), and fills the walls.
    fn correct(
        &mut self,
        coarse: &mut Self,
        start: Self::Start,
        reference: usize,
    ) -> Result<(), BackendError>;

    /// Replaces this level's interior by the interpolation of `coarse`'s state, its pressure
    /// shifted so that the node at offset `reference` keeps its value (the full-multigrid
    /// start; once per run, so through the host).
    fn interpolate_from(
        &mut self,
        coarse: &mut Self,
        reference: usize,
    ) -> Result<(), BackendError> {
        let coarse = coarse.download()?;
        let mut state = self.download()?;
        let before = state.vars[0][reference];
        prolong(&coarse, &mut state);
        let shift = state.vars[0][reference] - before;
        state.vars[0].iter_mut().for_each(|p| *p = *p - shift);
        self.upload(&state)
    }

    /// Runs `work` (cycles) on `fas` where its levels' kernels, called many times in a row,
    /// dispatch fastest. By default, here.
    fn batch<T: Send>(fas: &mut Fas<Self>, work: impl FnOnce(&mut Fas<Self>) -> T + Send) -> T {
        work(fas)
    }
}

impl<R: Real> Level for CpuBackend<R> {
    type Start = Fields<R>;

    /// On the levels' threads, so that each level's parallel passes start there instead of
    /// handing over from another thread (which cost a W-cycle 2.3x its arithmetic on a 257²
    /// grid).
    fn batch<T: Send>(fas: &mut Fas<Self>, work: impl FnOnce(&mut Fas<Self>) -> T + Send) -> T {
        let pool = Arc::clone(fas.finest().pool());
        pool.install(|| work(fas))
    }

    fn set_source(&mut self, source: Option<&Fields<R>>) -> Result<(), BackendError> {
        CpuBackend::set_source(self, source.cloned())
    }

    fn hand_down(&mut self, coarse: &mut Self) -> Result<Fields<R>, BackendError> {
        let residual = self.residual_field();
        let state = self.download()?;
        let mut start = Fields::zeros(coarse.layout(), state.vars.len());
        inject(&state, &mut start);
        CpuBackend::set_source(coarse, None)?;
        coarse.upload(&start)?;
        let start = coarse.download()?;
        let mut forcing = Fields::zeros(start.layout, start.vars.len());
        restrict(&residual, &mut forcing);
        subtract(&mut forcing, &coarse.residual_field());
        CpuBackend::set_source(coarse, Some(forcing))?;
        Ok(start)
    }

    fn correct(
        &mut self,
        coarse: &mut Self,
        start: Fields<R>,
        reference: usize,
    ) -> Result<(), BackendError> {
        let mut change = coarse.download()?;
        subtract(&mut change, &start);
        let level = change.vars[0][reference];
        change.vars[0].iter_mut().for_each(|p| *p = *p - level);
        let mut state = self.download()?;
        prolong_add(&change, &mut state);
        self.upload(&state)
    }
}

/// A full-approximation-scheme cycle over the levels of one grid, each a backend of its own
/// ([`Level`]): on each level `pre` iterations of the level's own method (explicit step or
/// implicit relaxation), the coarser level set up by [`Level::hand_down`] and cycled once (V)
/// or twice (W), its change interpolated back ([`Level::correct`]), then `post` iterations;
/// `coarsest` iterations on the coarsest level ([`crate::Multigrid`]). As a [`Backend`], one
/// iteration is one cycle, and its residuals are those of the finest level's state at the
/// cycle's start (of its first iteration; of its last where `pre` is 0), as one grid's
/// iteration reports the state it starts from.
pub struct Fas<L: Level> {
    levels: Vec<L>,
    /// Each level's own source term (its problem's), which its forcing replaces in a cycle.
    sources: Vec<Option<Fields<L::Real>>>,
    /// Pressure reference node's offset on each level.
    references: Vec<usize>,
    cycle: Multigrid,
    /// Whether the full-multigrid start is still to come (the first cycle of a run that did
    /// not start from a given state).
    start: bool,
}

impl<R: Real> Fas<CpuBackend<R>> {
    /// The levels of `problem`'s grid on the CPU, on `pool` ([`Fas::over`]).
    pub fn new(
        problem: &Problem<R>,
        pool: Arc<rayon::ThreadPool>,
    ) -> Result<Fas<CpuBackend<R>>, BackendError> {
        Fas::over(problem, true, move |p, _| {
            CpuBackend::on(p, Arc::clone(&pool))
        })
    }
}

impl<L: Level> Fas<L> {
    /// The levels of `problem`'s grid ([`levels`] down to [`MIN_COARSE_NODES`], at most
    /// `problem.numerics.multigrid.levels`), each made by `make` from its problem (and
    /// whether it is a coarse level); `values`: whether coarse problems hold their whole
    /// grid's initial state ([`coarse_problem`]).
    pub fn over(
        problem: &Problem<L::Real>,
        values: bool,
        mut make: impl FnMut(&Problem<L::Real>, bool) -> Result<L, BackendError>,
    ) -> Result<Fas<L>, BackendError> {
        let cycle = problem.numerics.multigrid;
        let (dim, n) = (problem.layout.dim, problem.layout.n);
        let (mut backends, mut sources, mut references) = (Vec::new(), Vec::new(), Vec::new());
        for n in levels(dim, n, MIN_COARSE_NODES, cycle.levels) {
            let coarse = n != problem.layout.n;
            let p = match coarse {
                false => problem.clone(),
                true => {
                    coarse_problem(problem, n, values).map_err(|e| BackendError::NotSuitable {
                        backend: "multigrid",
                        what: format!("a coarse level: {e}"),
                    })?
                }
            };
            references.push(p.pressure_ref_offset());
            backends.push(make(&p, coarse)?);
            sources.push(p.source);
        }
        Ok(Fas {
            levels: backends,
            sources,
            references,
            cycle,
            start: cycle.fmg,
        })
    }

    /// Nodes per axis of each level, finest first.
    pub fn grids(&self) -> Vec<[usize; 3]> {
        self.levels.iter().map(|b| b.layout().n).collect()
    }

    /// Number of levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// The finest level.
    pub fn finest(&mut self) -> &mut L {
        &mut self.levels[0]
    }

    /// Work of a cycle from level `from` in iterations of the finest level (a coarser level's
    /// iteration costs its share of the nodes; a W-cycle visits level l 2^(l − from) times).
    fn work_from(&self, from: usize) -> f64 {
        let Multigrid {
            pre,
            post,
            coarsest,
            shape,
            ..
        } = self.cycle;
        let last = self.levels.len() - 1;
        let fine = self.levels[0].layout().interior_nodes() as f64;
        let mut visits = 1.0;
        let mut work = 0.0;
        for (l, b) in self.levels.iter().enumerate().skip(from) {
            let share = b.layout().interior_nodes() as f64 / fine;
            work += visits * share * if l == last { coarsest } else { pre + post } as f64;
            visits *= shape.visits() as f64;
        }
        work
    }

    /// Work of one cycle in iterations of the finest level.
    pub fn work(&self) -> f64 {
        self.work_from(0)
    }

    /// Work of the full-multigrid start in iterations of the finest level: one iteration
    /// for the initial residuals, the coarsest level's iterations, then one cycle from each
    /// level between.
    pub fn start_work(&self) -> f64 {
        let last = self.levels.len() - 1;
        1.0 + (1..=last).map(|l| self.work_from(l)).sum::<f64>()
    }

    /// One cycle from the finest level (after the full-multigrid start, if it is due); the
    /// residuals of the finest level's state at its start.
    pub fn cycle(&mut self) -> Result<Residuals, BackendError> {
        if std::mem::take(&mut self.start) {
            let initial = self.full_start()?;
            self.cycle_from(0)?;
            return Ok(initial);
        }
        self.cycle_from(0)
    }

    /// The full-multigrid start: each level from the coarsest up solves its own problem by
    /// one cycle from it (the coarsest by its `coarsest` iterations), starting from the
    /// interpolated answer of the level below; the finest level's answer is left for the
    /// first cycle. Returns the residuals of the finest level's initial state (of an
    /// iteration from it, which the interpolation then replaces).
    fn full_start(&mut self) -> Result<Residuals, BackendError> {
        let initial = self.levels[0].advance(1)?;
        let last = self.levels.len() - 1;
        if last == 0 {
            // One level (a grid too small to coarsen): nothing to start from.
            return Ok(initial);
        }
        self.levels[last].set_source(self.sources[last].as_ref())?;
        self.levels[last].advance(self.cycle.coarsest)?;
        for l in (1..last).rev() {
            self.levels[l].set_source(self.sources[l].as_ref())?;
            self.interpolate_up(l)?;
            self.cycle_from(l)?;
        }
        self.interpolate_up(0)?;
        Ok(initial)
    }

    /// Replaces level `l`'s interior by the interpolation of level `l + 1`'s state
    /// ([`Level::interpolate_from`]).
    fn interpolate_up(&mut self, l: usize) -> Result<(), BackendError> {
        let (fine, coarse) = self.levels[l..].split_at_mut(1);
        fine[0].interpolate_from(&mut coarse[0], self.references[l])
    }

    fn cycle_from(&mut self, l: usize) -> Result<Residuals, BackendError> {
        let Multigrid {
            pre,
            post,
            coarsest,
            shape,
            ..
        } = self.cycle;
        if l + 1 == self.levels.len() {
            return self.levels[l].advance(coarsest);
        }
        let first = match pre {
            0 => None,
            _ => Some(self.levels[l].advance(1)?),
        };
        if pre > 1 {
            self.levels[l].advance(pre - 1)?;
        }
        let (fine, coarse) = self.levels[l..].split_at_mut(1);
        let start = fine[0].hand_down(&mut coarse[0])?;
        for _ in 0..shape.visits() {
            self.cycle_from(l + 1)?;
        }
        let (fine, coarse) = self.levels[l..].split_at_mut(1);
        fine[0].correct(&mut coarse[0], start, self.references[l + 1])?;
        let last = self.levels[l].advance(post)?;
        Ok(first.unwrap_or(last))
    }

    fn cycles(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        let mut residuals = Residuals::default();
        for _ in 0..iterations {
            residuals = self.cycle()?;
        }
        Ok(residuals)
    }
}

impl<L: Level> Backend for Fas<L> {
    type Real = L::Real;

    fn name(&self) -> &'static str {
        self.levels[0].name()
    }

    /// `iterations` cycles.
    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        L::batch(self, move |fas| fas.cycles(iterations))
    }

    fn layout(&self) -> Layout {
        self.levels[0].layout()
    }

    fn download(&mut self) -> Result<Fields<L::Real>, BackendError> {
        self.levels[0].download()
    }

    /// A given state (a restart's): no full-multigrid start over it.
    fn upload(&mut self, fields: &Fields<L::Real>) -> Result<(), BackendError> {
        self.start = false;
        self.levels[0].upload(fields)
    }

    fn pieces(&mut self) -> Result<Vec<Snapshot<L::Real>>, BackendError> {
        self.levels[0].pieces()
    }

    fn piece_points(&self) -> Vec<Points> {
        self.levels[0].piece_points()
    }

    /// As [`Fas::upload`].
    fn restore_pieces(&mut self, pieces: &[Snapshot<L::Real>]) -> Result<(), BackendError> {
        self.start = false;
        self.levels[0].restore_pieces(pieces)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_coarsen_while_every_axis_halves_and_keeps_enough_nodes() {
        assert_eq!(
            levels(2, [129, 129, 1], 5, 20),
            [
                [129, 129, 1],
                [65, 65, 1],
                [33, 33, 1],
                [17, 17, 1],
                [9, 9, 1],
                [5, 5, 1]
            ]
        );
        assert_eq!(levels(2, [129, 129, 1], 5, 3).len(), 3);
        // 3 · 2^k + 1: stops where 7 would give 4.
        assert_eq!(
            levels(3, [97, 49, 25], 5, 20),
            [[97, 49, 25], [49, 25, 13], [25, 13, 7]]
        );
        // An even node count (odd intervals) does not coarsen.
        assert_eq!(levels(2, [100, 129, 1], 3, 20), [[100, 129, 1]]);
    }

    /// A field of `vars` variables on `layout`, each `value(var, x, y, z)` at the nodes.
    fn field(layout: Layout, vars: usize, value: impl Fn(usize, [f64; 3]) -> f64) -> Fields<f64> {
        let mut f = Fields::zeros(layout, vars);
        for (v, values) in f.vars.iter_mut().enumerate() {
            layout.for_each_node(|i, j, k, o| {
                values[o] = value(v, [i as f64, j as f64, k as f64]);
            });
        }
        f
    }

    /// A linear function of the fine grid's coordinates (coarse node (i, j, k) sits at fine
    /// node (2i, 2j, 2k)).
    fn linear(v: usize, x: [f64; 3]) -> f64 {
        1.5 + v as f64 - 0.25 * x[0] + 0.125 * x[1] + 0.5 * x[2]
    }

    #[test]
    fn transfers_keep_linear_functions() {
        for (dim, fine_n, coarse_n) in [(2, [17, 9, 1], [9, 5, 1]), (3, [9, 17, 5], [5, 9, 3])] {
            let (fl, cl) = (Layout::new(dim, fine_n), Layout::new(dim, coarse_n));
            let fine = field(fl, 2, linear);
            let on_coarse = |v: usize, x: [f64; 3]| linear(v, x.map(|c| 2.0 * c));
            let on_coarse = |v, x: [f64; 3]| {
                let mut x = x;
                x.iter_mut().skip(dim).for_each(|c| *c = 0.0);
                on_coarse(v, x)
            };
            let expected = field(cl, 2, on_coarse);
            let mut injected = Fields::zeros(cl, 2);
            inject(&fine, &mut injected);
            assert_eq!(injected.vars, expected.vars, "{dim}D injection");
            let mut restricted = expected.clone();
            restrict(&fine, &mut restricted);
            for (r, e) in restricted.vars.iter().zip(&expected.vars) {
                for (a, b) in r.iter().zip(e) {
                    assert!((a - b).abs() < 1e-13, "{dim}D restriction: {a} against {b}");
                }
            }
            // Prolongation onto a zero interior gives the linear function back there.
            let mut prolonged = field(fl, 2, |v, x| {
                let boundary = (0..dim).any(|a| x[a] == 0.0 || x[a] == (fine_n[a] - 1) as f64);
                if boundary {
                    linear(v, x)
                } else {
                    0.0
                }
            });
            prolong_add(&expected, &mut prolonged);
            for (p, e) in prolonged.vars.iter().zip(&fine.vars) {
                for (a, b) in p.iter().zip(e) {
                    assert!(
                        (a - b).abs() < 1e-13,
                        "{dim}D prolongation: {a} against {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn full_weighting_is_the_transpose_of_interpolation_over_two_to_the_dim() {
        // Fields zero on the boundary, varying inside (no symmetry to hide a wrong weight).
        for (dim, fine_n, coarse_n) in [(2, [17, 9, 1], [9, 5, 1]), (3, [9, 9, 5], [5, 5, 3])] {
            let (fl, cl) = (Layout::new(dim, fine_n), Layout::new(dim, coarse_n));
            let inside =
                |l: Layout, x: [f64; 3]| (0..dim).all(|a| x[a] > 0.0 && x[a] < (l.n[a] - 1) as f64);
            let v = field(fl, 1, |_, x| {
                if inside(fl, x) {
                    (x[0] * 1.3 + x[1] * x[1] * 0.7 + x[2]).sin()
                } else {
                    0.0
                }
            });
            let u = field(cl, 1, |_, x| {
                if inside(cl, x) {
                    (x[0] * 0.9 - x[1] + 2.0 * x[2]).cos()
                } else {
                    0.0
                }
            });
            let dot = |a: &Fields<f64>, b: &Fields<f64>| {
                let mut s = 0.0;
                a.layout
                    .for_each_node(|_, _, _, o| s += a.vars[0][o] * b.vars[0][o]);
                s
            };
            let mut rv = Fields::zeros(cl, 1);
            restrict(&v, &mut rv);
            let mut pu = Fields::zeros(fl, 1);
            prolong_add(&u, &mut pu);
            let (left, right) = ((1 << dim) as f64 * dot(&rv, &u), dot(&v, &pu));
            assert!(
                (left - right).abs() < 1e-12 * right.abs().max(1.0),
                "{dim}D: {left} against {right}"
            );
        }
    }
}
