//! Greedy colourings for loops that scatter without atomics: faces coloured so that no two
//! of a colour share a cell ([`faces_by_cell`]), edges so that no two share a node
//! ([`edges_by_node`]). Each item takes the smallest colour none of its resources has yet,
//! in item order: deterministic.
use crate::topology::{Faces, Graph, NONE};

/// A colouring: `colour[i]` of each item, and the number of colours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Colouring {
    /// Colour of each item.
    pub colour: Vec<u32>,
    /// Number of colours.
    pub colours: usize,
}

impl Colouring {
    /// The items of each colour, in item order.
    pub fn groups(&self) -> Vec<Vec<u32>> {
        let mut groups = vec![Vec::new(); self.colours];
        for (i, &c) in self.colour.iter().enumerate() {
            groups[c as usize].push(i as u32);
        }
        groups
    }
}

/// Greedy colouring of `items` items, item i touching the resources `touches(i)` (of
/// `resources` in all).
pub fn greedy<I: IntoIterator<Item = u32>>(
    items: usize,
    resources: usize,
    touches: impl Fn(usize) -> I,
) -> Colouring {
    // Colours each resource has, as bits; rarely more than 64 colours are needed, past them
    // a list takes over.
    let mut used = vec![0u64; resources];
    let mut more: Vec<Vec<u32>> = Vec::new();
    let mut colour = Vec::with_capacity(items);
    let mut colours = 0;
    for i in 0..items {
        let rs: Vec<usize> = touches(i).into_iter().map(|r| r as usize).collect();
        let taken = rs.iter().fold(0u64, |m, &r| m | used[r]);
        let c = match (!taken).trailing_zeros() {
            64 => {
                if more.is_empty() {
                    more = vec![Vec::new(); resources];
                }
                (64..)
                    .find(|c| rs.iter().all(|&r| !more[r].contains(c)))
                    .unwrap_or(64)
            }
            c => c,
        };
        for &r in &rs {
            match c {
                0..64 => used[r] |= 1 << c,
                _ => more[r].push(c),
            }
        }
        colours = colours.max(c as usize + 1);
        colour.push(c);
    }
    Colouring { colour, colours }
}

/// Faces coloured so that no two faces of a colour share a cell.
pub fn faces_by_cell(faces: &Faces, cells: usize) -> Colouring {
    greedy(faces.cells.len(), cells, |f| {
        faces.cells[f].into_iter().filter(|&c| c != NONE)
    })
}

/// The node graph's edges (each once, `a < b`, in order) coloured so that no two edges of a
/// colour share a node.
pub fn edges_by_node(graph: &Graph) -> (Vec<[u32; 2]>, Colouring) {
    let edges: Vec<[u32; 2]> = (0..graph.len())
        .flat_map(|a| {
            (graph.neighbours(a).iter())
                .filter(move |&&b| b as usize > a)
                .map(move |&b| [a as u32, b])
        })
        .collect();
    let colouring = greedy(edges.len(), graph.len(), |e| edges[e]);
    (edges, colouring)
}

/// The first pair of items of one colour that share a resource, if any (a colouring's
/// check).
pub fn conflict<I: IntoIterator<Item = u32>>(
    colouring: &Colouring,
    resources: usize,
    touches: impl Fn(usize) -> I,
) -> Option<[usize; 2]> {
    let mut owner = vec![usize::MAX; resources];
    for group in colouring.groups() {
        for &i in &group {
            for r in touches(i as usize) {
                let o = &mut owner[r as usize];
                if *o != usize::MAX {
                    return Some([*o, i as usize]);
                }
                *o = i as usize;
            }
        }
        for &i in &group {
            for r in touches(i as usize) {
                owner[r as usize] = usize::MAX;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{box_mesh, shuffle, BoxCells};
    use crate::topology::{faces, node_graph};

    #[test]
    fn colourings_have_no_conflicts_and_few_colours() {
        let mut mesh = box_mesh(BoxCells::Tet6, [6, 5, 4], [1.0; 3]).unwrap();
        shuffle(&mut mesh, 5);
        let f = faces(&mesh).unwrap();
        let by_cell = faces_by_cell(&f, mesh.cells.len());
        let touches = |i: usize| f.cells[i].into_iter().filter(|&c| c != NONE);
        assert_eq!(conflict(&by_cell, mesh.cells.len(), touches), None);
        // A tetrahedron has 4 faces: at least 4 colours, greedy a few more.
        assert!((4..=12).contains(&by_cell.colours), "{}", by_cell.colours);
        let graph = node_graph(&mesh);
        let (edges, by_node) = edges_by_node(&graph);
        assert_eq!(edges.len(), graph.edges());
        assert_eq!(conflict(&by_node, graph.len(), |e| edges[e]), None);
        let most = (0..graph.len())
            .map(|v| graph.neighbours(v).len())
            .max()
            .unwrap();
        assert!(by_node.colours >= most && by_node.colours <= 2 * most);
        // A colouring with a clash is caught.
        let mut bad = by_cell.clone();
        let [a, _] = f.cells[0];
        let other = (1..f.cells.len())
            .find(|&g| f.cells[g].contains(&a))
            .unwrap();
        bad.colour[other] = bad.colour[0];
        assert!(conflict(&bad, mesh.cells.len(), touches).is_some());
    }
}
