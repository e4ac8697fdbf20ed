//! [`Mesh`]: node coordinates, elements of mixed kinds in compressed rows ([`Elements`]),
//! boundary faces grouped in named patches; [`MeshError`], what readers and checks report.
use crate::element::Kind;
use std::collections::BTreeMap;
use std::fmt;

/// A node's number; `u32` halves the connectivity's memory (4 billion nodes at most).
pub type NodeId = u32;

/// Elements of mixed kinds in compressed rows: element `e` is `kinds[e]` on the nodes
/// `nodes[offsets[e]..offsets[e + 1]]`, in its kind's (VTK's) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elements {
    kinds: Vec<Kind>,
    offsets: Vec<usize>,
    nodes: Vec<NodeId>,
}

impl Default for Elements {
    fn default() -> Elements {
        Elements {
            kinds: Vec::new(),
            offsets: vec![0],
            nodes: Vec::new(),
        }
    }
}

impl Elements {
    /// No elements, with room for `elements` elements of `nodes` nodes in all.
    pub fn with_capacity(elements: usize, nodes: usize) -> Elements {
        let mut offsets = Vec::with_capacity(elements + 1);
        offsets.push(0);
        Elements {
            kinds: Vec::with_capacity(elements),
            offsets,
            nodes: Vec::with_capacity(nodes),
        }
    }

    /// Appends an element; `nodes` must hold `kind.nodes()` numbers.
    pub fn push(&mut self, kind: Kind, nodes: &[NodeId]) {
        assert_eq!(
            nodes.len(),
            kind.nodes(),
            "{} nodes of a {}",
            nodes.len(),
            kind.name()
        );
        self.kinds.push(kind);
        self.nodes.extend_from_slice(nodes);
        self.offsets.push(self.nodes.len());
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Kind of element `e`.
    pub fn kind(&self, e: usize) -> Kind {
        self.kinds[e]
    }

    /// Nodes of element `e`.
    pub fn nodes(&self, e: usize) -> &[NodeId] {
        &self.nodes[self.offsets[e]..self.offsets[e + 1]]
    }

    /// Nodes of element `e`, writable (renumbering).
    pub fn nodes_mut(&mut self, e: usize) -> &mut [NodeId] {
        &mut self.nodes[self.offsets[e]..self.offsets[e + 1]]
    }

    /// Every element's kind and nodes, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (Kind, &[NodeId])> + '_ {
        (0..self.len()).map(|e| (self.kinds[e], self.nodes(e)))
    }

    /// The connectivity of every element, one after the other.
    pub fn connectivity(&self) -> &[NodeId] {
        &self.nodes
    }

    /// Where each element's nodes start in [`Self::connectivity`] (one more entry than
    /// elements).
    pub fn offsets(&self) -> &[usize] {
        &self.offsets
    }

    /// Number of elements of each kind.
    pub fn counts(&self) -> BTreeMap<Kind, usize> {
        let mut counts = BTreeMap::new();
        for k in &self.kinds {
            *counts.entry(*k).or_insert(0) += 1;
        }
        counts
    }

    /// The elements in the order `order` (element i of the result is element `order[i]`).
    pub fn permuted(&self, order: &[usize]) -> Elements {
        let mut out = Elements::with_capacity(order.len(), self.nodes.len());
        for &e in order {
            out.push(self.kinds[e], self.nodes(e));
        }
        out
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.kinds.len() * std::mem::size_of::<Kind>()
            + self.offsets.len() * std::mem::size_of::<usize>()
            + self.nodes.len() * std::mem::size_of::<NodeId>()
    }
}

/// An unstructured mesh of dimension `dim` (2 or 3): its cells are of that dimension, its
/// boundary faces one lower, each in a named patch.
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// 2 or 3.
    pub dim: usize,
    /// Node coordinates (z = 0 in 2D).
    pub nodes: Vec<[f64; 3]>,
    /// The cells.
    pub cells: Elements,
    /// The boundary faces that a file or generator names (a patch each).
    pub faces: Elements,
    /// Patch number of each boundary face.
    pub face_patch: Vec<u32>,
    /// Patch names (Gmsh physical groups, SU2 markers, a generator's sides).
    pub patches: Vec<String>,
}

impl Mesh {
    /// A mesh from its parts, or an error naming the first element, face or patch that does
    /// not fit (a kind of the wrong dimension, a node or patch number out of range).
    pub fn new(
        dim: usize,
        nodes: Vec<[f64; 3]>,
        cells: Elements,
        faces: Elements,
        face_patch: Vec<u32>,
        patches: Vec<String>,
    ) -> Result<Mesh, MeshError> {
        let bad = |what: String| Err(MeshError::Invalid(what));
        if dim != 2 && dim != 3 {
            return bad(format!("a mesh of dimension {dim} (2 or 3)"));
        }
        let n = nodes.len();
        for (what, elements, want) in [("cell", &cells, dim), ("boundary face", &faces, dim - 1)] {
            for (e, (kind, ns)) in elements.iter().enumerate() {
                if kind.dim() != want {
                    return bad(format!(
                        "{what} {e} is a {} in a {dim}D mesh (its {what}s are {want}D)",
                        kind.name()
                    ));
                }
                if let Some(x) = ns.iter().find(|&&x| x as usize >= n) {
                    return bad(format!("{what} {e} refers to node {x}, of {n} nodes"));
                }
            }
        }
        if face_patch.len() != faces.len() {
            return bad(format!(
                "{} patch numbers for {} boundary faces",
                face_patch.len(),
                faces.len()
            ));
        }
        if let Some((f, p)) = face_patch
            .iter()
            .enumerate()
            .find(|(_, &p)| p as usize >= patches.len())
        {
            return bad(format!(
                "boundary face {f} is in patch {p}, of {} patches",
                patches.len()
            ));
        }
        Ok(Mesh {
            dim,
            nodes,
            cells,
            faces,
            face_patch,
            patches,
        })
    }

    /// Bytes held by the mesh itself (nothing derived).
    pub fn bytes(&self) -> usize {
        self.nodes.len() * 24
            + self.cells.bytes()
            + self.faces.bytes()
            + self.face_patch.len() * 4
            + self.patches.iter().map(String::len).sum::<usize>()
    }

    /// Renumbers the nodes: node `i` becomes node `new[i]` (a permutation).
    pub fn renumber_nodes(&mut self, new: &[NodeId]) {
        assert_eq!(new.len(), self.nodes.len(), "one new number per node");
        let mut nodes = vec![[0.0; 3]; self.nodes.len()];
        for (i, x) in self.nodes.iter().enumerate() {
            nodes[new[i] as usize] = *x;
        }
        self.nodes = nodes;
        for elements in [&mut self.cells, &mut self.faces] {
            for x in elements.nodes.iter_mut() {
                *x = new[*x as usize];
            }
        }
    }

    /// Reorders the cells: cell i becomes cell `order[i]` of the old numbering.
    pub fn reorder_cells(&mut self, order: &[usize]) {
        assert_eq!(order.len(), self.cells.len(), "one entry per cell");
        self.cells = self.cells.permuted(order);
    }
}

/// Where in a file a reader found a problem.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// A line (from 1) of a text file or section.
    Line(usize),
    /// A byte offset (from 0) of a binary section.
    Byte(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Byte(b) => write!(f, "byte {b}"),
        }
    }
}

/// What reading or checking a mesh reports.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The file cannot be opened or read.
    #[error("cannot read {file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not what its format says it must be.
    #[error("{file}, {at}: {what}")]
    Format {
        /// The file.
        file: String,
        /// Where.
        at: Location,
        /// What is wrong.
        what: String,
    },
    /// The mesh is not one a solver can use (names the element, face or node).
    #[error("{0}")]
    Invalid(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_keep_kinds_and_nodes_in_rows() {
        let mut e = Elements::default();
        e.push(Kind::Tet4, &[0, 1, 2, 3]);
        e.push(Kind::Pyramid5, &[0, 1, 2, 3, 4]);
        assert_eq!(e.len(), 2);
        assert_eq!(e.nodes(1), &[0, 1, 2, 3, 4]);
        assert_eq!(e.offsets(), &[0, 4, 9]);
        assert_eq!(e.counts()[&Kind::Pyramid5], 1);
        assert_eq!(e.permuted(&[1, 0]).nodes(0), &[0, 1, 2, 3, 4]);
    }

    #[test]
    fn a_mesh_names_what_does_not_fit() {
        let nodes = vec![[0.0; 3]; 4];
        let mut cells = Elements::default();
        cells.push(Kind::Tet4, &[0, 1, 2, 4]);
        let e = Mesh::new(3, nodes.clone(), cells, Elements::default(), vec![], vec![]);
        assert_eq!(
            e.unwrap_err().to_string(),
            "cell 0 refers to node 4, of 4 nodes"
        );
        let mut tris = Elements::default();
        tris.push(Kind::Tri3, &[0, 1, 2]);
        let e = Mesh::new(
            3,
            nodes.clone(),
            tris.clone(),
            Elements::default(),
            vec![],
            vec![],
        );
        assert!(e
            .unwrap_err()
            .to_string()
            .contains("cell 0 is a triangle in a 3D mesh"));
        let e = Mesh::new(2, nodes, tris, Elements::default(), vec![0], vec![]);
        assert!(e.unwrap_err().to_string().contains("1 patch numbers for 0"));
    }
}
