//! Element kinds and their node orders: VTK's for every kind (the `.vtu` files need no
//! reordering; readers convert what their format orders otherwise). A volume element's local
//! faces are listed with their nodes counter-clockwise seen from outside (right-hand rule:
//! the normal points out of the element); a 2D element's faces are its edges, in the
//! element's counter-clockwise order, so that the outward normal of edge (a, b) is
//! (b − a) × z.

/// An element kind of first order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// Two nodes: a face of a 2D mesh.
    Line2,
    /// Three nodes, counter-clockwise.
    Tri3,
    /// Four nodes, counter-clockwise.
    Quad4,
    /// (0, 1, 2) counter-clockwise seen from 3.
    Tet4,
    /// Base (0, 1, 2, 3) counter-clockwise seen from the apex 4.
    Pyramid5,
    /// Triangles (0, 1, 2) and (3, 4, 5), 0–3, 1–4, 2–5 joined; (0, 1, 2) counter-clockwise
    /// seen from outside, i.e. from the side away from (3, 4, 5) (VTK's wedge).
    Prism6,
    /// Base (0, 1, 2, 3) counter-clockwise seen from the top (4, 5, 6, 7), i above i − 4.
    Hex8,
}

impl Kind {
    /// Every kind.
    pub const ALL: [Kind; 7] = [
        Kind::Line2,
        Kind::Tri3,
        Kind::Quad4,
        Kind::Tet4,
        Kind::Pyramid5,
        Kind::Prism6,
        Kind::Hex8,
    ];

    /// Number of nodes.
    pub const fn nodes(self) -> usize {
        match self {
            Kind::Line2 => 2,
            Kind::Tri3 => 3,
            Kind::Quad4 | Kind::Tet4 => 4,
            Kind::Pyramid5 => 5,
            Kind::Prism6 => 6,
            Kind::Hex8 => 8,
        }
    }

    /// Dimension: 1, 2 or 3.
    pub const fn dim(self) -> usize {
        match self {
            Kind::Line2 => 1,
            Kind::Tri3 | Kind::Quad4 => 2,
            _ => 3,
        }
    }

    /// VTK's cell type number.
    pub const fn vtk(self) -> u8 {
        match self {
            Kind::Line2 => 3,
            Kind::Tri3 => 5,
            Kind::Quad4 => 9,
            Kind::Tet4 => 10,
            Kind::Hex8 => 12,
            Kind::Prism6 => 13,
            Kind::Pyramid5 => 14,
        }
    }

    /// The kind of VTK cell type `t` (SU2 uses the same numbers).
    pub fn from_vtk(t: u64) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.vtk() as u64 == t)
    }

    /// Lower-case name, for messages and summaries.
    pub const fn name(self) -> &'static str {
        match self {
            Kind::Line2 => "line",
            Kind::Tri3 => "triangle",
            Kind::Quad4 => "quadrilateral",
            Kind::Tet4 => "tetrahedron",
            Kind::Pyramid5 => "pyramid",
            Kind::Prism6 => "prism",
            Kind::Hex8 => "hexahedron",
        }
    }

    /// The local faces, outward (see the module's comment), as local node numbers.
    pub const fn faces(self) -> &'static [&'static [usize]] {
        match self {
            Kind::Line2 => &[&[0], &[1]],
            Kind::Tri3 => &[&[0, 1], &[1, 2], &[2, 0]],
            Kind::Quad4 => &[&[0, 1], &[1, 2], &[2, 3], &[3, 0]],
            Kind::Tet4 => &[&[0, 2, 1], &[0, 1, 3], &[1, 2, 3], &[2, 0, 3]],
            Kind::Pyramid5 => &[
                &[0, 3, 2, 1],
                &[0, 1, 4],
                &[1, 2, 4],
                &[2, 3, 4],
                &[3, 0, 4],
            ],
            Kind::Prism6 => &[
                &[0, 1, 2],
                &[3, 5, 4],
                &[0, 3, 4, 1],
                &[1, 4, 5, 2],
                &[2, 5, 3, 0],
            ],
            Kind::Hex8 => &[
                &[0, 3, 2, 1],
                &[4, 5, 6, 7],
                &[0, 1, 5, 4],
                &[1, 2, 6, 5],
                &[2, 3, 7, 6],
                &[3, 0, 4, 7],
            ],
        }
    }

    /// The kind of a face of `n` nodes of a `dim`-dimensional element.
    pub const fn face_kind(dim: usize, n: usize) -> Kind {
        match (dim, n) {
            (2, _) => Kind::Line2,
            (_, 3) => Kind::Tri3,
            _ => Kind::Quad4,
        }
    }

    /// The local edges (pairs of local node numbers), each once.
    pub const fn edges(self) -> &'static [[usize; 2]] {
        match self {
            Kind::Line2 => &[[0, 1]],
            Kind::Tri3 => &[[0, 1], [1, 2], [2, 0]],
            Kind::Quad4 => &[[0, 1], [1, 2], [2, 3], [3, 0]],
            Kind::Tet4 => &[[0, 1], [1, 2], [2, 0], [0, 3], [1, 3], [2, 3]],
            Kind::Pyramid5 => &[
                [0, 1],
                [1, 2],
                [2, 3],
                [3, 0],
                [0, 4],
                [1, 4],
                [2, 4],
                [3, 4],
            ],
            Kind::Prism6 => &[
                [0, 1],
                [1, 2],
                [2, 0],
                [3, 4],
                [4, 5],
                [5, 3],
                [0, 3],
                [1, 4],
                [2, 5],
            ],
            Kind::Hex8 => &[
                [0, 1],
                [1, 2],
                [2, 3],
                [3, 0],
                [4, 5],
                [5, 6],
                [6, 7],
                [7, 4],
                [0, 4],
                [1, 5],
                [2, 6],
                [3, 7],
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faces_and_edges_use_every_node_and_every_edge_twice_on_faces() {
        for kind in Kind::ALL.into_iter().filter(|k| k.dim() == 3) {
            let mut count = std::collections::HashMap::new();
            for face in kind.faces() {
                for i in 0..face.len() {
                    let (a, b) = (face[i], face[(i + 1) % face.len()]);
                    *count.entry((a.min(b), a.max(b))).or_insert(0) += 1;
                    // Outward faces of a closed surface traverse each edge once each way.
                    let reverse = kind
                        .faces()
                        .iter()
                        .any(|f| (0..f.len()).any(|j| f[j] == b && f[(j + 1) % f.len()] == a));
                    assert!(reverse, "{kind:?}: edge {a}-{b} has no opposite");
                }
            }
            assert_eq!(count.len(), kind.edges().len(), "{kind:?}");
            assert!(count.values().all(|&c| c == 2), "{kind:?}");
            for [a, b] in kind.edges() {
                assert!(count.contains_key(&(*a.min(b), *a.max(b))), "{kind:?}");
            }
        }
        for kind in Kind::ALL {
            assert_eq!(Kind::from_vtk(kind.vtk() as u64), Some(kind));
        }
    }
}
