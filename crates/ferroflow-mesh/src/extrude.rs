//! One-layer extrusion ([`extrude`]): a 2D mesh becomes a 3D mesh one cell thick, so that a
//! 3D solver can run a 2D case.
use crate::element::Kind;
use crate::mesh::{Elements, Mesh, MeshError, NodeId};
use crate::topology;
use std::collections::HashMap;

/// `mesh` (2D: triangles and quadrilaterals at z = 0, lines on its boundary) extruded by
/// `thickness` along z into one layer of cells.
///
/// - Node i of n stays at (x, y, 0); node i + n is its copy at (x, y, `thickness`).
/// - Cell c becomes cell c: a prism from a triangle, a hexahedron from a quadrilateral, in
///   VTK's node order with positive volume. A clockwise cell (negative area) is taken in
///   reverse order, so that its extruded cell is positive too.
/// - Each boundary line becomes a quadrilateral in the same patch, oriented out of its cell
///   (a line between two cells, out of the lower-numbered one).
/// - Two patches follow the others: `front` holds every cell's face at z = 0 (normal −z),
///   `back` its face at z = `thickness` (normal +z), both in cell order.
///
/// Errors: a 3D mesh; a thickness that is not finite and positive; `front` or `back` naming a
/// patch already, or each other; a boundary line that is no cell's edge; more than 2³¹ nodes
/// (a [`NodeId`] must number twice as many).
pub fn extrude(mesh: &Mesh, thickness: f64, front: &str, back: &str) -> Result<Mesh, MeshError> {
    let bad = |what: String| Err(MeshError::Invalid(what));
    if mesh.dim != 2 {
        return bad(format!(
            "extrusion takes a 2D mesh, not a {}D one",
            mesh.dim
        ));
    }
    if !(thickness.is_finite() && thickness > 0.0) {
        return bad(format!(
            "extrusion thickness {thickness} (finite and positive)"
        ));
    }
    if let Some(name) = [front, back]
        .into_iter()
        .find(|name| mesh.patches.iter().any(|p| p == name))
    {
        return bad(format!("a patch named '{name}' exists already"));
    }
    if front == back {
        return bad(format!("front and back patches both named '{front}'"));
    }
    let n = mesh.nodes.len();
    if 2 * n > NodeId::MAX as usize + 1 {
        return bad(format!("{n} nodes are too many to extrude"));
    }
    let up = |x: NodeId| x + n as NodeId;
    let nodes: Vec<[f64; 3]> = [0.0, thickness]
        .into_iter()
        .flat_map(|z| mesh.nodes.iter().map(move |&[x, y, _]| [x, y, z]))
        .collect();

    let mut cells = Elements::with_capacity(mesh.cells.len(), 2 * mesh.cells.connectivity().len());
    // The sense in which the first cell's counter-clockwise boundary runs along each edge
    // (by its sorted nodes): a boundary line on it is oriented out of that cell.
    let mut edges = HashMap::new();
    let mut base = Vec::with_capacity(4);
    for (c, (kind, ns)) in mesh.cells.iter().enumerate() {
        base.clear();
        base.extend_from_slice(ns);
        if signed_measure(mesh, kind, ns) < 0.0 {
            base[1..].reverse();
        }
        for (i, &a) in base.iter().enumerate() {
            let b = base[(i + 1) % base.len()];
            edges.entry((a.min(b), a.max(b))).or_insert((a, b));
        }
        // VTK's prism lists its bottom clockwise seen from above, its hexahedron
        // counter-clockwise.
        match (kind, base.as_slice()) {
            (Kind::Tri3, &[a, b, c]) => cells.push(Kind::Prism6, &[a, c, b, up(a), up(c), up(b)]),
            (Kind::Quad4, &[a, b, c, d]) => {
                cells.push(Kind::Hex8, &[a, b, c, d, up(a), up(b), up(c), up(d)])
            }
            _ => {
                return bad(format!(
                    "cell {c} is a {}, which is not extruded",
                    kind.name()
                ))
            }
        }
    }

    let total = mesh.faces.len() + 2 * cells.len();
    let mut faces = Elements::with_capacity(total, 4 * total);
    let mut face_patch = Vec::with_capacity(total);
    for (f, ((_, ns), &p)) in mesh.faces.iter().zip(&mesh.face_patch).enumerate() {
        let &[a, b] = ns else {
            return bad(format!("boundary face {f} is not a line"));
        };
        let Some(&(u, v)) = edges.get(&(a.min(b), a.max(b))) else {
            return bad(format!(
                "boundary face {f} (nodes {a}, {b}) is no cell's edge"
            ));
        };
        // Counter-clockwise seen from outside, as the hexahedron's face (0, 1, 5, 4).
        faces.push(Kind::Quad4, &[u, v, up(v), up(u)]);
        face_patch.push(p);
    }
    // A prism's and a hexahedron's local faces 0 and 1 are its bottom and top, outward.
    let mut face = Vec::with_capacity(4);
    let front_patch = mesh.patches.len() as u32;
    for (side, patch) in [(0, front_patch), (1, front_patch + 1)] {
        for (kind, ns) in cells.iter() {
            let local = kind.faces()[side];
            face.clear();
            face.extend(local.iter().map(|&i| ns[i]));
            faces.push(Kind::face_kind(3, face.len()), &face);
            face_patch.push(patch);
        }
    }
    let mut patches = mesh.patches.clone();
    patches.extend([front.to_string(), back.to_string()]);
    Mesh::new(3, nodes, cells, faces, face_patch, patches)
}

/// Signed volume (area in 2D) of a cell: negative for nodes in the wrong order.
fn signed_measure(mesh: &Mesh, kind: Kind, nodes: &[NodeId]) -> f64 {
    topology::cell_geometry(kind, &topology::points(mesh, nodes)).0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::{cell_geometry, dot, face_geometry, points, sub};

    fn square() -> Mesh {
        crate::su2::parse(include_str!("../tests/data/square.su2"), "square.su2").unwrap()
    }

    #[test]
    fn cells_are_positive_and_of_the_area_times_the_thickness() {
        let flat = square();
        let thickness = 0.3;
        let mesh = extrude(&flat, thickness, "front", "back").unwrap();
        crate::check::check(&mesh).unwrap();
        assert_eq!((mesh.dim, mesh.nodes.len()), (3, 18));
        assert_eq!(mesh.nodes[4], [0.5, 0.5, 0.0]);
        assert_eq!(mesh.nodes[13], [0.5, 0.5, thickness]);
        let counts = mesh.cells.counts();
        assert_eq!((counts[&Kind::Prism6], counts[&Kind::Hex8]), (4, 2));
        // The square has a clockwise triangle and a clockwise quadrilateral.
        let areas: Vec<f64> = (flat.cells.iter())
            .map(|(kind, ns)| signed_measure(&flat, kind, ns))
            .collect();
        assert_eq!(areas.iter().filter(|&&a| a < 0.0).count(), 2);
        for (c, (kind, ns)) in mesh.cells.iter().enumerate() {
            let volume = signed_measure(&mesh, kind, ns);
            let want = areas[c].abs() * thickness;
            assert!(volume > 0.0, "cell {c}: {volume}");
            assert!(
                (volume - want).abs() <= 1e-14 * want,
                "cell {c}: {volume} vs {want}"
            );
        }
    }

    #[test]
    fn boundary_faces_point_out_of_their_cells_in_their_patches() {
        let flat = square();
        let mesh = extrude(&flat, 0.25, "front", "back").unwrap();
        let (cells, sides) = (flat.cells.len(), flat.faces.len());
        assert_eq!(mesh.faces.len(), sides + 2 * cells);
        let counts = mesh.faces.counts();
        assert_eq!(
            (counts[&Kind::Quad4], counts[&Kind::Tri3]),
            (8 + 2 * 2, 2 * 4)
        );
        assert_eq!(
            mesh.patches,
            ["lower", "right", "upper", "left", "front", "back"]
        );
        assert_eq!(mesh.face_patch[..sides], flat.face_patch);
        assert!(mesh.face_patch[sides..sides + cells]
            .iter()
            .all(|&p| p == 4));
        assert!(mesh.face_patch[sides + cells..].iter().all(|&p| p == 5));
        for (f, (_, face)) in mesh.faces.iter().enumerate() {
            let holds = |c: &(Kind, &[NodeId])| face.iter().all(|x| c.1.contains(x));
            let mut owners = mesh.cells.iter().filter(holds);
            let (kind, cell) = owners.next().unwrap();
            assert!(owners.next().is_none(), "face {f} is on two cells");
            let (s, c) = face_geometry(&points(&mesh, face));
            let (_, centre, _) = cell_geometry(kind, &points(&mesh, cell));
            let out = dot(s, sub(c, centre));
            assert!(out > 0.0, "face {f} {face:?} points into its cell");
            let z = s[2] / dot(s, s).sqrt();
            let want = match mesh.face_patch[f] {
                4 => -1.0,
                5 => 1.0,
                _ => 0.0,
            };
            assert!((z - want).abs() < 1e-15, "face {f}: normal's z {z}");
        }
    }

    #[test]
    fn what_cannot_be_extruded_is_an_error() {
        let flat = square();
        let slab = extrude(&flat, 1.0, "front", "back").unwrap();
        let cases = [
            (&slab, 1.0, "front", "back", "a 2D mesh, not a 3D one"),
            (&flat, 0.0, "front", "back", "thickness 0 "),
            (&flat, -1.0, "front", "back", "thickness -1 "),
            (&flat, f64::NAN, "front", "back", "thickness NaN "),
            (&flat, f64::INFINITY, "front", "back", "thickness inf "),
            (&flat, 1.0, "front", "left", "'left' exists already"),
            (&flat, 1.0, "lower", "back", "'lower' exists already"),
            (&flat, 1.0, "side", "side", "both named 'side'"),
        ];
        for (mesh, thickness, front, back, what) in cases {
            match extrude(mesh, thickness, front, back) {
                Err(MeshError::Invalid(e)) => assert!(e.contains(what), "{e}"),
                other => panic!("{what}: {other:?}"),
            }
        }
        let mut loose = flat.clone();
        loose.faces = Elements::default();
        loose.faces.push(Kind::Line2, &[0, 8]);
        loose.face_patch = vec![0];
        let e = extrude(&loose, 1.0, "front", "back").unwrap_err();
        assert!(
            e.to_string().contains("(nodes 0, 8) is no cell's edge"),
            "{e}"
        );
    }
}
