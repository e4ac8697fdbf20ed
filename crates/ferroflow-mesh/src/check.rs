//! The checks a mesh passes before a solver uses it ([`check`]), each error naming the cell,
//! face or node, and the quality figures `ferroflow mesh info` prints ([`Report`]).
use crate::mesh::{Mesh, MeshError, NodeId};
use crate::topology::{self, cell_geometry, face_geometry, norm, points, sub, Faces};
use std::collections::HashMap;

/// What a mesh that passed the checks measures.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// Total volume (area in 2D).
    pub volume: f64,
    /// Smallest cell volume.
    pub min_volume: f64,
    /// Largest ratio of a cell's longest edge to its shortest.
    pub max_aspect: f64,
    /// Internal and boundary faces.
    pub faces: [usize; 2],
    /// Boundary faces in each patch (the mesh's patch order).
    pub patch_faces: Vec<usize>,
    /// Bandwidth of the node graph as numbered.
    pub bandwidth: usize,
}

/// Relative size under which a cell's face area vectors count as adding to zero: round-off
/// of the sums, far below any real gap.
const CLOSED: f64 = 1e-12;

/// Checks `mesh` and measures it. Errors: a node in no cell, a cell of zero or negative
/// volume (nodes in the wrong order, an inverted cell), a cell whose faces do not close, a
/// face more than two cells share or two cells list the same way round (from
/// [`topology::faces`]), a boundary that is not watertight (an edge of the boundary surface
/// not on exactly two boundary faces; in 2D a boundary node not on two boundary edges), a
/// boundary face in no patch, and a patch face that is not on the boundary.
pub fn check(mesh: &Mesh) -> Result<Report, MeshError> {
    let invalid = |what: String| Err(MeshError::Invalid(what));
    let mut used = vec![false; mesh.nodes.len()];
    let (mut min_volume, mut max_aspect) = (f64::INFINITY, 0.0f64);
    // Compensated (Neumaier) sum: a million cells' volumes add to the domain's to round-off.
    let (mut volume, mut lost) = (0.0f64, 0.0f64);
    for (c, (kind, nodes)) in mesh.cells.iter().enumerate() {
        nodes.iter().for_each(|&n| used[n as usize] = true);
        let x = points(mesh, nodes);
        let (v, _, closure) = cell_geometry(kind, &x);
        let lengths: Vec<f64> = (kind.edges().iter())
            .map(|[a, b]| norm(sub(x[*b], x[*a])))
            .collect();
        let longest = lengths.iter().copied().fold(0.0, f64::max);
        let shortest = lengths.iter().copied().fold(f64::INFINITY, f64::min);
        if v.is_nan() || v <= 0.0 {
            return invalid(format!(
                "cell {c} (a {} on nodes {nodes:?}) has volume {v:e}: its nodes are in the \
                 wrong order, or it is inverted or flat",
                kind.name()
            ));
        }
        // The faces' total area vector against their total size, which is of order longest²
        // (longest in 2D).
        let size = longest.powi(kind.dim() as i32 - 1);
        if norm(closure) > CLOSED * size * kind.faces().len() as f64 {
            return invalid(format!(
                "cell {c} (a {} on nodes {nodes:?}) is not closed: its face area vectors add \
                 up to {closure:?}",
                kind.name()
            ));
        }
        let sum = volume + v;
        lost += if volume.abs() >= v.abs() {
            (volume - sum) + v
        } else {
            (v - sum) + volume
        };
        volume = sum;
        min_volume = f64::min(min_volume, v);
        max_aspect = max_aspect.max(longest / shortest);
    }
    if let Some(n) = used.iter().position(|u| !u) {
        return invalid(format!("node {n} belongs to no cell"));
    }
    let faces = topology::faces(mesh)?;
    watertight(mesh, &faces)?;
    let patch_faces = patches(mesh, &faces)?;
    Ok(Report {
        volume: volume + lost,
        min_volume,
        max_aspect,
        faces: [faces.internal, faces.cells.len() - faces.internal],
        patch_faces,
        bandwidth: topology::node_graph(mesh).bandwidth(None),
    })
}

/// Each edge of the boundary surface on exactly two boundary faces (in 2D each boundary node
/// on two boundary edges), and the boundary's area vectors adding up to zero.
fn watertight(mesh: &Mesh, faces: &Faces) -> Result<(), MeshError> {
    let mut count: HashMap<Vec<NodeId>, usize> = HashMap::new();
    for f in faces.internal..faces.cells.len() {
        let nodes = faces.nodes.nodes(f);
        let n = nodes.len();
        for i in 0..n {
            let mut edge = match n {
                2 => vec![nodes[i]],
                _ => vec![nodes[i], nodes[(i + 1) % n]],
            };
            edge.sort_unstable();
            *count.entry(edge).or_insert(0) += 1;
        }
    }
    let mut open: Vec<(&Vec<NodeId>, &usize)> = count.iter().filter(|(_, &c)| c != 2).collect();
    open.sort();
    if let Some((edge, c)) = open.first() {
        let what = if mesh.dim == 2 { "node" } else { "edge" };
        return Err(MeshError::Invalid(format!(
            "the boundary is not watertight: boundary {what} {edge:?} is on {c} boundary \
             faces, not 2"
        )));
    }
    Ok(())
}

/// The number of boundary faces in each patch; errors for a boundary face in no patch and a
/// patch face that is not a boundary face.
fn patches(mesh: &Mesh, faces: &Faces) -> Result<Vec<usize>, MeshError> {
    let key = |nodes: &[NodeId]| {
        let mut k = nodes.to_vec();
        k.sort_unstable();
        k
    };
    let mut patch_of: HashMap<Vec<NodeId>, u32> = HashMap::new();
    for (f, (_, nodes)) in mesh.faces.iter().enumerate() {
        patch_of.insert(key(nodes), mesh.face_patch[f]);
    }
    let mut counts = vec![0; mesh.patches.len()];
    for f in faces.internal..faces.cells.len() {
        let nodes = faces.nodes.nodes(f);
        match patch_of.remove(&key(nodes)) {
            Some(p) => counts[p as usize] += 1,
            None => {
                let (area, centre) = face_geometry(&points(mesh, nodes));
                return Err(MeshError::Invalid(format!(
                    "the boundary face of cell {} on nodes {nodes:?} (centre {centre:?}, area \
                     {:e}) is in no patch",
                    faces.cells[f][0],
                    norm(area)
                )));
            }
        }
    }
    if let Some((nodes, p)) = patch_of.iter().min() {
        return Err(MeshError::Invalid(format!(
            "a face of patch \"{}\" on nodes {nodes:?} is not a boundary face of the cells \
             (it is inside the mesh, or on no cell)",
            mesh.patches[*p as usize]
        )));
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::Kind;
    use crate::generate::{box_mesh, BoxCells};
    use crate::mesh::Elements;

    fn tets(nodes: Vec<[f64; 3]>, cells: &[[NodeId; 4]]) -> Mesh {
        let mut e = Elements::default();
        cells.iter().for_each(|c| e.push(Kind::Tet4, c));
        Mesh::new(3, nodes, e, Elements::default(), vec![], vec![]).unwrap()
    }

    fn error(mesh: &Mesh) -> String {
        check(mesh).unwrap_err().to_string()
    }

    const CORNERS: [[f64; 3]; 5] = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ];

    #[test]
    fn errors_name_the_cell_face_or_node() {
        let e = error(&tets(CORNERS.to_vec(), &[[0, 2, 1, 3]]));
        assert!(
            e.starts_with("cell 0 (a tetrahedron on nodes [0, 2, 1, 3]) has volume -1"),
            "{e}"
        );
        let e = error(&tets(CORNERS.to_vec(), &[[0, 1, 2, 3]]));
        assert_eq!(e, "node 4 belongs to no cell");
        // Two tetrahedra on the same side of their shared face overlap.
        let mut nodes = CORNERS.to_vec();
        nodes[4] = [0.1, 0.1, 0.5];
        let e = error(&tets(nodes, &[[0, 1, 2, 3], [0, 1, 2, 4]]));
        assert!(
            e.contains("listed the same way round by cells 0 and 1"),
            "{e}"
        );
        let mut nodes = CORNERS.to_vec();
        nodes.push([0.1, 0.1, 0.5]);
        let e = error(&tets(nodes, &[[0, 1, 2, 3], [0, 2, 1, 4], [0, 1, 2, 5]]));
        assert!(e.contains("shared by 3 cells [0, 1, 2]"), "{e}");
        // Two tetrahedra touching along an edge only.
        let mut nodes = CORNERS[..4].to_vec();
        nodes.extend([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]]);
        let e = error(&tets(nodes, &[[0, 1, 2, 3], [2, 1, 4, 5]]));
        assert!(
            e.contains("not watertight: boundary edge [1, 2] is on 4"),
            "{e}"
        );
    }

    #[test]
    fn every_boundary_face_needs_a_patch_and_every_patch_face_the_boundary() {
        let mut mesh = box_mesh(BoxCells::Hex, [2, 1, 1], [2.0, 1.0, 1.0]).unwrap();
        let ok = mesh.clone();
        mesh.faces = mesh
            .faces
            .permuted(&(1..mesh.faces.len()).collect::<Vec<_>>());
        mesh.face_patch.remove(0);
        assert!(error(&mesh).contains("is in no patch"), "{}", error(&mesh));
        let mut inside = ok.clone();
        inside.faces.push(Kind::Quad4, &[1, 4, 10, 7]);
        inside.face_patch.push(0);
        let e = error(&inside);
        assert!(
            e.contains("a face of patch \"xmin\" on nodes [1, 4, 7, 10] is not a boundary face"),
            "{e}"
        );
        let r = check(&ok).unwrap();
        assert_eq!(r.faces, [1, 10]);
        assert_eq!(r.max_aspect, 1.0);
    }
}
