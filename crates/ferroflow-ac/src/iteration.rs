//! The scheme's pseudo-time iteration, written once for every device. A device implements
//! [`AcKernels`] (run them at once on the CPU, queue them on a GPU stream); [`iterate`] says
//! in which order they make one iteration. A new relaxation of the scheme adds its kernels to
//! the trait and its sequence here.
use ferroflow_core::BackendError;

/// What a device offers to iterate one block of the scheme, in the order [`iterate`] calls
/// it.
pub trait AcKernels {
    /// Where the pass reads the pressure shift (see `Problem::reference_pressure`): a value on
    /// the host, a device address on a GPU.
    type Shift: Copy;
    /// Which walls the interior pass filled itself (the x walls: on the CPU, by the
    /// explicit pass; on a GPU, for some launch shapes).
    type Filled: Copy;

    /// The fused interior pass from the current state into the next, pressure shifted by
    /// `shift`, with the residual partial sums when `norms`.
    fn interior_pass(
        &mut self,
        shift: Self::Shift,
        norms: bool,
    ) -> Result<Self::Filled, BackendError>;

    /// The physical walls of the next state, but those in `filled`.
    fn fill_walls(&mut self, filled: Self::Filled) -> Result<(), BackendError>;

    /// The residual partial sums of the last pass, reduced to one sum per equation in a
    /// fixed order.
    fn reduce_norms(&mut self) -> Result<(), BackendError>;

    /// The next state becomes the current one.
    fn swap(&mut self);
}

/// One iteration: the interior pass, then [`finish`].
pub fn iterate<K: AcKernels + ?Sized>(
    k: &mut K,
    shift: K::Shift,
    norms: bool,
) -> Result<(), BackendError> {
    let filled = k.interior_pass(shift, norms)?;
    finish(k, filled, norms)
}

/// The rest of an iteration once its interior pass is done (whole, or in parts by a driver
/// that overlaps it with halo exchange): walls, residual norms when `norms`, swap.
pub fn finish<K: AcKernels + ?Sized>(
    k: &mut K,
    filled: K::Filled,
    norms: bool,
) -> Result<(), BackendError> {
    k.fill_walls(filled)?;
    if norms {
        k.reduce_norms()?;
    }
    k.swap();
    Ok(())
}
