//! Blocks of a decomposed grid: the problem of each block, and what a backend must offer to
//! iterate one block under a driver that shares the whole grid's pressure shift and moves
//! its halos.
use crate::implicit::ImplicitBlock;
use crate::{Problem, SideBc};
use ferroflow_core::decomposition::{BlockExtent, Decomposition, Face};
use ferroflow_core::{Backend, BackendError, Fields, ProblemError, Real, Residuals, Side};

/// A backend that can run one block of a decomposed grid: the driver of the decomposition
/// sequences its iterations one at a time, with the whole grid's pressure shift, and moves
/// its halos through packed face buffers.
pub trait BlockBackend: Backend {
    /// Pressure of the current state at memory offset `offset` (the reference node).
    fn pressure_at(&mut self, offset: usize) -> Result<Self::Real, BackendError>;

    /// One iteration (interior pass, physical walls, swap) with pressure shift `p_shift`
    /// (see [`crate::Problem::reference_pressure`]); returns its residual sums when `norms`.
    /// `faces` are the block's faces the step moves itself ([`BlockBackend::moves_in_step`]):
    /// it packs the next state's values into their send buffers, and reads the current
    /// state's halo from their received values where these are given.
    fn step(
        &mut self,
        p_shift: Self::Real,
        norms: bool,
        faces: &mut [FaceBuffers<'_, Self::Real>],
    ) -> Result<Residuals, BackendError>;

    /// Whether [`BlockBackend::step`] packs `face` and can read its halo from the received
    /// values, where the values lie in the rows the pass visits anyway. None by default.
    fn moves_in_step(&self, _face: &Face) -> bool {
        false
    }

    /// Packs the values `face` sends from the current state into `buf`.
    fn pack(&mut self, face: &Face, buf: &mut [Self::Real]) -> Result<(), BackendError>;

    /// Writes `buf` into the halo `face` receives, in the current state.
    fn unpack(&mut self, face: &Face, buf: &[Self::Real]) -> Result<(), BackendError>;

    /// The implicit iteration's phases of this block (a problem asking for the implicit
    /// method), or the error that says this backend cannot couple blocks in it.
    fn implicit(&mut self) -> Result<&mut dyn ImplicitBlock<Self::Real>, BackendError>;

    /// Runs `work` on `blocks` where their kernels, called many times in a row, dispatch
    /// fastest (the CPU: on a thread of the pool they share, so that each kernel runs there
    /// without a switch between threads). By default, here.
    fn batch<T: Send>(
        blocks: &mut [(usize, Self)],
        work: impl FnOnce(&mut [(usize, Self)]) -> T + Send,
    ) -> T
    where
        Self: Sized,
    {
        work(blocks)
    }
}

/// A face whose halo [`BlockBackend::step`] moves itself.
pub struct FaceBuffers<'a, R> {
    /// The face.
    pub face: &'a Face,
    /// The current state's halo values as the last exchange received them, where they are not
    /// in the state's halo (none: they are).
    pub received: Option<&'a [R]>,
    /// Where the next state's values this face sends go, packed as
    /// [`BlockBackend::pack`] packs them.
    pub send: &'a mut [R],
}

/// The problem of block `b` of `d`: the whole problem's data cut to the block's layout (ghosts
/// included), its interfaces marked as such.
pub fn block_problem<R: Real>(
    d: &Decomposition,
    problem: &Problem<R>,
    b: &BlockExtent,
) -> Result<Problem<R>, ProblemError> {
    let layout = b.layout(d.dim);
    let cut = |f: &Fields<R>| d.cut(f, b);
    let mut lengths = [1.0; 3];
    for a in 0..d.dim {
        lengths[a] = problem.spacing[a] * (layout.n[a] - 1) as f64;
    }
    // Each block its own values: from the rule where there is one (no process then holds the
    // whole grid's), else cut from the whole grid's.
    let initial = match &problem.rule {
        Some(rule) => rule.fields(layout, b.origin, d.n, problem.initial.vars.len()),
        None => cut(&problem.initial),
    };
    let mut p = Problem::new(layout, lengths, problem.physics, problem.numerics, initial)?;
    // Exactly the whole grid's spacing (not recomputed from rounded lengths).
    p.spacing = problem.spacing;
    p.energy = problem.energy;
    p.source = problem.source.as_ref().map(cut);
    for side in Side::ALL {
        p.sides[side as usize] = match b.neighbours[side as usize] {
            Some(_) => SideBc::Interface,
            None => problem.sides[side as usize],
        };
    }
    let (owner, local) = d.owner(problem.pressure_ref);
    p.pressure_ref = if owner == b.id {
        local
    } else {
        [1, 1, 1.min(layout.n[2] - 1)]
    };
    Ok(p)
}
