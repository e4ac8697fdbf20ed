//! What a mesh's solvers derive from it, on demand: the faces with their cells ([`faces`]),
//! area vectors and centroids of faces, volumes and centroids of cells ([`Geometry`]), the
//! node graph ([`node_graph`]) and the cells' graph ([`cell_graph`]), median-dual volumes
//! ([`dual_volumes`]). In 2D a face is an edge, its area vector its outward normal times its
//! length, and a cell's volume its area.
use crate::element::Kind;
use crate::mesh::{Elements, Mesh, MeshError, NodeId};

/// Marks a boundary face's missing second cell.
pub const NONE: u32 = u32::MAX;

/// Every face of a mesh once: internal faces first, sorted by their cell pair, then boundary
/// faces sorted by their cell. A face's nodes are listed outward of its first cell, so its area
/// vector points from the first cell to the second.
#[derive(Debug, Clone, PartialEq)]
pub struct Faces {
    /// The nodes of each face.
    pub nodes: Elements,
    /// The two cells of each face: `[first, second]`, `second` [`NONE`] on the boundary;
    /// `first < second` inside.
    pub cells: Vec<[u32; 2]>,
    /// Number of internal faces (they come first).
    pub internal: usize,
    /// Local face number of each face in its first cell (`Kind::faces`).
    pub local: Vec<u8>,
}

/// A face as a sort key: its nodes sorted, padded with `NONE`.
fn key(nodes: &[NodeId]) -> [NodeId; 4] {
    let mut k = [NONE; 4];
    k[..nodes.len()].copy_from_slice(nodes);
    k[..nodes.len()].sort_unstable();
    k
}

/// Whether `b` lists the nodes of `a` in the opposite cyclic order (the face as its other
/// cell sees it).
pub fn opposite(a: &[NodeId], b: &[NodeId]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n == 2 {
        return a[0] == b[1] && a[1] == b[0];
    }
    let Some(s) = b.iter().position(|&x| x == a[0]) else {
        return false;
    };
    (0..n).all(|i| a[i] == b[(s + n - i) % n])
}

/// The faces of `mesh`'s cells, each once. Errors name a face that more than two cells share
/// (a mesh that is not a manifold), and a face two cells list the same way round (one of
/// them inside out).
pub fn faces(mesh: &Mesh) -> Result<Faces, MeshError> {
    // (key, cell, local face), sorted by key: a face's cells end up next to each other.
    let mut all: Vec<([NodeId; 4], u32, u8)> = Vec::new();
    for (c, (kind, _)) in mesh.cells.iter().enumerate() {
        for (l, local) in kind.faces().iter().enumerate() {
            let nodes: Vec<NodeId> = local.iter().map(|&i| mesh.cells.nodes(c)[i]).collect();
            all.push((key(&nodes), c as u32, l as u8));
        }
    }
    all.sort_unstable();
    let face_nodes = |c: u32, l: u8| -> Vec<NodeId> {
        let cell = mesh.cells.nodes(c as usize);
        mesh.cells.kind(c as usize).faces()[l as usize]
            .iter()
            .map(|&i| cell[i])
            .collect()
    };
    let (mut internal, mut boundary) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        while j < all.len() && all[j].0 == all[i].0 {
            j += 1;
        }
        let (_, a, la) = all[i];
        match j - i {
            1 => boundary.push((a, NONE, la)),
            2 => {
                let (_, b, lb) = all[i + 1];
                if !opposite(&face_nodes(a, la), &face_nodes(b, lb)) {
                    return Err(MeshError::Invalid(format!(
                        "the face of nodes {:?} is listed the same way round by cells {a} \
                         and {b}: one of them is inside out",
                        face_nodes(a, la)
                    )));
                }
                internal.push((a, b, la));
            }
            _ => {
                let cells: Vec<u32> = all[i..j].iter().map(|x| x.1).collect();
                return Err(MeshError::Invalid(format!(
                    "the face of nodes {:?} is shared by {} cells {cells:?}: the mesh is not \
                     a manifold",
                    face_nodes(a, la),
                    j - i
                )));
            }
        }
        i = j;
    }
    internal.sort_unstable();
    boundary.sort_unstable();
    let count = internal.len() + boundary.len();
    let mut out = Faces {
        nodes: Elements::with_capacity(count, 4 * count),
        cells: Vec::with_capacity(count),
        internal: internal.len(),
        local: Vec::with_capacity(count),
    };
    for (a, b, l) in internal.into_iter().chain(boundary) {
        let nodes = face_nodes(a, l);
        out.nodes
            .push(Kind::face_kind(mesh.dim, nodes.len()), &nodes);
        out.cells.push([a, b]);
        out.local.push(l);
    }
    Ok(out)
}

type Vec3 = [f64; 3];

/// a − b.
pub fn sub(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn add(a: Vec3, b: Vec3) -> Vec3 {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

fn scale(a: Vec3, s: f64) -> Vec3 {
    [a[0] * s, a[1] * s, a[2] * s]
}

fn cross(a: Vec3, b: Vec3) -> Vec3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Dot product.
pub fn dot(a: Vec3, b: Vec3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Euclidean length.
pub fn norm(a: Vec3) -> f64 {
    dot(a, a).sqrt()
}

fn mean(points: impl ExactSizeIterator<Item = Vec3>) -> Vec3 {
    let n = points.len() as f64;
    scale(points.fold([0.0; 3], add), 1.0 / n)
}

/// The pieces a face is cut into for its area and for the volumes bounded by it: in 3D the
/// triangles (c, x_i, x_(i+1)) from the mean c of its nodes (one triangle for a triangle),
/// in 2D the edge itself; each with its area vector, outward for a face listed outward.
fn pieces(points: &[Vec3], mut each: impl FnMut(&[Vec3], Vec3)) {
    match points.len() {
        2 => {
            let d = sub(points[1], points[0]);
            each(points, [d[1], -d[0], 0.0]);
        }
        3 => {
            let s = scale(
                cross(sub(points[1], points[0]), sub(points[2], points[0])),
                0.5,
            );
            each(points, s);
        }
        n => {
            let c = mean(points.iter().copied());
            for i in 0..n {
                let (a, b) = (points[i], points[(i + 1) % n]);
                let s = scale(cross(sub(a, c), sub(b, c)), 0.5);
                each(&[c, a, b], s);
            }
        }
    }
}

/// Area vector and centroid of the face through `points` in their order.
pub fn face_geometry(points: &[Vec3]) -> (Vec3, Vec3) {
    let (mut area, mut moment, mut weight) = ([0.0; 3], [0.0; 3], 0.0);
    pieces(points, |p, s| {
        let a = norm(s);
        area = add(area, s);
        moment = add(moment, scale(mean(p.iter().copied()), a));
        weight += a;
    });
    let centroid = if weight > 0.0 {
        scale(moment, 1.0 / weight)
    } else {
        mean(points.iter().copied())
    };
    (area, centroid)
}

/// Volume (area in 2D) and centroid of a cell: the simplices from the mean of its nodes to
/// the pieces of its outward faces, added with their signs (exact for planar faces; a
/// warped quadrilateral counts as its four triangles). Also the sum of its faces' area
/// vectors, zero for a closed cell.
pub fn cell_geometry(kind: Kind, points: &[Vec3]) -> (f64, Vec3, Vec3) {
    let dim = kind.dim() as f64;
    let centre = mean(points.iter().copied());
    let (mut volume, mut moment, mut closure) = (0.0, [0.0; 3], [0.0; 3]);
    for face in kind.faces() {
        let at: Vec<Vec3> = face.iter().map(|&i| points[i]).collect();
        pieces(&at, |p, s| {
            let v = dot(s, sub(p[0], centre)) / dim;
            let centroid = scale(p.iter().copied().fold(centre, add), 1.0 / (dim + 1.0));
            volume += v;
            moment = add(moment, scale(centroid, v));
            closure = add(closure, s);
        });
    }
    let centroid = if volume != 0.0 {
        scale(moment, 1.0 / volume)
    } else {
        centre
    };
    (volume, centroid, closure)
}

/// Cells' volumes and centroids, faces' area vectors and centroids.
#[derive(Debug, Clone, PartialEq)]
pub struct Geometry {
    /// Volume (area in 2D) of each cell.
    pub volumes: Vec<f64>,
    /// Centroid of each cell.
    pub cell_centroids: Vec<Vec3>,
    /// Area vector of each face of [`Faces`], from its first cell to its second.
    pub areas: Vec<Vec3>,
    /// Centroid of each face.
    pub face_centroids: Vec<Vec3>,
}

/// The coordinates of `nodes`.
pub fn points(mesh: &Mesh, nodes: &[NodeId]) -> Vec<Vec3> {
    nodes.iter().map(|&n| mesh.nodes[n as usize]).collect()
}

/// The geometry of `mesh`'s cells and of `faces` (its [`faces`]).
pub fn geometry(mesh: &Mesh, faces: &Faces) -> Geometry {
    let (mut volumes, mut cell_centroids) = (Vec::new(), Vec::new());
    for (kind, nodes) in mesh.cells.iter() {
        let (v, c, _) = cell_geometry(kind, &points(mesh, nodes));
        volumes.push(v);
        cell_centroids.push(c);
    }
    let (areas, face_centroids) = (faces.nodes.iter())
        .map(|(_, nodes)| face_geometry(&points(mesh, nodes)))
        .unzip();
    Geometry {
        volumes,
        cell_centroids,
        areas,
        face_centroids,
    }
}

/// A graph in compressed rows: the neighbours of vertex `v` are
/// `targets[offsets[v]..offsets[v + 1]]`, sorted, each edge in both directions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// Where each vertex's neighbours start (one more entry than vertices).
    pub offsets: Vec<usize>,
    /// The neighbours.
    pub targets: Vec<u32>,
}

impl Graph {
    /// The graph of `vertices` vertices with the undirected `edges` (duplicates and loops
    /// dropped).
    pub fn from_edges(vertices: usize, edges: impl Iterator<Item = [u32; 2]>) -> Graph {
        let mut both: Vec<[u32; 2]> = edges
            .filter(|[a, b]| a != b)
            .flat_map(|[a, b]| [[a, b], [b, a]])
            .collect();
        both.sort_unstable();
        both.dedup();
        let mut offsets = vec![0; vertices + 1];
        for [a, _] in &both {
            offsets[*a as usize + 1] += 1;
        }
        for v in 0..vertices {
            offsets[v + 1] += offsets[v];
        }
        Graph {
            offsets,
            targets: both.into_iter().map(|[_, b]| b).collect(),
        }
    }

    /// Number of vertices.
    pub fn len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Whether it has no vertices.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Neighbours of `v`.
    pub fn neighbours(&self, v: usize) -> &[u32] {
        &self.targets[self.offsets[v]..self.offsets[v + 1]]
    }

    /// Number of edges (each counted once).
    pub fn edges(&self) -> usize {
        self.targets.len() / 2
    }

    /// Largest |number(a) − number(b)| over the edges, with vertex v numbered `number[v]`
    /// (the identity where `number` is None).
    pub fn bandwidth(&self, number: Option<&[u32]>) -> usize {
        let at = |v: usize| number.map_or(v, |n| n[v] as usize);
        (0..self.len())
            .flat_map(|v| self.neighbours(v).iter().map(move |&w| (v, w as usize)))
            .map(|(v, w)| at(v).abs_diff(at(w)))
            .max()
            .unwrap_or(0)
    }
}

/// The node graph: nodes joined by the cells' edges.
pub fn node_graph(mesh: &Mesh) -> Graph {
    let edges = mesh.cells.iter().flat_map(|(kind, nodes)| {
        kind.edges()
            .iter()
            .map(move |[a, b]| [nodes[*a], nodes[*b]])
    });
    Graph::from_edges(mesh.nodes.len(), edges)
}

/// The cells' graph: cells joined by their internal faces.
pub fn cell_graph(cells: usize, faces: &Faces) -> Graph {
    Graph::from_edges(cells, faces.cells[..faces.internal].iter().copied())
}

/// Median-dual volumes of the nodes: each cell's share around each of its nodes, bounded by
/// the planes through its edges' midpoints, its faces' centres and its centre (means of
/// nodes). A tetrahedron gives each node a quarter of its volume.
pub fn dual_volumes(mesh: &Mesh) -> Vec<f64> {
    let mut volumes = vec![0.0; mesh.nodes.len()];
    let dim = mesh.dim as f64;
    for (kind, nodes) in mesh.cells.iter() {
        let x = points(mesh, nodes);
        let centre = mean(x.iter().copied());
        for face in kind.faces() {
            let n = face.len();
            let f: Vec<Vec3> = face.iter().map(|&i| x[i]).collect();
            let fc = mean(f.iter().copied());
            for i in 0..n {
                let mid = |j: usize| scale(add(f[i], f[j]), 0.5);
                // The node's corner of the face, outward: up to the next edge's midpoint,
                // the face's centre, back from the previous edge's midpoint.
                let corner: Vec<Vec3> = match n {
                    2 => vec![f[i], fc],
                    _ => vec![f[i], mid((i + 1) % n), fc, mid((i + n - 1) % n)],
                };
                let mut v = 0.0;
                pieces_of_polygon(&corner, |p, s| v += dot(s, sub(p[0], centre)) / dim);
                // In 2D an edge's node-half is oriented as the edge only for the first node.
                let v = if n == 2 && i == 1 { -v } else { v };
                volumes[nodes[face[i]] as usize] += v;
            }
        }
    }
    volumes
}

/// [`pieces`] of an open polygon fan from its first point (a face's node corner).
fn pieces_of_polygon(points: &[Vec3], mut each: impl FnMut(&[Vec3], Vec3)) {
    if points.len() == 2 {
        return pieces(points, each);
    }
    for i in 1..points.len() - 1 {
        let t = [points[0], points[i], points[i + 1]];
        let s = scale(cross(sub(t[1], t[0]), sub(t[2], t[0])), 0.5);
        each(&t, s);
    }
}
