//! Renumbering for locality: reverse Cuthill–McKee ([`rcm`]) on any graph (the node graph for
//! the edge-based solver, the cells' graph for the cell-centred one), applied to a mesh's
//! nodes ([`renumber_nodes`]) or cells ([`renumber_cells`]); faces come out of
//! `topology::faces` sorted by their cell pair, so renumbering the cells sorts them too.
use crate::mesh::{Mesh, MeshError, NodeId};
use crate::topology::{self, Graph};
use std::collections::VecDeque;

/// The reverse Cuthill–McKee numbering of `graph`: `new[v]` is vertex v's new number. Each
/// connected part is numbered from a pseudo-peripheral vertex (the far end of repeated
/// breadth-first searches from a vertex of least degree), neighbours in increasing degree
/// (ties by number: deterministic), and the whole order reversed.
pub fn rcm(graph: &Graph) -> Vec<u32> {
    let n = graph.len();
    let degree = |v: usize| graph.neighbours(v).len();
    let mut order = Vec::with_capacity(n);
    let mut placed = vec![false; n];
    let mut by_degree: Vec<usize> = (0..n).collect();
    by_degree.sort_by_key(|&v| (degree(v), v));
    let mut queue = VecDeque::new();
    let mut scratch = vec![usize::MAX; n];
    for &seed in &by_degree {
        if placed[seed] {
            continue;
        }
        let start = peripheral(graph, seed, &mut scratch);
        placed[start] = true;
        queue.push_back(start);
        while let Some(v) = queue.pop_front() {
            order.push(v);
            let mut next: Vec<usize> = (graph.neighbours(v).iter())
                .map(|&w| w as usize)
                .filter(|&w| !placed[w])
                .collect();
            next.sort_by_key(|&w| (degree(w), w));
            for w in next {
                placed[w] = true;
                queue.push_back(w);
            }
        }
    }
    let mut new = vec![0; n];
    for (i, &v) in order.iter().rev().enumerate() {
        new[v] = i as u32;
    }
    new
}

/// A vertex far from `seed` in its connected part: breadth-first searches, each from the
/// least-degree vertex of the last level of the one before, while the depth grows.
fn peripheral(graph: &Graph, seed: usize, level: &mut [usize]) -> usize {
    let mut start = seed;
    let mut depth = 0;
    loop {
        let (far, d, visited) = farthest(graph, start, level);
        for &v in &visited {
            level[v] = usize::MAX;
        }
        if d <= depth {
            return start;
        }
        depth = d;
        start = far;
    }
}

/// The least-degree vertex of the last level of a breadth-first search from `start`, the
/// search's depth, and the vertices it visited (whose `level` entries it set).
fn farthest(graph: &Graph, start: usize, level: &mut [usize]) -> (usize, usize, Vec<usize>) {
    let mut visited = vec![start];
    level[start] = 0;
    let mut i = 0;
    while i < visited.len() {
        let v = visited[i];
        for &w in graph.neighbours(v) {
            let w = w as usize;
            if level[w] == usize::MAX {
                level[w] = level[v] + 1;
                visited.push(w);
            }
        }
        i += 1;
    }
    let depth = level[visited[visited.len() - 1]];
    let far = (visited.iter().copied())
        .filter(|&v| level[v] == depth)
        .min_by_key(|&v| (graph.neighbours(v).len(), v))
        .unwrap_or(start);
    (far, depth, visited)
}

/// Renumbers `mesh`'s nodes by [`rcm`] on its node graph; returns the node graph's
/// bandwidth before and after.
pub fn renumber_nodes(mesh: &mut Mesh) -> [usize; 2] {
    let graph = topology::node_graph(mesh);
    let new = rcm(&graph);
    let bandwidths = [graph.bandwidth(None), graph.bandwidth(Some(&new))];
    let new: Vec<NodeId> = new.into_iter().collect();
    mesh.renumber_nodes(&new);
    bandwidths
}

/// Reorders `mesh`'s cells by [`rcm`] on the cells' graph; returns that graph's bandwidth
/// before and after.
pub fn renumber_cells(mesh: &mut Mesh) -> Result<[usize; 2], MeshError> {
    let (order, bandwidths) = cell_order(mesh)?;
    mesh.reorder_cells(&order);
    Ok(bandwidths)
}

/// The order [`renumber_cells`] puts `mesh`'s cells in (new cell i is old cell `order[i]`,
/// as [`Mesh::reorder_cells`] takes it), without reordering them; and the cell graph's
/// bandwidth before and after.
pub fn cell_order(mesh: &Mesh) -> Result<(Vec<usize>, [usize; 2]), MeshError> {
    let faces = topology::faces(mesh)?;
    let graph = topology::cell_graph(mesh.cells.len(), &faces);
    let new = rcm(&graph);
    let bandwidths = [graph.bandwidth(None), graph.bandwidth(Some(&new))];
    let mut order = vec![0; new.len()];
    for (old, &n) in new.iter().enumerate() {
        order[n as usize] = old;
    }
    Ok((order, bandwidths))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::generate::{box_mesh, shuffle, BoxCells};

    #[test]
    fn rcm_is_a_permutation_that_narrows_a_shuffled_box() {
        let mut mesh = box_mesh(BoxCells::Tet6, [12, 10, 8], [1.0; 3]).unwrap();
        shuffle(&mut mesh, 3);
        let [before, after] = renumber_nodes(&mut mesh);
        assert!(after * 10 <= before, "nodes: {before} -> {after}");
        let [before, after] = renumber_cells(&mut mesh).unwrap();
        assert!(after * 10 <= before, "cells: {before} -> {after}");
        check(&mesh).unwrap();
        let graph = topology::node_graph(&mesh);
        let mut seen = rcm(&graph);
        seen.sort_unstable();
        assert_eq!(seen, (0..graph.len() as u32).collect::<Vec<_>>());
    }

    #[test]
    fn a_path_is_numbered_end_to_end() {
        // 0 - 2 - 4 - 1 - 3 as a path: RCM numbers it along the path, bandwidth 1.
        let graph = Graph::from_edges(5, [[0, 2], [2, 4], [4, 1], [1, 3]].into_iter());
        assert_eq!(graph.bandwidth(None), 3);
        assert_eq!(graph.bandwidth(Some(&rcm(&graph))), 1);
        // Two parts are numbered one after the other.
        let graph = Graph::from_edges(4, [[0, 3], [1, 2]].into_iter());
        assert_eq!(graph.bandwidth(Some(&rcm(&graph))), 1);
    }

    /// A randomly numbered mesh of a million cells narrowed at least tenfold.
    #[test]
    #[ignore = "a million cells, seconds of work: run with --ignored (CI does)"]
    fn rcm_narrows_a_shuffled_million_cell_mesh_tenfold() {
        let mut mesh = box_mesh(BoxCells::Hex, [100; 3], [1.0; 3]).unwrap();
        shuffle(&mut mesh, 1);
        let nodes = renumber_nodes(&mut mesh);
        let cells = renumber_cells(&mut mesh).unwrap();
        println!("bandwidth: nodes {nodes:?}, cells {cells:?}");
        for [before, after] in [nodes, cells] {
            assert!(after * 10 <= before, "{before} -> {after}");
        }
    }
}
