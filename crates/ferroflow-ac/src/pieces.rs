//! A decomposed grid's state as pieces, each written where its block lives: a block's own nodes
//! (with the walls it touches), extended by the first node of the block above it along each
//! cut axis, so that neighbouring pieces share one node layer, as VTK's pieces of one dataset
//! do. The extension comes from the neighbours' own nodes, axis after axis (x, then y, then z,
//! each carrying what the earlier axes added), so that edges and corners come from their owners
//! too: no value is taken from a halo.
use ferroflow_core::decomposition::{BlockExtent, Decomposition};
use ferroflow_core::{BackendError, Fields, Points, Real, Side, Snapshot};
use ferroflow_parallel::{Halo, Transport};

/// The local index of block `e`'s first own node and its own nodes per axis (the walls it
/// touches included).
fn owned(e: &BlockExtent) -> ([usize; 3], [usize; 3]) {
    let (mut first, mut count) = ([0; 3], [1; 3]);
    for a in 0..3 {
        let below = e.neighbours[Side::ALL[2 * a] as usize].is_some();
        let above = e.neighbours[Side::ALL[2 * a + 1] as usize].is_some();
        first[a] = below as usize;
        count[a] = e.n[a] - below as usize - above as usize;
    }
    (first, count)
}

/// The points of block `e`'s piece of the grid of `d`.
pub fn piece_points(d: &Decomposition, e: &BlockExtent) -> Points {
    let (first, mut n) = owned(e);
    for a in 0..d.dim {
        n[a] += e.neighbours[Side::ALL[2 * a + 1] as usize].is_some() as usize;
    }
    Points::Grid {
        dim: d.dim,
        n,
        offset: [0, 1, 2].map(|a| e.origin[a] + first[a]),
    }
}

/// Block `e`'s state (layout of its extent, `vars` variables) with the values of its piece
/// (see [`piece_points`]) at their nodes and zero elsewhere: the halos below it are the
/// exchange's to fill.
pub fn block_from_piece<R: Real>(e: &BlockExtent, dim: usize, piece: &Snapshot<R>) -> Fields<R> {
    let (first, _) = owned(e);
    let Points::Grid { n, .. } = piece.points;
    let mut f = Fields::zeros(e.layout(dim), piece.vars.len());
    for (var, values) in f.vars.iter_mut().zip(&piece.vars) {
        for (v, [i, j, k]) in values.iter().zip(nodes(n)) {
            let o = f.layout.index(
                (first[0] + i) as isize,
                (first[1] + j) as isize,
                (first[2] + k) as isize,
            );
            var[o] = *v;
        }
    }
    f
}

/// Position of node `ijk` in a box of `n` nodes per axis, x fastest.
fn at(n: [usize; 3], ijk: [usize; 3]) -> usize {
    ijk[0] + n[0] * (ijk[1] + n[1] * ijk[2])
}

/// Every node of a box of `n` nodes per axis, x fastest.
fn nodes(n: [usize; 3]) -> impl Iterator<Item = [usize; 3]> {
    (0..n[2]).flat_map(move |k| (0..n[1]).flat_map(move |j| (0..n[0]).map(move |i| [i, j, k])))
}

/// One block's piece while it is being built.
struct Part<R> {
    extent: BlockExtent,
    n: [usize; 3],
    vars: Vec<Vec<R>>,
}

impl<R: Real> Part<R> {
    /// The values of the nodes with index `layer` along `axis`, variable after variable.
    fn plane(&self, axis: usize, layer: usize) -> Vec<R> {
        let mut plane = Vec::new();
        for v in &self.vars {
            plane.extend(
                nodes(self.n)
                    .filter(|ijk| ijk[axis] == layer)
                    .map(|ijk| v[at(self.n, ijk)]),
            );
        }
        plane
    }

    /// Appends `plane` (as [`Part::plane`] orders it) as a last layer along `axis`.
    fn append(&mut self, axis: usize, plane: &[R]) {
        let old = self.n;
        self.n[axis] += 1;
        let per_var = plane.len() / self.vars.len();
        for (v, var) in self.vars.iter_mut().enumerate() {
            let mut extra = plane[v * per_var..(v + 1) * per_var].iter();
            *var = nodes(self.n)
                .map(|ijk| match ijk[axis] == old[axis] {
                    true => *extra.next().expect("a plane value per node"),
                    false => var[at(old, ijk)],
                })
                .collect();
        }
    }
}

/// The pieces of the blocks `local` (each block's extent and state) of `d`, whose neighbours
/// above send their first node layers through `transport`: every process calls this at once.
pub fn pieces<R: Real, T: Transport<R>>(
    d: &Decomposition,
    local: Vec<(BlockExtent, Fields<R>)>,
    transport: &mut T,
) -> Result<Vec<Snapshot<R>>, BackendError> {
    let mut parts: Vec<Part<R>> = local
        .into_iter()
        .map(|(extent, f)| {
            let (first, n) = owned(&extent);
            let vars = f
                .vars
                .iter()
                .map(|a| {
                    nodes(n)
                        .map(|[i, j, k]| {
                            let o = f.layout.index(
                                (first[0] + i) as isize,
                                (first[1] + j) as isize,
                                (first[2] + k) as isize,
                            );
                            a[o]
                        })
                        .collect()
                })
                .collect();
            Part { extent, n, vars }
        })
        .collect();
    let tag = |block: usize, side: Side| 6 * block + side as usize;
    for a in (0..d.dim).filter(|&a| d.blocks[a] > 1) {
        let (low, high) = (Side::ALL[2 * a], Side::ALL[2 * a + 1]);
        let mut halos = Vec::new();
        for p in &parts {
            let id = p.extent.id;
            if let Some(above) = p.extent.neighbours[high as usize] {
                let len = p.plane(a, 0).len();
                halos.push(Halo {
                    block: id,
                    neighbour: above,
                    recv_tag: tag(id, high),
                    send_tag: tag(above, low),
                    send: Vec::new(),
                    recv: vec![R::zero(); len],
                });
            }
            if let Some(below) = p.extent.neighbours[low as usize] {
                halos.push(Halo {
                    block: id,
                    neighbour: below,
                    recv_tag: tag(id, low),
                    send_tag: tag(below, high),
                    send: p.plane(a, 0),
                    recv: Vec::new(),
                });
            }
        }
        transport.exchange(&mut halos)?;
        for h in halos.iter().filter(|h| !h.recv.is_empty()) {
            let p = (parts.iter_mut().find(|p| p.extent.id == h.block)).expect("a local block");
            p.append(a, &h.recv);
        }
    }
    Ok(parts
        .into_iter()
        .map(|p| Snapshot {
            points: piece_points(d, &p.extent),
            vars: p.vars,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_core::Layout;
    use ferroflow_parallel::InProcess;

    /// A distinct value at every node and variable of the whole grid.
    fn value(var: usize, ijk: [usize; 3]) -> f64 {
        (var * 1_000_000 + ijk[0] + 1000 * ijk[1] + 100_000 * ijk[2]) as f64
    }

    #[test]
    fn pieces_cover_the_grid_from_owned_nodes_only_sharing_one_layer() {
        for (dim, n, blocks) in [
            (2, [13, 11, 1], [2, 2, 1]),
            (2, [13, 11, 1], [3, 1, 1]),
            (3, [9, 10, 11], [2, 2, 2]),
            (3, [9, 10, 11], [1, 3, 2]),
        ] {
            // Fewer nodes per block than a run allows: the pieces' arithmetic at its edges.
            let d = Decomposition {
                dim,
                n,
                blocks,
                starts: [0, 1, 2].map(|a| match a < dim {
                    true => Decomposition::even(n[a], blocks[a]),
                    false => vec![0, 1],
                }),
            };
            let layout = Layout::new(dim, n);
            let mut whole = Fields::<f64>::zeros(layout, 2);
            for (var, a) in whole.vars.iter_mut().enumerate() {
                layout.for_each_node(|i, j, k, o| a[o] = value(var, [i, j, k]));
            }
            let local: Vec<(BlockExtent, Fields<f64>)> = d
                .extents()
                .into_iter()
                .map(|e| {
                    // Only own nodes are trusted: every other value (halos, their edges and
                    // corners, ghosts) is poisoned.
                    let mut f = d.cut(&whole, &e);
                    let (first, count) = owned(&e);
                    let l = f.layout;
                    let mut own = vec![false; l.len];
                    l.for_each_node(|i, j, k, o| {
                        own[o] = (0..3).all(|a| {
                            let x = [i, j, k][a];
                            x >= first[a] && x < first[a] + count[a]
                        });
                    });
                    for a in f.vars.iter_mut() {
                        for (o, x) in a.iter_mut().enumerate() {
                            if !own[o] {
                                *x = f64::NAN;
                            }
                        }
                    }
                    (e, f)
                })
                .collect();
            let pieces = pieces(&d, local, &mut InProcess).unwrap();
            let mut seen = vec![0usize; layout.nodes()];
            for (p, e) in pieces.iter().zip(d.extents()) {
                assert_eq!(p.points, piece_points(&d, &e));
                let Points::Grid { n: pn, offset, .. } = p.points;
                for (o, ijk) in nodes(pn).enumerate() {
                    let g = [0, 1, 2].map(|a| offset[a] + ijk[a]);
                    for var in 0..2 {
                        assert_eq!(p.vars[var][o], value(var, g), "{dim}D {blocks:?} {g:?}");
                    }
                    seen[at(n, g)] += 1;
                }
            }
            // Every node is in a piece; a node is in several only on the layers pieces share.
            assert!(
                seen.iter().all(|&s| s >= 1),
                "{dim}D {blocks:?}: a node is missing"
            );
            let shared: usize = seen.iter().map(|s| s - 1).sum();
            assert!(shared > 0);
            let cells = |m: [usize; 3]| (0..dim).map(|a| m[a] - 1).product::<usize>();
            let piece_cells: usize = pieces
                .iter()
                .map(|p| match p.points {
                    Points::Grid { n, .. } => cells(n),
                })
                .sum();
            // The pieces' cells tile the grid's exactly: no gap, no overlap.
            assert_eq!(piece_cells, cells(n), "{dim}D {blocks:?}");
        }
    }
}
