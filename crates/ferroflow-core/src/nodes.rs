//! Values at the nodes of a grid however they are held ([`NodeValues`]): a whole grid's
//! [`Fields`], or only the nodes a computation reads ([`Sampled`]), which a run over several
//! processes gathers instead of the grid. Which nodes those are is found by running the
//! computation once on a [`Recorder`], which reads nothing and notes every node asked for:
//! the computations (profiles along lines, wall gradients, plane maxima) read the same nodes
//! whatever the values.
use crate::{Fields, Layout, Real};
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

/// Values of a grid's variables at its nodes, read as f64.
pub trait NodeValues {
    /// The grid.
    fn grid(&self) -> Layout;

    /// Variable `var` at node `(i, j, k)`.
    fn value(&self, var: usize, i: usize, j: usize, k: usize) -> f64;
}

impl<R: Real> NodeValues for Fields<R> {
    fn grid(&self) -> Layout {
        self.layout
    }

    fn value(&self, var: usize, i: usize, j: usize, k: usize) -> f64 {
        self.at(var, i, j, k).f64()
    }
}

/// A variable at a node: `(var, [i, j, k])`.
pub type NodeVar = (usize, [usize; 3]);

/// Notes the nodes read through it; every value reads as 0.
pub struct Recorder {
    grid: Layout,
    read: RefCell<BTreeSet<NodeVar>>,
}

impl Recorder {
    /// A recorder of reads of a grid of layout `grid`.
    pub fn new(grid: Layout) -> Recorder {
        Recorder {
            grid,
            read: RefCell::new(BTreeSet::new()),
        }
    }

    /// Every variable and node read, each once, in order.
    pub fn read(self) -> Vec<NodeVar> {
        self.read.into_inner().into_iter().collect()
    }

    /// Notes a read without a computation.
    pub fn note(&self, var: usize, node: [usize; 3]) {
        self.read.borrow_mut().insert((var, node));
    }
}

impl NodeValues for Recorder {
    fn grid(&self) -> Layout {
        self.grid
    }

    fn value(&self, var: usize, i: usize, j: usize, k: usize) -> f64 {
        self.note(var, [i, j, k]);
        0.0
    }
}

/// Some variables at some nodes of a grid: reading any other is a bug of the caller (it
/// panics, naming the node).
pub struct Sampled {
    grid: Layout,
    values: HashMap<NodeVar, f64>,
}

impl Sampled {
    /// `values[m]` at `at[m]`.
    pub fn new(grid: Layout, at: &[NodeVar], values: &[f64]) -> Sampled {
        Sampled {
            grid,
            values: at.iter().copied().zip(values.iter().copied()).collect(),
        }
    }
}

impl NodeValues for Sampled {
    fn grid(&self) -> Layout {
        self.grid
    }

    fn value(&self, var: usize, i: usize, j: usize, k: usize) -> f64 {
        match self.values.get(&(var, [i, j, k])) {
            Some(v) => *v,
            None => panic!("variable {var} at node {:?} was not sampled", [i, j, k]),
        }
    }
}

/// `values` as twice as many whole numbers below 2^32 (the high and low halves of their
/// bits), which a sum over processes carries exactly when all but one add zeros: values,
/// signed zeros and NaNs arrive bit for bit.
pub fn to_halves(values: &[f64]) -> Vec<f64> {
    let halves = values.iter().map(|v| v.to_bits());
    halves
        .flat_map(|b| [(b >> 32) as f64, (b & 0xffff_ffff) as f64])
        .collect()
}

/// The values of [`to_halves`] back.
pub fn from_halves(halves: &[f64]) -> Vec<f64> {
    halves
        .chunks_exact(2)
        .map(|h| f64::from_bits(((h[0] as u64) << 32) | h[1] as u64))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_carry_every_bit_through_a_sum_with_zeros() {
        let values = [
            0.1,
            -0.0,
            f64::MIN_POSITIVE / 3.0,
            -1e300,
            f64::NAN,
            f64::INFINITY,
        ];
        let mut sum = to_halves(&values);
        for (s, z) in sum.iter_mut().zip(to_halves(&[0.0; 6])) {
            *s += z;
        }
        let back = from_halves(&sum);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&back), bits(&values));
    }

    #[test]
    fn a_recorder_notes_what_is_read_and_samples_answer_for_it() {
        let grid = Layout::new(2, [5, 4, 1]);
        let recorder = Recorder::new(grid);
        let read = |g: &dyn NodeValues| g.value(1, 2, 3, 0) + g.value(0, 4, 0, 0);
        assert_eq!(read(&recorder), 0.0);
        let at = recorder.read();
        assert_eq!(at, [(0, [4, 0, 0]), (1, [2, 3, 0])]);
        let sampled = Sampled::new(grid, &at, &[1.5, 2.0]);
        assert_eq!(read(&sampled), 3.5);
    }

    #[test]
    #[should_panic(expected = "variable 0 at node [1, 1, 0] was not sampled")]
    fn reading_an_unsampled_node_names_it() {
        Sampled::new(Layout::new(2, [3, 3, 1]), &[], &[]).value(0, 1, 1, 0);
    }
}
