//! What the driver, checkpoints and writers see of a solver: [`Solver`] (advance, snapshot,
//! restore) and [`Snapshot`] (node values per variable, described by [`Points`], without the
//! scheme's storage: no ghosts, no padding, no device). A structured-block [`Backend`] is a
//! solver through its host copies; other schemes implement [`Solver`] directly.
use crate::{Backend, BackendError, Fields, Layout, Real, Residuals};

/// Where a snapshot's values sit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Points {
    /// The nodes of a structured grid, or of a box of one (a piece of a decomposed grid), x
    /// fastest, then y, then z: `n` nodes per axis (1 on an inactive axis) from global node
    /// `offset`, `dim` active axes.
    Grid {
        /// Active axes (2 or 3).
        dim: usize,
        /// Nodes per axis.
        n: [usize; 3],
        /// Global index of the first node per axis (zero for a whole grid).
        offset: [usize; 3],
    },
}

impl Points {
    /// A whole grid of `n` nodes per axis.
    pub fn grid(dim: usize, n: [usize; 3]) -> Points {
        Points::Grid {
            dim,
            n,
            offset: [0; 3],
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        match self {
            Points::Grid { n, .. } => n.iter().product(),
        }
    }

    /// Whether there is no point.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A solver's state as values per variable at its points, in the solver's precision.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot<R> {
    /// The points, in the order of the values.
    pub points: Points,
    /// One array per variable, one value per point.
    pub vars: Vec<Vec<R>>,
}

/// What the driver advances, checkpoints and writes.
pub trait Solver {
    /// Floating-point type of the state.
    type Real: Real;

    /// Name used in case files, on the command line and in summaries.
    fn name(&self) -> &'static str;

    /// Runs `iterations` iterations and returns the residuals of the last one.
    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError>;

    /// The current state at its points (as the scheme keeps it).
    fn snapshot(&mut self) -> Result<Snapshot<Self::Real>, BackendError>;

    /// Replaces the current state (restart) with `snapshot`, whose points must be the
    /// solver's.
    fn restore(&mut self, snapshot: &Snapshot<Self::Real>) -> Result<(), BackendError>;

    /// The pieces of the state this process holds, for writers that write each piece where
    /// it is: together, over all processes, they cover the grid, neighbours sharing their
    /// boundary nodes. By default the whole state, one piece.
    fn pieces(&mut self) -> Result<Vec<Snapshot<Self::Real>>, BackendError> {
        Ok(vec![self.snapshot()?])
    }

    /// The points of [`Solver::pieces`], without the values.
    fn piece_points(&self) -> Vec<Points>;

    /// Replaces the current state (restart) with `pieces`, this process's pieces as
    /// [`Solver::piece_points`] lists them, in that order.
    fn restore_pieces(&mut self, pieces: &[Snapshot<Self::Real>]) -> Result<(), BackendError>;
}

impl<B: Backend + ?Sized> Solver for B {
    type Real = B::Real;

    fn name(&self) -> &'static str {
        Backend::name(self)
    }

    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        Backend::advance(self, iterations)
    }

    fn snapshot(&mut self) -> Result<Snapshot<B::Real>, BackendError> {
        Ok(self.download()?.snapshot())
    }

    fn restore(&mut self, snapshot: &Snapshot<B::Real>) -> Result<(), BackendError> {
        let fields = Fields::from_snapshot(self.layout(), snapshot).map_err(|what| {
            BackendError::NotSuitable {
                backend: Backend::name(self),
                what,
            }
        })?;
        self.upload(&fields)
    }

    fn pieces(&mut self) -> Result<Vec<Snapshot<B::Real>>, BackendError> {
        Backend::pieces(self)
    }

    fn piece_points(&self) -> Vec<Points> {
        Backend::piece_points(self)
    }

    fn restore_pieces(&mut self, pieces: &[Snapshot<B::Real>]) -> Result<(), BackendError> {
        Backend::restore_pieces(self, pieces)
    }
}

impl<R: Real> Fields<R> {
    /// The node values (boundary nodes included, ghosts and padding left out).
    pub fn snapshot(&self) -> Snapshot<R> {
        let l = self.layout;
        let vars = self
            .vars
            .iter()
            .map(|a| {
                let mut v = Vec::with_capacity(l.nodes());
                l.for_each_node(|_, _, _, o| v.push(a[o]));
                v
            })
            .collect();
        Snapshot {
            points: Points::grid(l.dim, l.n),
            vars,
        }
    }

    /// Fields on `layout` with the node values of `snapshot` (ghosts and padding zero), or
    /// what does not fit: its points' shape must be the layout's (a piece of a bigger grid
    /// becomes a grid of its own).
    pub fn from_snapshot(layout: Layout, snapshot: &Snapshot<R>) -> Result<Fields<R>, String> {
        let Points::Grid { dim, n, .. } = snapshot.points;
        if (dim, n) != (layout.dim, layout.n) {
            return Err(format!(
                "a snapshot of {:?} nodes ({dim}D) restored onto {:?} ({}D)",
                n, layout.n, layout.dim
            ));
        }
        if let Some(v) = snapshot.vars.iter().find(|v| v.len() != layout.nodes()) {
            return Err(format!(
                "a snapshot variable of {} values for {} nodes",
                v.len(),
                layout.nodes()
            ));
        }
        let mut fields = Fields::zeros(layout, snapshot.vars.len());
        for (dst, src) in fields.vars.iter_mut().zip(&snapshot.vars) {
            let mut values = src.iter();
            layout.for_each_node(|_, _, _, o| dst[o] = *values.next().expect("checked length"));
        }
        Ok(fields)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_hold_the_nodes_and_restore_them_bitwise() {
        for layout in [Layout::new(2, [7, 5, 1]), Layout::new(3, [4, 6, 5])] {
            let mut fields = Fields::<f64>::zeros(layout, 2);
            let mut x = 0.1f64;
            for a in fields.vars.iter_mut() {
                for v in a.iter_mut() {
                    x = (x * 3.3 + 0.7).fract();
                    *v = x;
                }
            }
            let s = fields.snapshot();
            assert_eq!(s.points.len(), layout.nodes());
            assert_eq!(s.vars[1][0], fields.at(1, 0, 0, 0));
            let last = layout.n.map(|n| n - 1);
            assert_eq!(
                s.vars[0][layout.nodes() - 1],
                fields.at(0, last[0], last[1], last[2])
            );
            let back = Fields::from_snapshot(layout, &s).unwrap();
            assert_eq!(back.snapshot(), s);
            // Ghosts are not part of a snapshot.
            assert_eq!(back.vars[0][0], 0.0);
        }
        let s = Fields::<f32>::zeros(Layout::new(2, [7, 5, 1]), 1).snapshot();
        let e = Fields::from_snapshot(Layout::new(2, [5, 7, 1]), &s).unwrap_err();
        assert!(e.contains("[7, 5, 1]") && e.contains("[5, 7, 1]"), "{e}");
        let mut short = s.clone();
        short.vars[0].pop();
        let e = Fields::from_snapshot(Layout::new(2, [7, 5, 1]), &short).unwrap_err();
        assert!(e.contains("34 values for 35 nodes"), "{e}");
    }
}
