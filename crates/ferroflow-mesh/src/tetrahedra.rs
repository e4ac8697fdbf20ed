//! Prisms split into tetrahedra ([`split_prisms`]) for the solvers that take tetrahedra only,
//! keeping the mirror symmetries of an extruded mesh.
//!
//! Each prism stands on a triangle with three side edges (node i to node i + 3 in VTK's order);
//! its lower end is the triangle with the smaller z. Every quadrilateral side is cut from the
//! lower node of its earlier side edge to the upper node of the later one, "earlier" in one
//! order of the side edges: three cuts from one order never close a cycle, so each prism
//! splits into the three tetrahedra of a staircase, and two prisms sharing a side cut it alike.
//! A split by node numbers (as Gmsh's) cuts mirror images differently, and those cuts alone
//! give a body in a symmetric flow a force across it as large as the DFG benchmark's lift
//! (BENCHMARKS.md). [`Mirror`] orders the side edges so that the cuts are mirror images too.
use crate::element::Kind;
use crate::mesh::{Elements, Mesh, MeshError, NodeId};
use crate::topology;
use std::cmp::Ordering;
use std::collections::HashSet;

/// The planes y = `y` and z = `z` that the split keeps a mesh symmetric about.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mirror {
    /// Side edges are ordered by their lower node's distance from the plane y = `y`, then by
    /// its x, then by its number: mirror images in that plane come in the same order.
    pub y: f64,
    /// Prisms above the plane z = `z` take the reverse order, so each is cut as the mirror
    /// image of its image below.
    pub z: f64,
}

/// `mesh` with each prism split into three tetrahedra and each quadrilateral boundary face
/// into the two triangles of its cut, in the same patch; tetrahedra and triangles are kept.
/// Side edges are ordered by `mirror` or, without one, by their lower node's number.
///
/// Errors: a cell other than a tetrahedron or prism; a quadrilateral face that is no prism's
/// side; a prism through the mirror plane z = `mirror.z`; a prism whose side edges the mirror
/// cannot order; a prism whose tetrahedra are not all of positive volume.
pub fn split_prisms(mesh: &Mesh, mirror: Option<Mirror>) -> Result<Mesh, MeshError> {
    let bad = |what: String| Err(MeshError::Invalid(what));
    let x = &mesh.nodes;
    // Coordinates within a millionth of the two nodes' distance count as equal: a mesher's
    // mirror images agree to rounding only (Gmsh's to 4e-10 m), and a tie broken by rounding
    // would cut one image unlike the other.
    let order = |a: NodeId, b: NodeId| -> Ordering {
        let (p, q) = (x[a as usize], x[b as usize]);
        let tolerance = 1e-6 * topology::norm(topology::sub(p, q));
        let compare = |u: f64, v: f64| match u - v {
            d if d < -tolerance => Ordering::Less,
            d if d > tolerance => Ordering::Greater,
            _ => Ordering::Equal,
        };
        let by_mirror = mirror.map_or(Ordering::Equal, |m| {
            compare((p[1] - m.y).abs(), (q[1] - m.y).abs()).then(compare(p[0], q[0]))
        });
        by_mirror.then(a.cmp(&b))
    };
    let mut cells = Elements::with_capacity(3 * mesh.cells.len(), 12 * mesh.cells.len());
    let mut cuts = HashSet::new();
    for (c, (kind, ns)) in mesh.cells.iter().enumerate() {
        match kind {
            Kind::Tet4 => cells.push(kind, ns),
            Kind::Prism6 => {
                let z = |ends: &[NodeId]| ends.iter().map(|&n| x[n as usize][2]).sum::<f64>();
                let (lower, upper) = if z(&ns[..3]) <= z(&ns[3..]) {
                    (&ns[..3], &ns[3..])
                } else {
                    (&ns[3..], &ns[..3])
                };
                let mut side = [0, 1, 2];
                side.sort_by(|&i, &j| order(lower[i], lower[j]));
                let [i, j, k] = side.map(|i| lower[i]);
                // Ties within the tolerance could chain into a cycle, which no cut follows.
                if [(i, j), (j, k), (i, k)]
                    .iter()
                    .any(|&(u, v)| order(u, v) != Ordering::Less)
                {
                    return bad(format!(
                        "prism {c} (nodes {ns:?}): its side edges have no order by the mirror \
                         (ties within the tolerance form a cycle)"
                    ));
                }
                // Neighbours in one layer must agree on their side of the plane z = m.z, so
                // a prism through it is refused.
                let (low, high) = (ns.iter().map(|&n| x[n as usize][2]))
                    .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), z| {
                        (l.min(z), h.max(z))
                    });
                let tolerance = 1e-6 * (high - low);
                if let Some(m) = mirror {
                    if low < m.z - tolerance && high > m.z + tolerance {
                        return bad(format!(
                            "prism {c} (nodes {ns:?}, z from {low} to {high}) crosses the \
                             mirror plane z = {}: its layers must meet there",
                            m.z
                        ));
                    }
                    if low >= m.z - tolerance {
                        side.reverse();
                    }
                }
                let [b0, b1, b2] = side.map(|i| lower[i]);
                let [t0, t1, t2] = side.map(|i| upper[i]);
                for (u, v) in [(b0, t1), (b0, t2), (b1, t2)] {
                    cuts.insert((u.min(v), u.max(v)));
                }
                for mut tet in [[b0, b1, b2, t2], [b0, b1, t1, t2], [b0, t0, t1, t2]] {
                    let volume =
                        topology::cell_geometry(Kind::Tet4, &topology::points(mesh, &tet)).0;
                    if volume < 0.0 {
                        tet.swap(1, 2);
                    }
                    if volume.is_nan() || volume == 0.0 {
                        return bad(format!(
                            "prism {c} (nodes {ns:?}) splits into a tetrahedron {tet:?} of \
                             volume {volume:e}"
                        ));
                    }
                    cells.push(Kind::Tet4, &tet);
                }
            }
            _ => {
                return bad(format!(
                    "cell {c} is a {}: only prisms are split into tetrahedra",
                    kind.name()
                ))
            }
        }
    }
    let mut faces = Elements::with_capacity(2 * mesh.faces.len(), 6 * mesh.faces.len());
    let mut face_patch = Vec::with_capacity(2 * mesh.faces.len());
    for (f, ((kind, ns), &p)) in mesh.faces.iter().zip(&mesh.face_patch).enumerate() {
        let cut = |u: NodeId, v: NodeId| cuts.contains(&(u.min(v), u.max(v)));
        match (kind, ns) {
            (Kind::Tri3, _) => {
                faces.push(kind, ns);
                face_patch.push(p);
            }
            // Both halves keep the quadrilateral's sense, so they face out as it did.
            (Kind::Quad4, &[a, b, c, d]) if cut(a, c) => {
                faces.push(Kind::Tri3, &[a, b, c]);
                faces.push(Kind::Tri3, &[a, c, d]);
                face_patch.extend([p, p]);
            }
            (Kind::Quad4, &[a, b, c, d]) if cut(b, d) => {
                faces.push(Kind::Tri3, &[a, b, d]);
                faces.push(Kind::Tri3, &[b, c, d]);
                face_patch.extend([p, p]);
            }
            _ => {
                return bad(format!(
                    "boundary face {f} (a {} on nodes {ns:?}) is no prism's side",
                    kind.name()
                ))
            }
        }
    }
    Mesh::new(
        3,
        mesh.nodes.clone(),
        cells,
        faces,
        face_patch,
        mesh.patches.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{box_mesh, BoxCells};

    /// The square [0, 2]² in 2 × 2 cells of two triangles, the diagonals of the rows y < 1
    /// and y > 1 mirror images in y = 1, extruded in `layers` unit layers into prisms; one
    /// patch holds the boundary.
    fn mirrored_prisms(layers: usize) -> Mesh {
        let at = |i: usize, j: usize, k: usize| (k * 9 + j * 3 + i) as NodeId;
        let nodes = (0..=layers)
            .flat_map(|k| (0..9).map(move |n| [(n % 3) as f64, (n / 3) as f64, k as f64]))
            .collect();
        let mut cells = Elements::with_capacity(0, 0);
        for k in 0..layers {
            for (i, j) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                // Counter-clockwise triangles; the diagonal leans toward y = 1.
                let [a, b, c, d] = [(i, j), (i + 1, j), (i + 1, j + 1), (i, j + 1)];
                let tris = if j == 0 {
                    [[a, b, d], [b, c, d]]
                } else {
                    [[a, b, c], [a, c, d]]
                };
                for [p, q, r] in tris {
                    let [p, q, r] = [p, q, r].map(|(i, j)| at(i, j, k));
                    let up = |n: NodeId| n + 9;
                    cells.push(Kind::Prism6, &[p, r, q, up(p), up(r), up(q)]);
                }
            }
        }
        let shell = Mesh::new(
            3,
            nodes,
            cells,
            Elements::with_capacity(0, 0),
            vec![],
            vec![],
        );
        let shell = shell.unwrap();
        let faces = topology::faces(&shell).unwrap();
        let mut boundary = Elements::with_capacity(0, 0);
        for f in faces.internal..faces.nodes.len() {
            let ns = faces.nodes.nodes(f);
            boundary.push(Kind::face_kind(3, ns.len()), ns);
        }
        let patch = vec![0; boundary.len()];
        let (n, c) = (shell.nodes, shell.cells);
        Mesh::new(3, n, c, boundary, patch, vec!["boundary".into()]).unwrap()
    }

    /// How many of `mesh`'s tetrahedra have no tetrahedron at their image under `image`.
    fn without_image(mesh: &Mesh, image: impl Fn([f64; 3]) -> [f64; 3]) -> usize {
        let at = |p: [f64; 3]| {
            let close = |q: &[f64; 3]| topology::norm(topology::sub(*q, p)) < 1e-9;
            mesh.nodes.iter().position(close).unwrap() as NodeId
        };
        let sorted = |mut ns: Vec<NodeId>| {
            ns.sort();
            ns
        };
        let tets: HashSet<Vec<NodeId>> = (mesh.cells.iter())
            .map(|(_, ns)| sorted(ns.to_vec()))
            .collect();
        let imaged = |t: &Vec<NodeId>| -> Vec<NodeId> {
            sorted(
                t.iter()
                    .map(|&n| at(image(mesh.nodes[n as usize])))
                    .collect(),
            )
        };
        (tets.iter()).filter(|t| !tets.contains(&imaged(t))).count()
    }

    #[test]
    fn the_split_is_a_valid_mesh_of_the_same_volume_and_patches() {
        let prisms = mirrored_prisms(2);
        let quads = prisms.faces.counts()[&Kind::Quad4];
        let tris = prisms.faces.counts()[&Kind::Tri3];
        for mirror in [None, Some(Mirror { y: 1.0, z: 1.0 })] {
            let mesh = split_prisms(&prisms, mirror).unwrap();
            crate::check::check(&mesh).unwrap();
            assert_eq!(mesh.cells.counts()[&Kind::Tet4], 3 * prisms.cells.len());
            assert_eq!(mesh.faces.counts()[&Kind::Tri3], 2 * quads + tris);
            assert_eq!(mesh.patches, prisms.patches);
            let volume: f64 = (mesh.cells.iter())
                .map(|(k, ns)| topology::cell_geometry(k, &topology::points(&mesh, ns)).0)
                .sum();
            assert!((volume - 8.0).abs() < 1e-12, "{volume}");
        }
    }

    #[test]
    fn mirror_images_are_cut_alike_only_with_the_mirror() {
        let prisms = mirrored_prisms(4);
        let in_y = |p: [f64; 3]| [p[0], 2.0 - p[1], p[2]];
        let in_z = |p: [f64; 3]| [p[0], p[1], 4.0 - p[2]];
        let mirrored = split_prisms(&prisms, Some(Mirror { y: 1.0, z: 2.0 })).unwrap();
        assert_eq!(without_image(&mirrored, in_y), 0);
        assert_eq!(without_image(&mirrored, in_z), 0);
        // Images that agree to rounding only are cut alike too.
        let mut rounded = prisms.clone();
        for (i, p) in rounded.nodes.iter_mut().enumerate() {
            p[0] += 1e-12 * ((i * 7919 % 13) as f64 - 6.0);
            p[1] += 1e-12 * ((i * 104_729 % 11) as f64 - 5.0);
        }
        let mirrored = split_prisms(&rounded, Some(Mirror { y: 1.0, z: 2.0 })).unwrap();
        assert_eq!(without_image(&mirrored, in_y), 0);
        let by_number = split_prisms(&prisms, None).unwrap();
        assert!(without_image(&by_number, in_y) > 0);
        assert!(without_image(&by_number, in_z) > 0);
    }

    #[test]
    fn other_cells_and_stray_quadrilaterals_are_errors() {
        let hexes = box_mesh(BoxCells::Hex, [1, 1, 1], [1.0; 3]).unwrap();
        let e = split_prisms(&hexes, None).unwrap_err().to_string();
        assert!(e.contains("cell 0 is a hexahedron"), "{e}");
        let mut prisms = mirrored_prisms(1);
        let quad = (0..prisms.faces.len())
            .find(|&f| prisms.faces.kind(f) == Kind::Quad4)
            .unwrap();
        prisms.faces.nodes_mut(quad).rotate_left(1);
        prisms.faces.nodes_mut(quad).swap(0, 1);
        let e = split_prisms(&prisms, None).unwrap_err().to_string();
        assert!(e.contains(&format!("boundary face {quad}")), "{e}");
        let layers = mirrored_prisms(2);
        let mid_layer = Some(Mirror { y: 1.0, z: 0.5 });
        let e = split_prisms(&layers, mid_layer).unwrap_err().to_string();
        assert!(e.contains("crosses the mirror plane z = 0.5"), "{e}");
    }
}
