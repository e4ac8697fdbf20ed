//! Moving packed halo buffers between blocks, and the global reductions.
use ferroflow_core::{BackendError, Real, Side};

/// One interface face of a local block: what it sends and where its halo arrives.
#[derive(Debug, Clone)]
pub struct Halo<R> {
    /// The local block.
    pub block: usize,
    /// Its side.
    pub side: Side,
    /// The block across the side.
    pub neighbour: usize,
    /// Packed values this side sends.
    pub send: Vec<R>,
    /// Packed values arriving for this side's halo.
    pub recv: Vec<R>,
}

impl<R> Halo<R> {
    /// Whether `other` is the face across from this one (what it sends, this one receives).
    pub fn faces(&self, other: &Halo<R>) -> bool {
        other.block == self.neighbour
            && other.neighbour == self.block
            && other.side == self.side.opposite()
    }
}

/// Moves halos between blocks and reduces across them. Every process calls every method in
/// the same order (collective semantics, as MPI).
pub trait Transport<R: Real> {
    /// This process's number and the number of processes.
    fn rank_size(&self) -> (usize, usize);

    /// Fills every halo's `recv` with the `send` of the face across from it.
    fn exchange(&mut self, halos: &mut [Halo<R>]) -> Result<(), BackendError>;

    /// Sums `values` over all processes (every process gets the sums).
    fn sum(&mut self, values: &mut [f64]) -> Result<(), BackendError>;

    /// Gives every process the values of process `root`.
    fn broadcast(&mut self, values: &mut [R], root: usize) -> Result<(), BackendError>;

    /// The process that iterates block `block` of `count`: contiguous ranges of blocks.
    fn owner(&self, block: usize, count: usize) -> usize {
        let size = self.rank_size().1;
        (0..size)
            .find(|r| block < (r + 1) * count / size)
            .unwrap_or(size - 1)
    }
}

/// Fills the `recv` of `halos[h]` from the face across from it, which must be in `halos` too.
pub(crate) fn copy_across<R: Real>(halos: &mut [Halo<R>], h: usize) -> Result<(), BackendError> {
    let from = (0..halos.len())
        .find(|g| halos[h].faces(&halos[*g]))
        .ok_or_else(|| BackendError::Failed {
            backend: "in-process",
            message: format!(
                "no face across from block {} {:?}",
                halos[h].block, halos[h].side
            ),
        })?;
    let values = std::mem::take(&mut halos[from].send);
    halos[h].recv.copy_from_slice(&values);
    halos[from].send = values;
    Ok(())
}

/// All blocks in this process: halos are copied directly.
#[derive(Debug, Default, Clone, Copy)]
pub struct InProcess;

impl<R: Real> Transport<R> for InProcess {
    fn rank_size(&self) -> (usize, usize) {
        (0, 1)
    }

    fn exchange(&mut self, halos: &mut [Halo<R>]) -> Result<(), BackendError> {
        (0..halos.len()).try_for_each(|h| copy_across(halos, h))
    }

    fn sum(&mut self, _values: &mut [f64]) -> Result<(), BackendError> {
        Ok(())
    }

    fn broadcast(&mut self, _values: &mut [R], _root: usize) -> Result<(), BackendError> {
        Ok(())
    }
}
