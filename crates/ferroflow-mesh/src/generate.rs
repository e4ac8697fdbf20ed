//! Generated meshes: boxes of hexahedra, prisms or tetrahedra ([`box_mesh`]) with patches
//! `xmin` … `zmax`, the unit-cube family of tetrahedra refined 1:8 per level
//! ([`cube_family`]), slabs for shock tubes ([`slab`]); nodes clustered toward a box's walls
//! ([`cluster`]); node jitter ([`jitter`]) and random renumbering ([`shuffle`]) to test what a
//! solver assumes about a mesh.
use crate::element::Kind;
use crate::mesh::{Elements, Mesh, MeshError, NodeId};
use crate::topology::{self, face_geometry, points};
use ferroflow_core::random::SplitMix64;

/// How a box's hexahedral cells are filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxCells {
    /// One hexahedron each.
    Hex,
    /// Two prisms, the x-y diagonal split, extruded along z.
    Prism,
    /// Five tetrahedra: a central one and four corners, mirrored in every other cell so that
    /// neighbours' face diagonals match.
    Tet5,
    /// Six tetrahedra around the diagonal from the low corner to the high one (the Kuhn
    /// split, the same in every cell).
    Tet6,
}

impl BoxCells {
    /// Cells per hexahedron.
    pub fn per_hex(self) -> usize {
        match self {
            BoxCells::Hex => 1,
            BoxCells::Prism => 2,
            BoxCells::Tet5 => 5,
            BoxCells::Tet6 => 6,
        }
    }
}

/// The patch names of a box's sides, in side order (low x, high x, low y, …).
pub const SIDES: [&str; 6] = ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"];

/// A box [0, lengths] of `n` hexahedral cells per axis, each filled as `cells` says, its
/// boundary faces in the patches [`SIDES`]. Nodes are numbered x fastest.
pub fn box_mesh(cells: BoxCells, n: [usize; 3], lengths: [f64; 3]) -> Result<Mesh, MeshError> {
    if n.contains(&0) || lengths.iter().any(|&l| !(l > 0.0 && l.is_finite())) {
        return Err(MeshError::Invalid(format!(
            "a box of {n:?} cells and lengths {lengths:?} (at least one cell and a positive \
             length per axis)"
        )));
    }
    let nodes_per = [n[0] + 1, n[1] + 1, n[2] + 1];
    let count = nodes_per.iter().product::<usize>();
    if count > NodeId::MAX as usize {
        return Err(MeshError::Invalid(format!(
            "{count} nodes: more than a u32 numbers"
        )));
    }
    let id = |i: usize, j: usize, k: usize| (i + nodes_per[0] * (j + nodes_per[1] * k)) as NodeId;
    let mut nodes = Vec::with_capacity(count);
    for k in 0..nodes_per[2] {
        for j in 0..nodes_per[1] {
            for i in 0..nodes_per[0] {
                nodes.push([
                    lengths[0] * i as f64 / n[0] as f64,
                    lengths[1] * j as f64 / n[1] as f64,
                    lengths[2] * k as f64 / n[2] as f64,
                ]);
            }
        }
    }
    let hexes = n[0] * n[1] * n[2];
    let mut out = Elements::with_capacity(hexes * cells.per_hex(), hexes * 8);
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                // The hexahedron's corners in VTK's order: corner c at (i, j, k) + offset.
                let h: [NodeId; 8] = std::array::from_fn(|c| {
                    let [di, dj] = [[0, 0], [1, 0], [1, 1], [0, 1]][c % 4];
                    id(i + di, j + dj, k + c / 4)
                });
                fill(&mut out, cells, h, (i + j + k) % 2 == 1);
            }
        }
    }
    let mut mesh = Mesh::new(3, nodes, out, Elements::default(), vec![], vec![])?;
    name_sides(&mut mesh, lengths)?;
    Ok(mesh)
}

/// Appends the cells of one hexahedron `h` (VTK's corner order), mirrored for `odd` (Tet5).
fn fill(out: &mut Elements, cells: BoxCells, h: [NodeId; 8], odd: bool) {
    match cells {
        BoxCells::Hex => out.push(Kind::Hex8, &h),
        // Bottom triangles clockwise seen from the top: a prism's first triangle faces out.
        BoxCells::Prism => {
            out.push(Kind::Prism6, &[h[0], h[2], h[1], h[4], h[6], h[5]]);
            out.push(Kind::Prism6, &[h[0], h[3], h[2], h[4], h[7], h[6]]);
        }
        BoxCells::Tet6 => {
            // From corner 0 to corner 6 through one corner of each: x, y, z in every order.
            for [a, b] in [[1, 2], [3, 2], [3, 7], [4, 7], [4, 5], [1, 5]] {
                out.push(
                    Kind::Tet4,
                    &positive_tet([h[0], h[a], h[b], h[6]], [0, a, b, 6]),
                );
            }
        }
        BoxCells::Tet5 => {
            // The four corners that keep their three neighbours, and the central tetrahedron
            // of the other four.
            let (corners, centre) = if odd {
                ([1, 3, 4, 6], [0, 2, 5, 7])
            } else {
                ([0, 2, 5, 7], [1, 3, 4, 6])
            };
            for c in corners {
                let [a, b, d] = HEX_NEIGHBOURS[c];
                out.push(
                    Kind::Tet4,
                    &positive_tet([h[c], h[a], h[b], h[d]], [c, a, b, d]),
                );
            }
            let t = centre.map(|c| h[c]);
            out.push(Kind::Tet4, &positive_tet(t, centre));
        }
    }
}

/// The corners next to each corner of a hexahedron (VTK's order).
const HEX_NEIGHBOURS: [[usize; 3]; 8] = [
    [1, 3, 4],
    [0, 2, 5],
    [1, 3, 6],
    [0, 2, 7],
    [0, 5, 7],
    [1, 4, 6],
    [2, 5, 7],
    [3, 4, 6],
];

/// The tetrahedron on `t` (hexahedron corners `corners`) ordered to have positive volume in
/// the unit cube's corner coordinates.
fn positive_tet(t: [NodeId; 4], corners: [usize; 4]) -> [NodeId; 4] {
    let at = |c: usize| {
        let [x, y] = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]][c % 4];
        [x, y, (c / 4) as f64]
    };
    let x = corners.map(at);
    let (v, _, _) = topology::cell_geometry(Kind::Tet4, &x);
    if v > 0.0 {
        t
    } else {
        [t[0], t[2], t[1], t[3]]
    }
}

/// Puts each boundary face of a box [0, lengths] in the patch of its side (by where its
/// centre lies).
fn name_sides(mesh: &mut Mesh, lengths: [f64; 3]) -> Result<(), MeshError> {
    let faces = topology::faces(mesh)?;
    let mut boundary = Elements::default();
    let mut patch = Vec::new();
    for f in faces.internal..faces.cells.len() {
        let nodes = faces.nodes.nodes(f);
        let (_, c) = face_geometry(&points(mesh, nodes));
        let side = (0..6)
            .min_by(|&a, &b| {
                let off = |s: usize| {
                    let target = if s.is_multiple_of(2) {
                        0.0
                    } else {
                        lengths[s / 2]
                    };
                    (c[s / 2] - target).abs()
                };
                off(a).total_cmp(&off(b))
            })
            .unwrap_or(0);
        boundary.push(faces.nodes.kind(f), nodes);
        patch.push(side as u32);
    }
    mesh.faces = boundary;
    mesh.face_patch = patch;
    mesh.patches = SIDES.iter().map(|s| s.to_string()).collect();
    Ok(())
}

/// Level `level` of the unit cube's tetrahedral family: `base · 2^level` cells per axis,
/// six tetrahedra each (each level refines every tetrahedron of the one below into 8).
/// With `base` 14: 3,375 / 24,389 / 185,193 nodes at levels 0–2 (seed 001's Gmsh family
/// had 3,347 / 24,202 / 184,755).
pub fn cube_family(base: usize, level: u32) -> Result<Mesh, MeshError> {
    let n = base << level;
    box_mesh(BoxCells::Tet6, [n; 3], [1.0; 3])
}

/// A slab of `n` × 2 × 2 cubic hexahedra along x, of length 1 (shock tubes).
pub fn slab(n: usize) -> Result<Mesh, MeshError> {
    let h = 1.0 / n.max(1) as f64;
    box_mesh(BoxCells::Hex, [n, 2, 2], [1.0, 2.0 * h, 2.0 * h])
}

/// Where station `s` ∈ [0, 1] of a row of uniform stations goes when the row is clustered
/// toward both ends by the tanh stretching of strength `beta`, ½ (1 + tanh(β (2s − 1)) /
/// tanh β) (`beta` 0: uniform). Ends and middle stay exactly: 0, ½ and 1 map to themselves; the
/// spacing at the ends is 1 / cosh² β of the middle's.
pub fn clustered(s: f64, beta: f64) -> f64 {
    if beta == 0.0 {
        return s;
    }
    0.5 * (1.0 + (beta * (2.0 * s - 1.0)).tanh() / beta.tanh())
}

/// Clusters the nodes of a box [0, lengths] (of [`box_mesh`]) toward its walls: each
/// coordinate through [`clustered`] with strength `beta` (> 0 and finite, or an error). The
/// grid stays a tensor product, so every cell keeps its orientation.
pub fn cluster(mesh: &mut Mesh, lengths: [f64; 3], beta: f64) -> Result<(), MeshError> {
    if !(beta > 0.0 && beta.is_finite()) {
        return Err(MeshError::Invalid(format!(
            "clustering strength {beta}: must be positive and finite"
        )));
    }
    for x in mesh.nodes.iter_mut() {
        for a in 0..3 {
            x[a] = lengths[a] * clustered(x[a] / lengths[a], beta);
        }
    }
    Ok(())
}

/// Moves every node not on the boundary by up to `fraction` of the shortest edge at it, in
/// each direction, from `seed` (boundary nodes stay: the domain keeps its shape).
pub fn jitter(mesh: &mut Mesh, fraction: f64, seed: u64) -> Result<(), MeshError> {
    let faces = topology::faces(mesh)?;
    let mut on_boundary = vec![false; mesh.nodes.len()];
    for f in faces.internal..faces.cells.len() {
        for &n in faces.nodes.nodes(f) {
            on_boundary[n as usize] = true;
        }
    }
    let graph = topology::node_graph(mesh);
    let mut random = SplitMix64(seed);
    let before = mesh.nodes.clone();
    for (v, x) in mesh.nodes.iter_mut().enumerate() {
        let shortest = (graph.neighbours(v).iter())
            .map(|&w| topology::norm(topology::sub(before[w as usize], before[v])))
            .fold(f64::INFINITY, f64::min);
        let step = fraction * shortest;
        for c in x.iter_mut().take(mesh.dim) {
            let d = step * random.signed();
            if !on_boundary[v] {
                *c += d;
            }
        }
    }
    Ok(())
}

/// Numbers the nodes and orders the cells at random, from `seed` (what a mesh generator's
/// numbering looks like to a solver before renumbering).
pub fn shuffle(mesh: &mut Mesh, seed: u64) {
    let mut random = SplitMix64(seed);
    let mut permutation = |n: usize| {
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            p.swap(i, random.below(i + 1));
        }
        p
    };
    let nodes: Vec<NodeId> = permutation(mesh.nodes.len())
        .into_iter()
        .map(|x| x as NodeId)
        .collect();
    mesh.renumber_nodes(&nodes);
    let cells = permutation(mesh.cells.len());
    mesh.reorder_cells(&cells);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::check;
    use crate::topology::dual_volumes;

    #[test]
    fn boxes_of_every_fill_pass_the_checks_and_have_the_box_volume() {
        for cells in [
            BoxCells::Hex,
            BoxCells::Prism,
            BoxCells::Tet5,
            BoxCells::Tet6,
        ] {
            let mut mesh = box_mesh(cells, [3, 4, 5], [1.0, 2.0, 0.5]).unwrap();
            let r = check(&mesh).unwrap_or_else(|e| panic!("{cells:?}: {e}"));
            assert!((r.volume - 1.0).abs() < 1e-12, "{cells:?}: {}", r.volume);
            assert_eq!(mesh.cells.len(), 60 * cells.per_hex());
            // Prisms split the z sides only.
            let split = |z: bool| match cells {
                BoxCells::Hex => 1,
                BoxCells::Prism if !z => 1,
                _ => 2,
            };
            let sides = [20, 20, 15, 15, 12, 12];
            let expected: Vec<usize> = (0..6).map(|s| sides[s] * split(s >= 4)).collect();
            assert_eq!(r.patch_faces, expected, "{cells:?}");
            let dual: f64 = dual_volumes(&mesh).iter().sum();
            assert!((dual - 1.0).abs() < 1e-12, "{cells:?}: dual volumes {dual}");
            jitter(&mut mesh, 0.2, 7).unwrap();
            shuffle(&mut mesh, 11);
            let r = check(&mesh).unwrap_or_else(|e| panic!("{cells:?} jittered: {e}"));
            assert!((r.volume - 1.0).abs() < 1e-12, "{cells:?}: {}", r.volume);
        }
    }

    #[test]
    fn clustered_boxes_keep_their_walls_and_centre_and_shrink_the_wall_cells() {
        let beta = 1.2;
        for s in [0.0, 0.5, 1.0] {
            assert_eq!(clustered(s, beta), s);
        }
        let mut mesh = box_mesh(BoxCells::Tet6, [8, 6, 4], [2.0, 1.0, 0.5]).unwrap();
        cluster(&mut mesh, [2.0, 1.0, 0.5], beta).unwrap();
        let r = check(&mesh).unwrap();
        assert!((r.volume - 1.0).abs() < 1e-12, "{}", r.volume);
        // Along x the cells widen from the wall to the middle, the first above 1 / cosh² β
        // of the middle's (the spacings' limit as cells shrink) and below half.
        let xs: Vec<f64> = mesh.nodes[..9].iter().map(|x| x[0]).collect();
        assert_eq!((xs[0], xs[4], xs[8]), (0.0, 1.0, 2.0));
        let widths: Vec<f64> = xs.windows(2).map(|w| w[1] - w[0]).collect();
        assert!(widths[..4].windows(2).all(|w| w[0] < w[1]), "{widths:?}");
        let ratio = widths[0] / widths[3];
        assert!(ratio > 1.0 / beta.cosh().powi(2) && ratio < 0.5, "{ratio}");
        for bad in [0.0, -1.0, f64::NAN] {
            assert!(cluster(&mut mesh, [2.0, 1.0, 0.5], bad).is_err());
        }
    }

    #[test]
    fn the_cube_family_refines_one_to_eight() {
        let coarse = cube_family(2, 0).unwrap();
        let fine = cube_family(2, 1).unwrap();
        assert_eq!(fine.cells.len(), 8 * coarse.cells.len());
        for m in [&coarse, &fine] {
            let r = check(m).unwrap();
            assert!((r.volume - 1.0).abs() < 1e-12);
        }
    }

    /// Seed 001's three levels: 1:8, every check, the unit volume within 1e-12.
    #[test]
    #[ignore = "a million tetrahedra, seconds of work: run with --ignored (CI does)"]
    fn the_cube_family_to_a_million_tetrahedra() {
        let mut cells = 0;
        for level in 0..3 {
            let mesh = cube_family(14, level).unwrap();
            let r = check(&mesh).unwrap();
            assert!(
                (r.volume - 1.0).abs() < 1e-12,
                "level {level}: {}",
                r.volume
            );
            assert_eq!(mesh.nodes.len(), [3375, 24389, 185193][level as usize]);
            assert!(cells == 0 || mesh.cells.len() == 8 * cells);
            cells = mesh.cells.len();
        }
    }

    #[test]
    fn tetrahedra_get_a_quarter_of_their_volume_at_each_node() {
        let mesh = box_mesh(BoxCells::Tet6, [1, 1, 1], [1.0; 3]).unwrap();
        let dual = dual_volumes(&mesh);
        let mut expected = vec![0.0; 8];
        for (_, nodes) in mesh.cells.iter() {
            for &n in nodes {
                expected[n as usize] += 1.0 / 24.0;
            }
        }
        for (d, e) in dual.iter().zip(&expected) {
            assert!((d - e).abs() < 1e-15, "{d} against {e}");
        }
    }

    #[test]
    fn a_slab_is_n_by_2_by_2() {
        let s = slab(10).unwrap();
        assert_eq!(s.cells.len(), 40);
        assert!((check(&s).unwrap().volume - 0.04).abs() < 1e-14);
    }
}
