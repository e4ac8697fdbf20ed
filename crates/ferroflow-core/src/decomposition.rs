//! Cartesian domain decomposition: a grid cut into blocks, each a full solver block.
//!
//! The nodes the scheme updates (all but the wall nodes) are split into contiguous ranges
//! along each cut axis. A block's layout spans its own nodes plus one node on each side:
//! the wall node where the block touches a physical boundary, or the first node of the
//! neighbour across an interface. The backends' kernels therefore update a block exactly
//! as they update a whole grid (local nodes `1..n-1`), physical walls sit where they always
//! do, and a block interface is a side whose boundary node and ghosts are filled from the
//! neighbour (a halo) instead of by a boundary condition.
//!
//! Halo widths follow the stencils: the fourth-difference dissipation reads pressure two
//! nodes out, every other variable is read one node out (central differences). The
//! stencils are axis-aligned, so only faces are exchanged, never edges or corners.
use crate::{BackendError, Fields, Layout, ProblemError, Real, Residuals, Side, MIN_NODES};
use rayon::prelude::*;

/// Halo width of variable `var` (0 = pressure): the reach of the stencils that read it, the
/// fourth-difference dissipation's two nodes for pressure, `reach` for the others (1 with
/// second-order differences, 2 with fourth-order ones).
pub fn halo_width(var: usize, reach: usize) -> usize {
    if var == 0 {
        2
    } else {
        reach
    }
}

/// The fewest nodes a block owns along a cut axis (its layout then has `MIN_NODES`).
pub const MIN_OWNED: usize = MIN_NODES - 2;

/// A grid cut into `blocks[0] × blocks[1] × blocks[2]` blocks, block index x fastest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decomposition {
    /// Number of active axes.
    pub dim: usize,
    /// Nodes per axis of the whole grid.
    pub n: [usize; 3],
    /// Blocks per axis (1 on an inactive axis).
    pub blocks: [usize; 3],
    /// Per axis, the first node each block owns, then the last wall node (blocks + 1 entries;
    /// [0, 1] on an inactive axis).
    pub starts: [Vec<usize>; 3],
}

/// Where one block sits in the grid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockExtent {
    /// Block number (x fastest).
    pub id: usize,
    /// Block position per axis.
    pub coords: [usize; 3],
    /// Global index of the block's local node 0 per axis.
    pub origin: [usize; 3],
    /// Nodes of the block's layout per axis (owned nodes + 2 on active axes).
    pub n: [usize; 3],
    /// Neighbouring block across each side (`Side as usize`), `None` at a physical boundary.
    pub neighbours: [Option<usize>; 6],
}

impl BlockExtent {
    /// Layout of the block.
    pub fn layout(&self, dim: usize) -> Layout {
        Layout::new(dim, self.n)
    }

    /// Local index along `axis` of global index `g`, if the block owns that node or (at the
    /// ends of the grid) it is the wall node the block touches.
    fn local(&self, axis: usize, g: usize, global_n: usize) -> Option<usize> {
        let lo = self.origin[axis];
        let first = if lo == 0 { 0 } else { lo + 1 };
        let last = lo + self.n[axis] - 1;
        let last = if last == global_n - 1 { last } else { last - 1 };
        (first..=last).contains(&g).then(|| g - lo)
    }
}

/// The packed buffer of one side of a block: which nodes of each variable it carries. The
/// block sends the layers inside its side and receives into the layers beyond it (its
/// boundary node and ghosts); tangential axes span the block's own nodes only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Face {
    /// The side.
    pub side: Side,
    /// Variables exchanged (p, velocity components, T).
    pub vars: usize,
    /// How far the differences of the variables other than p reach ([`halo_width`]).
    pub reach: usize,
}

/// Local node ranges `[lo, hi)` per axis of a box of nodes.
pub type Region = [(isize, isize); 3];

impl Face {
    /// Nodes of variable `var` this side sends (`receive = false`) or receives.
    pub fn region(&self, layout: &Layout, var: usize, receive: bool) -> Region {
        let a = self.side.axis();
        let w = halo_width(var, self.reach) as isize;
        let mut r: Region = [(0, 1); 3];
        for d in 0..layout.dim {
            r[d] = (1, layout.n[d] as isize - 1);
        }
        let n = layout.n[a] as isize;
        r[a] = match (self.side.is_high(), receive) {
            (false, false) => (1, 1 + w),
            (false, true) => (1 - w, 1),
            (true, false) => (n - 1 - w, n - 1),
            (true, true) => (n - 1, n - 1 + w),
        };
        r
    }

    /// Values in the packed buffer (both directions carry the same count).
    pub fn len(&self, layout: &Layout) -> usize {
        (0..self.vars)
            .map(|v| region_len(&self.region(layout, v, false)))
            .sum()
    }

    /// Whether the face carries nothing (never, for a valid block).
    pub fn is_empty(&self, layout: &Layout) -> bool {
        self.len(layout) == 0
    }

    /// The buffer as runs of consecutive nodes along x, variables in order: the order both
    /// packing and unpacking use.
    pub fn rows(&self, layout: &Layout, receive: bool) -> Vec<FaceRow> {
        let mut rows = Vec::new();
        let mut at = 0;
        for var in 0..self.vars {
            let r = self.region(layout, var, receive);
            let len = (r[0].1 - r[0].0) as usize;
            for k in r[2].0..r[2].1 {
                for j in r[1].0..r[1].1 {
                    let offset = layout.index(r[0].0, j, k);
                    rows.push(FaceRow {
                        var,
                        at,
                        offset,
                        len,
                    });
                    at += len;
                }
            }
        }
        rows
    }
}

/// A run of consecutive nodes of one variable in a face buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaceRow {
    /// Variable.
    pub var: usize,
    /// Position of the run in the buffer.
    pub at: usize,
    /// Memory offset of its first node.
    pub offset: usize,
    /// Nodes in the run.
    pub len: usize,
}

/// The divisors of `count` up to `most`, ascending, in min(`most`, √`count`) steps.
fn divisors(count: usize, most: usize) -> Vec<usize> {
    let (mut small, mut large) = (Vec::new(), Vec::new());
    let mut i = 1;
    while i <= most && i <= count / i {
        if count.is_multiple_of(i) {
            small.push(i);
            // Its cofactor, unless the same or beyond `most`.
            if count / i != i && count / i <= most {
                large.push(count / i);
            }
        }
        i += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// Number of nodes in a region.
pub fn region_len(r: &Region) -> usize {
    r.iter().map(|(lo, hi)| (hi - lo).max(0) as usize).product()
}

impl Decomposition {
    /// Cuts a `dim`-dimensional grid of `n` nodes into `blocks` blocks per axis. Errors if the
    /// grid is smaller than [`MIN_NODES`] along an axis, or a block would own fewer than
    /// [`MIN_OWNED`] nodes along one.
    pub fn new(dim: usize, n: [usize; 3], blocks: [usize; 3]) -> Result<Self, ProblemError> {
        Decomposition::with_starts(dim, n, blocks, |d, b| Decomposition::even(n[d], b))
    }

    /// The first node each of `blocks` blocks owns along an axis of `n` nodes, then the last
    /// wall node: the nodes the scheme updates, 1 to n − 2, split as evenly as possible.
    pub fn even(n: usize, blocks: usize) -> Vec<usize> {
        (0..=blocks).map(|c| 1 + c * (n - 2) / blocks).collect()
    }

    /// As [`Decomposition::new`], the cuts before nodes `1 + align · m` (m whole): each block
    /// owns whole runs of `align` nodes (the last block one fewer), as evenly as they share
    /// out, so that the blocks of a multigrid level coarsen into the blocks of the next
    /// ([`Decomposition::coarsened`]) as often as `align` halves. Needs `align` to divide
    /// n − 1 on every cut axis.
    pub fn aligned(
        dim: usize,
        n: [usize; 3],
        blocks: [usize; 3],
        align: usize,
    ) -> Result<Self, ProblemError> {
        Decomposition::with_starts(dim, n, blocks, |d, b| {
            let runs = (n[d] - 1) / align;
            assert!(
                b == 1 || runs * align == n[d] - 1,
                "axis {d}: runs of {align} nodes"
            );
            let mut s: Vec<usize> = (0..b).map(|c| 1 + align * (c * runs / b)).collect();
            s.push(n[d] - 1);
            s
        })
    }

    /// The cut `starts(axis, blocks)` gives on each active axis, checked.
    fn with_starts(
        dim: usize,
        n: [usize; 3],
        blocks: [usize; 3],
        starts: impl Fn(usize, usize) -> Vec<usize>,
    ) -> Result<Self, ProblemError> {
        let mut blocks = blocks;
        let mut cuts = [vec![0, 1], vec![0, 1], vec![0, 1]];
        for d in 0..3 {
            if d >= dim {
                blocks[d] = 1;
                continue;
            }
            if n[d] < MIN_NODES {
                // Too small for one block: the grid is at fault, not the cut.
                return Err(ProblemError::GridTooSmall {
                    axis: d,
                    nodes: n[d],
                    min: MIN_NODES,
                });
            }
            let few = |s: &[usize]| s.windows(2).any(|w| w[1] < w[0] + MIN_OWNED);
            if blocks[d] == 0 || (n[d] - 2) / blocks[d] < MIN_OWNED || {
                cuts[d] = starts(d, blocks[d]);
                few(&cuts[d])
            } {
                return Err(ProblemError::OutOfRange {
                    name: "parallel.blocks",
                    value: blocks[d] as f64,
                    allowed: "1 to (nodes - 2) / 3 blocks per axis (each block owns >= 3 nodes)",
                });
            }
        }
        Ok(Decomposition {
            dim,
            n,
            blocks,
            starts: cuts,
        })
    }

    /// The same blocks over the grid of every other node (a multigrid level's next coarser
    /// one): each block owns the coarse twins of its fine nodes (node 2i is node i there), so
    /// block origins halve and the transfers between two levels stay within a block and its
    /// halo. Errors where a cut is not before an odd node or a block would own too few nodes.
    pub fn coarsened(&self) -> Result<Decomposition, ProblemError> {
        let mut n = self.n;
        for d in 0..self.dim {
            n[d] = (n[d] - 1) / 2 + 1;
        }
        let odd = (0..self.dim).all(|d| {
            let inner = &self.starts[d][1..self.blocks[d]];
            (self.n[d] - 1).is_multiple_of(2) && inner.iter().all(|s| s % 2 == 1)
        });
        if !odd {
            return Err(ProblemError::OutOfRange {
                name: "parallel.blocks",
                value: self.count() as f64,
                allowed: "cuts of a grid that coarsens (before odd nodes of an odd count)",
            });
        }
        Decomposition::with_starts(self.dim, n, self.blocks, |d, b| {
            let mut s: Vec<usize> = self.starts[d][..b].iter().map(|s| s.div_ceil(2)).collect();
            s.push(n[d] - 1);
            s
        })
    }

    /// Cuts the grid into `count` blocks, as evenly as possible: the factorisation with the
    /// least interface area, ties going to cuts along the slowest-varying axis (whose faces
    /// are contiguous in memory).
    pub fn automatic(dim: usize, n: [usize; 3], count: usize) -> Result<Self, ProblemError> {
        Decomposition::new(dim, n, [1; 3])?;
        // The most blocks an axis can take bounds the search, however large `count` is.
        let most = |d: usize| match d < dim {
            true => (n[d] - 2) / MIN_OWNED,
            false => 1,
        };
        // (blocks, key): the lowest key wins.
        let mut best: Option<([usize; 3], (u128, usize, usize))> = None;
        for pz in divisors(count, most(2)) {
            for py in divisors(count / pz, most(1)) {
                let b = [count / pz / py, py, pz];
                if Decomposition::new(dim, n, b).is_err() {
                    continue;
                }
                // Interface area: per cut axis, (cuts) × (product of the other extents).
                let area: u128 = (0..dim)
                    .map(|a| {
                        let other: u128 =
                            (0..dim).filter(|d| *d != a).map(|d| n[d] as u128).product();
                        (b[a] as u128 - 1) * other
                    })
                    .sum();
                // Lower key wins: less area, then more blocks along z, then y.
                let key = (area, usize::MAX - b[2], usize::MAX - b[1]);
                if best.as_ref().is_none_or(|(_, k)| key < *k) {
                    best = Some((b, key));
                }
            }
        }
        match best {
            Some((b, _)) => Decomposition::new(dim, n, b),
            None => Err(ProblemError::OutOfRange {
                name: "parallel.count",
                value: count as f64,
                allowed:
                    "a block count the grid can be cut into (each block owns >= 3 nodes per axis)",
            }),
        }
    }

    /// Layout of the whole grid.
    pub fn layout(&self) -> Layout {
        Layout::new(self.dim, self.n)
    }

    /// Checks that this cuts the grid of `layout`; the error names `backend`.
    pub fn check_grid(&self, layout: &Layout, backend: &'static str) -> Result<(), BackendError> {
        if self.n == layout.n && self.dim == layout.dim {
            Ok(())
        } else {
            Err(BackendError::Failed {
                backend,
                message: "the decomposition is not of the problem's grid".into(),
            })
        }
    }

    /// Number of blocks.
    pub fn count(&self) -> usize {
        self.blocks.iter().product()
    }

    /// The block with number `id`.
    pub fn block(&self, id: usize) -> BlockExtent {
        let b = self.blocks;
        let coords = [id % b[0], id / b[0] % b[1], id / (b[0] * b[1])];
        let mut origin = [0; 3];
        let mut n = [1; 3];
        let mut neighbours = [None; 6];
        for d in 0..self.dim {
            // The layout adds one node on each side of the owned ones.
            let (s, e) = (self.starts[d][coords[d]], self.starts[d][coords[d] + 1]);
            origin[d] = s - 1;
            n[d] = e - s + 2;
            let step = [1, b[0], b[0] * b[1]][d];
            if coords[d] > 0 {
                neighbours[2 * d] = Some(id - step);
            }
            if coords[d] + 1 < b[d] {
                neighbours[2 * d + 1] = Some(id + step);
            }
        }
        BlockExtent {
            id,
            coords,
            origin,
            n,
            neighbours,
        }
    }

    /// All blocks, by number.
    pub fn extents(&self) -> Vec<BlockExtent> {
        (0..self.count()).map(|id| self.block(id)).collect()
    }

    /// The block owning global node `g` and the node's local indices there.
    pub fn owner(&self, g: [usize; 3]) -> (usize, [usize; 3]) {
        for b in self.extents() {
            let local: Option<Vec<usize>> = (0..3).map(|d| b.local(d, g[d], self.n[d])).collect();
            if let Some(l) = local {
                return (b.id, [l[0], l[1], l[2]]);
            }
        }
        unreachable!("every node has an owner")
    }

    /// The part of `f` a block's layout covers, ghosts included.
    pub fn cut<R: Real>(&self, f: &Fields<R>, b: &BlockExtent) -> Fields<R> {
        let layout = b.layout(self.dim);
        let mut out = Fields::zeros(layout, f.vars.len());
        let g = layout.ghost.map(|g| g as isize);
        let o = b.origin.map(|x| x as isize);
        // Whole rows at a time (x is contiguous), planes in parallel: large grids are cut in
        // seconds.
        let row = layout.n[0] + 2 * layout.ghost[0];
        for (dst, src) in out.vars.iter_mut().zip(&f.vars) {
            dst.par_chunks_mut(layout.stride[2])
                .enumerate()
                .for_each(|(plane, dst)| {
                    let k = plane as isize - g[2];
                    for j in -g[1]..layout.n[1] as isize + g[1] {
                        let to = layout.index(-g[0], j, -g[2]);
                        let from = f.layout.index(o[0] - g[0], j + o[1], k + o[2]);
                        dst[to..to + row].copy_from_slice(&src[from..from + row]);
                    }
                });
        }
        out
    }

    /// Writes the nodes block `b` owns (and the wall nodes it touches) from its fields into
    /// the whole grid's fields `f`.
    pub fn paste<R: Real>(&self, f: &mut Fields<R>, b: &BlockExtent, block: &Fields<R>) {
        let range = |d: usize| -> (usize, usize) {
            let lo = b.origin[d];
            let first = if lo == 0 { 0 } else { 1 };
            let hi = lo + b.n[d] - 1;
            let last = if hi == self.n[d] - 1 {
                b.n[d]
            } else {
                b.n[d] - 1
            };
            (first, last)
        };
        let (ri, rj, rk) = (range(0), range(1), range(2));
        for k in rk.0..rk.1 {
            for j in rj.0..rj.1 {
                for i in ri.0..ri.1 {
                    let from = block.layout.index(i as isize, j as isize, k as isize);
                    let to = f.layout.index(
                        (i + b.origin[0]) as isize,
                        (j + b.origin[1]) as isize,
                        (k + b.origin[2]) as isize,
                    );
                    for (dst, src) in f.vars.iter_mut().zip(&block.vars) {
                        dst[to] = src[from];
                    }
                }
            }
        }
    }
}

/// What the drivers of a decomposed grid share, whatever runs the blocks.
impl Decomposition {
    /// The whole grid's state of `vars` variables: the nodes of every block, in order, pasted
    /// from `block(extent)` (what no block owns, the ghosts beyond the walls, is zero). Held
    /// only while asked for: a driver keeps no copy of the whole grid.
    pub fn gather<R: Real>(
        &self,
        vars: usize,
        mut block: impl FnMut(&BlockExtent) -> Result<Fields<R>, BackendError>,
    ) -> Result<Fields<R>, BackendError> {
        let mut whole = Fields::zeros(self.layout(), vars);
        for e in self.extents() {
            let f = block(&e)?;
            self.paste(&mut whole, &e, &f);
        }
        Ok(whole)
    }

    /// Calls `upload(block, cut)` for each `(id, block)` of `blocks`, in order, with the part
    /// of the whole grid's state `fields` that block `id` covers. Uploads nothing, and errors
    /// naming `backend`, if `fields` is not a state of this grid with `vars` variables.
    pub fn scatter<R: Real, B>(
        &self,
        fields: &Fields<R>,
        vars: usize,
        backend: &'static str,
        blocks: impl IntoIterator<Item = (usize, B)>,
        mut upload: impl FnMut(B, &Fields<R>) -> Result<(), BackendError>,
    ) -> Result<(), BackendError> {
        fields.check_state(&self.layout(), vars, backend)?;
        for (id, b) in blocks {
            upload(b, &self.cut(fields, &self.block(id)))?;
        }
        Ok(())
    }

    /// The whole grid's residuals: the sums of `blocks` (`equations` each) added in the order
    /// given (block order, so that a run's sums are reproducible).
    pub fn sum_residuals(
        &self,
        equations: usize,
        blocks: impl IntoIterator<Item = Residuals>,
    ) -> Residuals {
        let mut total = Residuals::zeros(equations, self.layout().interior_nodes());
        for b in blocks {
            total.add(&b);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_up_to_a_bound_come_in_order() {
        assert_eq!(divisors(12, 100), [1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(12, 4), [1, 2, 3, 4]);
        assert_eq!(divisors(36, 36), [1, 2, 3, 4, 6, 9, 12, 18, 36]);
        assert_eq!(divisors(0, 10), Vec::<usize>::new());
        assert_eq!(divisors(usize::MAX, 10), [1, 3, 5]);
    }

    #[test]
    fn grids_too_small_or_counts_too_large_are_errors_at_once() {
        for dim in [2, 3] {
            let small = Decomposition::automatic(dim, [1, 5, 5], 1).unwrap_err();
            assert!(matches!(
                small,
                ProblemError::GridTooSmall {
                    axis: 0,
                    nodes: 1,
                    ..
                }
            ));
            let small = Decomposition::new(dim, [5, 4, 5], [1, 1, 1]).unwrap_err();
            assert!(matches!(
                small,
                ProblemError::GridTooSmall {
                    axis: 1,
                    nodes: 4,
                    ..
                }
            ));
            for count in [usize::MAX, 1 << 62, (1 << 61) - 1] {
                let many = Decomposition::automatic(dim, [65, 65, 65], count).unwrap_err();
                assert!(
                    matches!(
                        many,
                        ProblemError::OutOfRange {
                            name: "parallel.count",
                            ..
                        }
                    ),
                    "{many:?}"
                );
            }
        }
        // The largest count the grid allows is still found: 21 blocks per axis.
        let d = Decomposition::automatic(3, [65, 65, 65], 21 * 21 * 21).unwrap();
        assert_eq!(d.blocks, [21, 21, 21]);
    }

    #[test]
    fn blocks_own_every_updated_node_once() {
        let d = Decomposition::new(3, [21, 14, 11], [3, 2, 2]).unwrap();
        let mut count = vec![0; 21 * 14 * 11];
        for b in d.extents() {
            for k in 1..b.n[2] - 1 {
                for j in 1..b.n[1] - 1 {
                    for i in 1..b.n[0] - 1 {
                        let g = [i + b.origin[0], j + b.origin[1], k + b.origin[2]];
                        count[g[0] + 21 * (g[1] + 14 * g[2])] += 1;
                    }
                }
            }
        }
        let inner = (0..count.len()).filter(|x| {
            let g = [x % 21, x / 21 % 14, x / 294];
            (0..3).all(|d| g[d] > 0 && g[d] < [20, 13, 10][d])
        });
        assert!(inner.clone().all(|x| count[x] == 1));
        assert_eq!(count.iter().sum::<usize>(), inner.count());
    }

    #[test]
    fn neighbours_are_mutual_and_faces_match() {
        let d = Decomposition::new(3, [21, 14, 11], [3, 2, 2]).unwrap();
        for b in d.extents() {
            for side in Side::ALL {
                if let Some(nb) = b.neighbours[side as usize] {
                    let other = d.block(nb);
                    let back = side.opposite();
                    assert_eq!(other.neighbours[back as usize], Some(b.id));
                    for reach in [1, 2] {
                        let f = Face {
                            side,
                            vars: 5,
                            reach,
                        };
                        let g = Face { side: back, ..f };
                        assert_eq!(f.len(&b.layout(3)), g.len(&other.layout(3)));
                    }
                }
            }
        }
    }

    #[test]
    fn automatic_cuts_the_slowest_axis_first() {
        let cube = Decomposition::automatic(3, [65, 65, 65], 2).unwrap();
        assert_eq!(cube.blocks, [1, 1, 2]);
        let flat = Decomposition::automatic(2, [65, 65, 1], 4).unwrap();
        assert_eq!(flat.blocks, [2, 2, 1]);
        let slab = Decomposition::automatic(3, [129, 129, 17], 4).unwrap();
        assert_eq!(slab.blocks, [2, 2, 1]);
        assert!(Decomposition::automatic(2, [9, 9, 1], 7).is_err());
        let small = Decomposition::automatic(2, [0, 9, 1], 1).unwrap_err();
        assert!(matches!(small, ProblemError::GridTooSmall { axis: 0, .. }));
    }

    #[test]
    fn scatter_then_gather_gives_back_every_node() {
        let d = Decomposition::new(3, [11, 9, 8], [2, 2, 1]).unwrap();
        let layout = d.layout();
        let mut whole = Fields::<f64>::zeros(layout, 2);
        for (v, data) in whole.vars.iter_mut().enumerate() {
            for (x, value) in data.iter_mut().enumerate() {
                *value = (2 * x + v) as f64;
            }
        }
        let mut cuts = vec![None; d.count()];
        let slots = cuts.iter_mut().enumerate();
        d.scatter(&whole, 2, "test", slots, |slot, f| {
            *slot = Some(f.clone());
            Ok(())
        })
        .unwrap();
        let back = d.gather(2, |e| Ok(cuts[e.id].take().unwrap())).unwrap();
        for v in 0..2 {
            layout.for_each_node(|_, _, _, o| assert_eq!(back.vars[v][o], whole.vars[v][o]));
        }
        // Ghosts beyond the walls are zero.
        assert_eq!(back.vars[0][0], 0.0);
        for wrong in [
            Fields::<f64>::zeros(layout, 3),
            Fields::zeros(Layout::new(3, [11, 9, 9]), 2),
        ] {
            let r = d.scatter(&wrong, 2, "test", [(0, ())], |_, _| unreachable!());
            assert!(matches!(
                r,
                Err(BackendError::Failed {
                    backend: "test",
                    ..
                })
            ));
        }
    }

    #[test]
    fn residuals_add_up_over_the_whole_grid() {
        let d = Decomposition::new(2, [9, 7, 1], [2, 1, 1]).unwrap();
        let block = |s: f64| Residuals {
            sum_sq: vec![s, 2.0 * s],
            nodes: 1,
        };
        let total = d.sum_residuals(2, [block(1.0), block(3.0)]);
        assert_eq!(total.sum_sq, [4.0, 8.0]);
        assert_eq!(total.nodes, 7 * 5);
    }

    #[test]
    fn owner_of_wall_nodes_is_the_touching_block() {
        let d = Decomposition::new(2, [17, 17, 1], [2, 2, 1]).unwrap();
        assert_eq!(d.owner([0, 0, 0]).0, 0);
        assert_eq!(d.owner([16, 16, 0]), (3, [9, 9, 0]));
        assert_eq!(d.owner([7, 7, 0]), (0, [7, 7, 0]));
        assert_eq!(d.owner([8, 8, 0]), (3, [1, 1, 0]));
        assert_eq!(d.owner([9, 7, 0]), (1, [2, 7, 0]));
    }

    #[test]
    fn aligned_blocks_coarsen_into_the_blocks_of_every_other_node() {
        // 3 blocks of 129 nodes along x, 2 of 65 along y: cuts before 1 + 8m, three levels.
        let mut d = Decomposition::aligned(3, [129, 65, 33], [3, 2, 1], 8).unwrap();
        for _ in 0..3 {
            let c = d.coarsened().unwrap();
            assert_eq!(c.n, d.n.map(|x| (x - 1) / 2 + 1));
            for (f, e) in d.extents().iter().zip(c.extents()) {
                for a in 0..3 {
                    // Origins halve (the coarse twin of a fine node 2i is node i, in each
                    // block's own numbering too), and the coarse block spans the twins of
                    // the fine one's nodes, its far side one coarse node on where the fine
                    // block ends at a cut.
                    assert_eq!(2 * e.origin[a], f.origin[a], "axis {a}");
                    assert!(matches!(f.n[a] - 2 * (e.n[a] - 1), 0 | 1), "axis {a}");
                    assert_eq!(f.neighbours, e.neighbours);
                }
            }
            d = c;
        }
        // At the last level the cuts are before even nodes: no further coarsening.
        assert!(d.coarsened().is_err());
        // Whole runs share out evenly; where they leave a block too few nodes the cut is
        // refused. The even split is unchanged.
        let two = Decomposition::aligned(2, [33, 17, 1], [2, 1, 1], 8).unwrap();
        assert_eq!(two.block(1).origin[0], 16);
        assert!(Decomposition::aligned(2, [17, 17, 1], [3, 1, 1], 8).is_err());
        let even = Decomposition::new(2, [33, 17, 1], [2, 1, 1]).unwrap();
        assert_eq!(even.starts[0], [1, 16, 32]);
        assert!(even.coarsened().is_err());
    }
}
