//! Partitioning the cells into parts for distributed runs: recursive coordinate bisection of
//! the cell centroids ([`bisect`]: parts compact and balanced to one cell, deterministic, no
//! graph library; it does not minimise the faces cut as a graph partitioner would), and the
//! ghost cells each part needs across its faces ([`ghosts`]).
use crate::topology::{Faces, NONE};

/// Part of each cell: `parts` parts of sizes within one cell of each other, each cut across
/// the longest extent of its cells' centroids (ties by cell number: deterministic).
pub fn bisect(centroids: &[[f64; 3]], parts: usize) -> Vec<u32> {
    let mut part = vec![0u32; centroids.len()];
    let mut cells: Vec<u32> = (0..centroids.len() as u32).collect();
    split(centroids, &mut cells, 0, parts.max(1), &mut part);
    part
}

fn split(centroids: &[[f64; 3]], cells: &mut [u32], first: u32, parts: usize, part: &mut [u32]) {
    if parts == 1 || cells.is_empty() {
        cells.iter().for_each(|&c| part[c as usize] = first);
        return;
    }
    let extent = |a: usize| {
        let (lo, hi) = cells
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &c| {
                let x = centroids[c as usize][a];
                (l.min(x), h.max(x))
            });
        hi - lo
    };
    let axis = (0..3)
        .max_by(|&a, &b| extent(a).total_cmp(&extent(b)).then(b.cmp(&a)))
        .unwrap_or(0);
    let low = parts / 2;
    let at = cells.len() * low / parts;
    cells.select_nth_unstable_by(at.min(cells.len() - 1), |&a, &b| {
        centroids[a as usize][axis]
            .total_cmp(&centroids[b as usize][axis])
            .then(a.cmp(&b))
    });
    let (left, right) = cells.split_at_mut(at);
    split(centroids, left, first, low, part);
    split(centroids, right, first + low as u32, parts - low, part);
}

/// For each part, the cells of other parts that share a face with one of its cells (its
/// ghost layer for a face loop), sorted.
pub fn ghosts(faces: &Faces, part: &[u32], parts: usize) -> Vec<Vec<u32>> {
    let mut out = vec![Vec::new(); parts];
    for &[a, b] in &faces.cells[..faces.internal] {
        debug_assert!(b != NONE);
        let (pa, pb) = (part[a as usize], part[b as usize]);
        if pa != pb {
            out[pa as usize].push(b);
            out[pb as usize].push(a);
        }
    }
    for g in &mut out {
        g.sort_unstable();
        g.dedup();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{box_mesh, BoxCells};
    use crate::topology::{faces, geometry};

    #[test]
    fn parts_are_balanced_and_ghosts_are_their_face_neighbours() {
        let mesh = box_mesh(BoxCells::Hex, [8, 4, 2], [2.0, 1.0, 0.5]).unwrap();
        let f = faces(&mesh).unwrap();
        let g = geometry(&mesh, &f);
        for parts in [1, 2, 3, 4, 7] {
            let part = bisect(&g.cell_centroids, parts);
            let mut sizes = vec![0; parts];
            part.iter().for_each(|&p| sizes[p as usize] += 1);
            let (lo, hi) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(hi - lo <= 1, "{parts} parts: {sizes:?}");
            let ghosts = ghosts(&f, &part, parts);
            for (p, gs) in ghosts.iter().enumerate() {
                assert!(gs.iter().all(|&c| part[c as usize] != p as u32));
            }
        }
        // Two parts of an 8 x 4 x 2 box are cut across x: each sees a 4 x 2 layer.
        let part = bisect(&g.cell_centroids, 2);
        assert_eq!(
            ghosts(&f, &part, 2)
                .iter()
                .map(Vec::len)
                .collect::<Vec<_>>(),
            [8, 8]
        );
    }
}
