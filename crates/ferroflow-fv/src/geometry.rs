//! What the face and cell loops read, in flat arrays built once from
//! `ferroflow_mesh::topology`: each face's two sides, unit normal, area and centroid; each
//! cell's volume, centroid and faces. A boundary face's second side is a ghost cell, the
//! mirror image of its cell's centroid in the face's plane; ghosts are numbered after the
//! cells, so that one index reaches either.
use crate::gas::{dot, Vec3};
use crate::lanes::Lane;
use ferroflow_mesh::topology::{self, NONE};
use ferroflow_mesh::{Mesh, MeshError};
use std::collections::HashMap;

/// Faces and cells of a mesh as the solver reads them.
#[derive(Debug, Clone)]
pub struct Geometry {
    /// Number of cells.
    pub cells: usize,
    /// Number of internal faces; they come first, the boundary faces after them.
    pub internal: usize,
    /// First side of each face (a cell); the normal points away from it.
    pub left: Vec<u32>,
    /// Second side of each face: a cell, or for boundary face `internal + b` the ghost
    /// `cells + b`.
    pub right: Vec<u32>,
    /// Unit normal of each face, from `left` to `right`.
    pub normal: Vec<Vec3>,
    /// Area of each face.
    pub area: Vec<f64>,
    /// Centroid of each face.
    pub face_centroid: Vec<Vec3>,
    /// Volume of each cell.
    pub volume: Vec<f64>,
    /// Centroid of each cell, then of each ghost.
    pub centroid: Vec<Vec3>,
    /// Patch (in `Mesh::patches`) of each boundary face.
    pub patch: Vec<u32>,
    /// Where each cell's faces start in `cell_faces` (one more entry than cells).
    pub cell_offsets: Vec<usize>,
    /// The faces of each cell in ascending order: every gather runs in this fixed order.
    pub cell_faces: Vec<u32>,
}

impl Geometry {
    /// The geometry of `mesh` (3D). Errors: a mesh that `topology::faces` rejects, a 2D
    /// mesh, a boundary face in no patch.
    pub fn new(mesh: &Mesh) -> Result<Geometry, MeshError> {
        if mesh.dim != 3 {
            return Err(MeshError::Invalid(format!(
                "the finite-volume solver takes 3D meshes, not {}D (extrude a 2D one)",
                mesh.dim
            )));
        }
        let faces = topology::faces(mesh)?;
        let geometry = topology::geometry(mesh, &faces);
        let key = |nodes: &[u32]| {
            let mut k = [NONE; 4];
            k[..nodes.len()].copy_from_slice(nodes);
            k.sort_unstable();
            k
        };
        let named: HashMap<[u32; 4], u32> = (0..mesh.faces.len())
            .map(|f| (key(mesh.faces.nodes(f)), mesh.face_patch[f]))
            .collect();
        let cells = mesh.cells.len();
        let count = faces.cells.len();
        let mut g = Geometry {
            cells,
            internal: faces.internal,
            left: Vec::with_capacity(count),
            right: Vec::with_capacity(count),
            normal: Vec::with_capacity(count),
            area: Vec::with_capacity(count),
            face_centroid: geometry.face_centroids,
            volume: geometry.volumes,
            centroid: geometry.cell_centroids,
            patch: Vec::with_capacity(count - faces.internal),
            cell_offsets: vec![0; cells + 1],
            cell_faces: vec![0; 2 * faces.internal + (count - faces.internal)],
        };
        for (f, &[a, b]) in faces.cells.iter().enumerate() {
            let s = geometry.areas[f];
            let area = dot(s, s).sqrt();
            g.left.push(a);
            g.area.push(area);
            g.normal.push(s.map(|x| x / area));
            if b == NONE {
                let p = named.get(&key(faces.nodes.nodes(f))).ok_or_else(|| {
                    MeshError::Invalid(format!(
                        "boundary face {:?} (of cell {a}) is in no patch",
                        faces.nodes.nodes(f)
                    ))
                })?;
                g.patch.push(*p);
                g.right.push((cells + f - faces.internal) as u32);
                let (xc, n) = (g.centroid[a as usize], g.normal[f]);
                let h = dot(sub(g.face_centroid[f], xc), n);
                g.centroid
                    .push(std::array::from_fn(|k| xc[k] + 2.0 * h * n[k]));
            } else {
                g.right.push(b);
            }
        }
        for f in 0..count {
            g.cell_offsets[g.left[f] as usize + 1] += 1;
            if f < faces.internal {
                g.cell_offsets[g.right[f] as usize + 1] += 1;
            }
        }
        for c in 0..cells {
            g.cell_offsets[c + 1] += g.cell_offsets[c];
        }
        let mut next = g.cell_offsets.clone();
        for f in 0..count {
            for c in [g.left[f], g.right[f]] {
                if (c as usize) < cells {
                    g.cell_faces[next[c as usize]] = f as u32;
                    next[c as usize] += 1;
                }
            }
        }
        Ok(g)
    }

    /// Number of faces.
    pub fn faces(&self) -> usize {
        self.left.len()
    }

    /// The faces of cell `c`, ascending.
    pub fn faces_of(&self, c: usize) -> &[u32] {
        &self.cell_faces[self.cell_offsets[c]..self.cell_offsets[c + 1]]
    }

    /// The other side of face `f` seen from cell `c` (a cell or a ghost), and +1 where the
    /// face's normal points out of `c`, −1 where it points in.
    #[inline]
    pub fn across(&self, f: usize, c: usize) -> (usize, f64) {
        if self.left[f] as usize == c {
            (self.right[f] as usize, 1.0)
        } else {
            (self.left[f] as usize, -1.0)
        }
    }
}

/// a − b.
#[inline]
pub fn sub<T: Lane>(a: [T; 3], b: [T; 3]) -> [T; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use ferroflow_mesh::element::Kind;
    use ferroflow_mesh::generate::{box_mesh, jitter, BoxCells};
    use ferroflow_mesh::mesh::Elements;

    /// The unit cube in 3³ hexahedra of which one column is split into prisms, an inner
    /// hexahedron into six pyramids, and a hexahedron on the x = 1 side into five pyramids
    /// and the two tetrahedra of its boundary face; interior nodes jittered; every boundary
    /// face in the patch "boundary".
    pub(crate) fn mixed_mesh() -> Mesh {
        let base = box_mesh(BoxCells::Hex, [3, 3, 3], [1.0; 3]).unwrap();
        let mut nodes = base.nodes.clone();
        let mut cells = Elements::default();
        for (c, (_, h)) in base.cells.iter().enumerate() {
            let (i, j, k) = (c % 3, (c / 3) % 3, c / 9);
            if (i, j) == (0, 0) {
                cells.push(Kind::Prism6, &[h[0], h[2], h[1], h[4], h[6], h[5]]);
                cells.push(Kind::Prism6, &[h[0], h[3], h[2], h[4], h[7], h[6]]);
            } else if (i, j, k) == (1, 1, 1) || (i, j, k) == (2, 1, 1) {
                let x: Vec<Vec3> = h.iter().map(|&n| base.nodes[n as usize]).collect();
                let (_, centre, _) = topology::cell_geometry(Kind::Hex8, &x);
                let apex = nodes.len() as u32;
                nodes.push(centre);
                for face in Kind::Hex8.faces() {
                    // The hexahedron's faces are listed outward; a pyramid's base is
                    // counter-clockwise seen from its apex, inside.
                    let b: Vec<u32> = face.iter().rev().map(|&l| h[l]).collect();
                    let on_side = b.iter().all(|&n| base.nodes[n as usize][0] == 1.0);
                    if on_side {
                        cells.push(Kind::Tet4, &[b[0], b[1], b[2], apex]);
                        cells.push(Kind::Tet4, &[b[0], b[2], b[3], apex]);
                    } else {
                        cells.push(Kind::Pyramid5, &[b[0], b[1], b[2], b[3], apex]);
                    }
                }
            } else {
                cells.push(Kind::Hex8, h);
            }
        }
        let bare = Mesh::new(
            3,
            nodes.clone(),
            cells.clone(),
            Elements::default(),
            vec![],
            vec![],
        )
        .unwrap();
        let faces = topology::faces(&bare).unwrap();
        let mut boundary = Elements::default();
        for f in faces.internal..faces.cells.len() {
            boundary.push(faces.nodes.kind(f), faces.nodes.nodes(f));
        }
        let patch = vec![0; boundary.len()];
        let mut mesh =
            Mesh::new(3, nodes, cells, boundary, patch, vec!["boundary".into()]).unwrap();
        jitter(&mut mesh, 0.2, 3).unwrap();
        mesh
    }

    #[test]
    fn cells_are_closed_and_fill_the_cube() {
        let mesh = mixed_mesh();
        let counts = mesh.cells.counts();
        assert_eq!(counts.len(), 4, "{counts:?}");
        let g = Geometry::new(&mesh).unwrap();
        assert!((g.volume.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        for c in 0..g.cells {
            let mut closure = [0.0; 3];
            for &f in g.faces_of(c) {
                let (_, sign) = g.across(f as usize, c);
                for k in 0..3 {
                    closure[k] += sign * g.area[f as usize] * g.normal[f as usize][k];
                }
            }
            assert!(
                dot(closure, closure).sqrt() < 1e-15,
                "cell {c}: {closure:?}"
            );
        }
        // A ghost is as far beyond its face as its cell is before it.
        for f in g.internal..g.faces() {
            let (xl, xg) = (
                g.centroid[g.left[f] as usize],
                g.centroid[g.right[f] as usize],
            );
            let n = g.normal[f];
            let before = dot(sub(g.face_centroid[f], xl), n);
            let beyond = dot(sub(xg, g.face_centroid[f]), n);
            assert!((before - beyond).abs() < 1e-15 && before > 0.0);
        }
    }
}
