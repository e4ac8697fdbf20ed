//! Multigrid levels cut into blocks (in one process or over MPI processes): every level is a
//! [`Decomposed`] grid of CPU blocks, the same blocks on every level, cut before the nodes
//! that stay nodes of the coarsest level ([`Decomposition::aligned`]), so that a block's coarse
//! twin ([`Decomposition::coarsened`]) holds the coarse nodes of its own fine nodes and the
//! transfers need no more than one halo layer of the other level's blocks:
//! - down: the fine residual (continuity projected with the whole grid's gauge) is exchanged
//!   so that every block has its neighbours' values at its interface nodes, then restricted
//!   block by block; the injected coarse state gets its halos by one exchange;
//! - up: the coarse change at a block's interface nodes is in its halo (the coarse level's
//!   last iteration exchanged it), so interpolation needs none; the fine state exchanges its
//!   halos after the correction.
//!
//! Within a level the blocks relax as the implicit method relaxes any decomposed grid (Jacobi
//! across interfaces), so a cycle differs from one block's in the last digits; over MPI
//! processes it is bitwise the cycle of the same blocks in one process (sums in block order).
use super::{
    inject_pair, levels, prolong, prolong_add, restrict, subtract, Fas, Level, MIN_COARSE_NODES,
};
use crate::cpu::{pack, unpack, CpuBackend};
use crate::decomposed::{each_face, Decomposed, Halos};
use crate::Problem;
use ferroflow_core::decomposition::Decomposition;
use ferroflow_core::{BackendError, Fields, ProblemError, Real};
use ferroflow_parallel::Transport;
use std::sync::Arc;

impl<R: Real, T: Transport<R> + Clone> Fas<Decomposed<CpuBackend<R>, T>> {
    /// The levels of `problem`'s grid cut as [`level_cuts`] cuts it into `blocks` blocks per
    /// axis, each process's blocks on `pool`.
    pub fn blocks(
        problem: &Problem<R>,
        blocks: [usize; 3],
        transport: T,
        pool: Arc<rayon::ThreadPool>,
    ) -> Result<Self, BackendError> {
        let (dim, n) = (problem.layout.dim, problem.layout.n);
        let levels = problem.numerics.multigrid.levels;
        let cuts = level_cuts(dim, n, blocks, levels).map_err(|e| BackendError::NotSuitable {
            backend: "multigrid",
            what: format!("levels of blocks {:?}: {e}", &blocks[..dim]),
        })?;
        let mut problem = problem.clone();
        problem.numerics.multigrid.levels = cuts.len();
        let mut cuts = cuts.into_iter();
        // A cycle runs here (MPI is called from this thread only); each phase of the blocks
        // runs on the pool (`Decomposed`).
        Fas::over(&problem, false, move |p, _| {
            let cut = cuts.next().expect("a cut per level");
            Decomposed::new(p, cut, transport.clone(), |b, _| {
                CpuBackend::on(b, Arc::clone(&pool))
            })
        })
    }
}

/// The cuts into `blocks` blocks per axis of the multigrid levels of a `dim`-dimensional grid
/// of `n` nodes per axis, at most `most` levels, finest first: the deepest hierarchy of
/// [`levels`] whose every level can be cut, each block owning at least
/// [`ferroflow_core::decomposition::MIN_OWNED`] nodes per axis (the hierarchy stops above a
/// level that cannot be cut so). The finest cut is the decomposition of the run.
pub fn level_cuts(
    dim: usize,
    n: [usize; 3],
    blocks: [usize; 3],
    most: usize,
) -> Result<Vec<Decomposition>, ProblemError> {
    let most = levels(dim, n, MIN_COARSE_NODES, most).len();
    let mut error = None;
    for depth in (1..=most).rev() {
        let mut cut = Decomposition::aligned(dim, n, blocks, 1 << (depth - 1));
        let mut cuts = Vec::new();
        while let Ok(c) = cut {
            cuts.push(c.clone());
            if cuts.len() == depth {
                return Ok(cuts);
            }
            cut = c.coarsened();
        }
        error = cut.err();
    }
    Err(error.expect("one level at least was tried"))
}

impl<R: Real, T: Transport<R>> Decomposed<CpuBackend<R>, T> {
    /// Fills the halos of `fields` (one per local block, in block order) from the blocks
    /// across their interfaces, as the state's are filled.
    fn exchange_fields(&mut self, fields: &mut [Fields<R>]) -> Result<(), BackendError> {
        each_face(fields, &self.faces, &mut self.halos, |f, face, halo| {
            pack(f, face, &mut halo.send);
            Ok(())
        })?;
        self.transport.exchange(&mut self.halos)?;
        each_face(fields, &self.faces, &mut self.halos, |f, face, halo| {
            unpack(f, face, &halo.recv);
            Ok(())
        })
    }

    /// Each local block's residual field, its continuity residual projected with the gauge of
    /// the whole grid (the blocks' sums added in block order).
    fn residual_fields(&mut self) -> Result<Vec<Fields<R>>, BackendError> {
        let parts = self.each(|b| Ok(b.unprojected_residual()))?;
        let gauge = self.gauge(parts.iter().map(|p| p.2).collect())?;
        Ok(parts
            .into_iter()
            .map(|(mut r, weights, _)| {
                CpuBackend::project_residual(&mut r, &weights, gauge);
                r
            })
            .collect())
    }

    /// `value(block, offset)` at the block holding the pressure reference node, in
    /// every process.
    fn at_reference(&mut self, value: impl Fn(usize, usize) -> R) -> Result<R, BackendError> {
        let (owner, offset) = self.reference;
        let mut v = [R::zero()];
        if let Some(i) = self.blocks.iter().position(|(id, _)| *id == owner) {
            v[0] = value(i, offset);
        }
        self.share(&mut v, owner)?;
        Ok(v[0])
    }

    /// Replaces every local block's state by `states` (walls filled), then fills the halos.
    fn replace(&mut self, states: &[Fields<R>]) -> Result<(), BackendError> {
        for ((_, b), s) in self.blocks.iter_mut().zip(states) {
            ferroflow_core::Backend::upload(b, s)?;
        }
        self.exchange(Halos::State)
    }

    fn states(&mut self) -> Result<Vec<Fields<R>>, BackendError> {
        let blocks = self.blocks.iter_mut();
        blocks
            .map(|(_, b)| ferroflow_core::Backend::download(b))
            .collect()
    }
}

impl<R: Real, T: Transport<R>> Level for Decomposed<CpuBackend<R>, T> {
    /// Each local coarse block's state at the start of the correction, halos included.
    type Start = Vec<Fields<R>>;

    /// The whole grid's `source`, cut to each block.
    fn set_source(&mut self, source: Option<&Fields<R>>) -> Result<(), BackendError> {
        let (d, extents) = (&self.decomposition, &self.extents);
        for (id, b) in &mut self.blocks {
            b.set_source(source.map(|s| d.cut(s, &extents[*id])))?;
        }
        Ok(())
    }

    fn hand_down(&mut self, coarse: &mut Self) -> Result<Vec<Fields<R>>, BackendError> {
        let mut residual = self.residual_fields()?;
        self.exchange_fields(&mut residual)?;
        let fine = self.states()?;
        let mut start = coarse.states()?;
        for ((f, s), (_, c)) in fine.iter().zip(&mut start).zip(&mut coarse.blocks) {
            inject_pair(f, s);
            c.set_source(None)?;
        }
        coarse.replace(&start)?;
        let start = coarse.states()?;
        let own = coarse.residual_fields()?;
        for (((_, c), r), own) in coarse.blocks.iter_mut().zip(&residual).zip(own) {
            let mut forcing = Fields::zeros(own.layout, own.vars.len());
            restrict(r, &mut forcing);
            subtract(&mut forcing, &own);
            c.set_source(Some(forcing))?;
        }
        Ok(start)
    }

    /// `reference`, the whole coarse grid's offset, is not a block's: the coarse level's own
    /// reference node is used.
    fn correct(
        &mut self,
        coarse: &mut Self,
        start: Vec<Fields<R>>,
        _reference: usize,
    ) -> Result<(), BackendError> {
        let mut change = coarse.states()?;
        for (c, s) in change.iter_mut().zip(&start) {
            subtract(c, s);
        }
        let level = coarse.at_reference(|i, offset| change[i].vars[0][offset])?;
        let mut states = self.states()?;
        for (state, c) in states.iter_mut().zip(&mut change) {
            c.vars[0].iter_mut().for_each(|p| *p = *p - level);
            prolong_add(c, state);
        }
        self.replace(&states)
    }

    fn interpolate_from(
        &mut self,
        coarse: &mut Self,
        _reference: usize,
    ) -> Result<(), BackendError> {
        let before = self.states()?;
        let mut states = before.clone();
        for (state, c) in states.iter_mut().zip(coarse.states()?) {
            prolong(&c, state);
        }
        let shift =
            self.at_reference(|i, offset| states[i].vars[0][offset] - before[i].vars[0][offset])?;
        for state in &mut states {
            state.vars[0].iter_mut().for_each(|p| *p = *p - shift);
        }
        self.replace(&states)
    }
}
