//! `.vtu` files of a mesh of every 3D kind: the same bytes each time they are written, and
//! (ignored unless asked for) read back by the VTK library itself (`tests/vtu_readback.py`).
use ferroflow_mesh::vtu::{self, Field};
use ferroflow_mesh::{Elements, Kind, Mesh};
use std::path::Path;

/// `copies` groups, each 2 further along x: a unit-cube hexahedron, a pyramid on its top, a
/// prism on its x = 1 side and a tetrahedron on the pyramid; the boundary faces are the
/// cube's bottom (patch "bottom"), a side of the pyramid ("top") and of the prism ("side").
fn mixed(copies: usize) -> Mesh {
    let group = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [1.0, 1.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 0.0, 1.0],
        [1.0, 1.0, 1.0],
        [0.0, 1.0, 1.0],
        [0.5, 0.5, 1.5],
        [1.5, 0.5, 0.0],
        [1.5, 0.5, 1.0],
        [1.5, 0.5, 1.5],
    ];
    let n = group.len() as u32;
    let mut nodes = Vec::new();
    let (mut cells, mut faces, mut face_patch) = (Elements::default(), Elements::default(), vec![]);
    for c in 0..copies {
        nodes.extend(group.map(|[x, y, z]| [x + 2.0 * c as f64, y, z]));
        let at = |local: &[u32]| local.iter().map(|i| i + n * c as u32).collect::<Vec<_>>();
        cells.push(Kind::Hex8, &at(&[0, 1, 2, 3, 4, 5, 6, 7]));
        cells.push(Kind::Pyramid5, &at(&[4, 5, 6, 7, 8]));
        cells.push(Kind::Prism6, &at(&[1, 2, 9, 5, 6, 10]));
        cells.push(Kind::Tet4, &at(&[5, 6, 8, 11]));
        faces.push(Kind::Quad4, &at(&[0, 3, 2, 1]));
        faces.push(Kind::Tri3, &at(&[4, 5, 8]));
        faces.push(Kind::Quad4, &at(&[2, 9, 10, 6]));
        face_patch.extend([0, 1, 2]);
    }
    let patches = ["bottom", "top", "side"].map(String::from).to_vec();
    Mesh::new(3, nodes, cells, faces, face_patch, patches).unwrap()
}

/// The fields written on `mesh`: a node scalar `p`, a node vector `velocity`, a cell scalar
/// `q`, none of them exact in fewer than 64 bits.
fn fields(mesh: &Mesh) -> [Vec<f64>; 3] {
    let nodes = mesh.nodes.len();
    [
        (0..nodes).map(|i| (0.37 * i as f64).sin()).collect(),
        (0..3 * nodes)
            .map(|i| (0.1 * i as f64).cos() / 3.0)
            .collect(),
        (0..mesh.cells.len())
            .map(|c| 1.0 / (c + 3) as f64)
            .collect(),
    ]
}

/// Writes `mesh` with [`fields`] at `path`.
fn write(path: &Path, mesh: &Mesh, compress: bool) {
    let [p, u, q] = fields(mesh);
    let field = |name, components, values| Field {
        name,
        components,
        values,
    };
    let point_data = [field("p", 1, &p[..]), field("velocity", 3, &u[..])];
    vtu::write(path, mesh, &point_data, &[field("q", 1, &q)], compress).unwrap();
}

#[test]
fn the_same_mesh_is_written_as_the_same_bytes() {
    let mesh = mixed(400);
    let dir = tempfile::TempDir::new().unwrap();
    for compress in [false, true] {
        let written: Vec<_> = ["a", "b"]
            .map(|name| {
                let path = dir.path().join(format!("{name}-{compress}.vtu"));
                write(&path, &mesh, compress);
                let cells = std::fs::read(&path).unwrap();
                let path = dir.path().join(format!("{name}-{compress}-boundary.vtu"));
                vtu::write_boundary(&path, &mesh, compress).unwrap();
                (cells, std::fs::read(&path).unwrap())
            })
            .to_vec();
        assert!(written[0] == written[1], "compress = {compress}");
    }
}

/// What `tests/vtu_readback.py` prints of a file: its points, each cell's VTK type and point
/// ids, and each array as (point or cell, name, VTK type name, components, values).
#[derive(Default)]
struct ReadBack {
    points: Vec<[f64; 3]>,
    cells: Vec<(u8, Vec<u32>)>,
    arrays: Vec<(String, String, String, usize, Vec<f64>)>,
}

/// Reads the `.vtu` at `path` with the VTK of `python`.
fn read_back(python: &str, path: &Path) -> ReadBack {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vtu_readback.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(path)
        .output()
        .unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{}: {stdout}{}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut read = ReadBack::default();
    let (mut points, mut cells) = (0, 0);
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        let record = words.next().unwrap();
        let words: Vec<&str> = words.collect();
        let floats = |w: &[&str]| w.iter().map(|x| x.parse().unwrap()).collect::<Vec<f64>>();
        match record {
            "points" => points = words[0].parse().unwrap(),
            "cells" => cells = words[0].parse().unwrap(),
            "point" => read.points.push(floats(&words).try_into().unwrap()),
            "cell" => read.cells.push((
                words[0].parse().unwrap(),
                words[1..].iter().map(|x| x.parse().unwrap()).collect(),
            )),
            "array" => read.arrays.push((
                words[0].to_string(),
                words[1].to_string(),
                words[2].to_string(),
                words[3].parse().unwrap(),
                floats(&words[4..]),
            )),
            _ => panic!("{}: unexpected line {line}", path.display()),
        }
    }
    assert_eq!((read.points.len(), read.cells.len()), (points, cells));
    read
}

/// What VTK must read from `mesh`'s cells (or boundary faces) with `arrays`.
fn expected(
    mesh: &Mesh,
    elements: &Elements,
    arrays: &[(&str, &str, &str, usize, &[f64])],
) -> ReadBack {
    ReadBack {
        points: mesh.nodes.clone(),
        cells: elements
            .iter()
            .map(|(kind, nodes)| (kind.vtk(), nodes.to_vec()))
            .collect(),
        arrays: arrays
            .iter()
            .map(|&(at, name, ty, comps, values)| {
                let s = String::from;
                (s(at), s(name), s(ty), comps, values.to_vec())
            })
            .collect(),
    }
}

/// Panics naming the first point, cell, array or value where `read` differs from `want`.
fn same(read: &ReadBack, want: &ReadBack, path: &Path) {
    fn first<T: PartialEq + std::fmt::Debug>(path: &Path, what: &str, read: &[T], want: &[T]) {
        let file = path.display();
        assert_eq!(read.len(), want.len(), "{file}: number of {what}");
        if let Some(i) = (0..read.len()).find(|&i| read[i] != want[i]) {
            panic!("{file}: {what} {i} is {:?}, not {:?}", read[i], want[i]);
        }
    }
    first(path, "points", &read.points, &want.points);
    first(path, "cells (type, points)", &read.cells, &want.cells);
    let heads = |r: &ReadBack| {
        let head = |(at, name, ty, comps, _): &(String, String, String, usize, Vec<f64>)| {
            format!("{at} {name} {ty} {comps}")
        };
        r.arrays.iter().map(head).collect::<Vec<_>>()
    };
    first(
        path,
        "arrays (data, name, type, components)",
        &heads(read),
        &heads(want),
    );
    for (r, w) in read.arrays.iter().zip(&want.arrays) {
        first(path, &format!("values of {}", r.1), &r.4, &w.4);
    }
}

#[test]
#[ignore = "needs VTK: FERROFLOW_VTK_PYTHON, a python that can `import vtk`; run with --ignored"]
fn vtu_files_read_back_with_the_vtk_library() {
    let python = std::env::var("FERROFLOW_VTK_PYTHON")
        .expect("FERROFLOW_VTK_PYTHON must name a python with vtk (see README.md)");
    // 4800 points (115 kB, four zlib blocks), 1600 cells of every 3D kind.
    let mesh = mixed(400);
    let [p, u, q] = fields(&mesh);
    let patch: Vec<f64> = mesh.face_patch.iter().map(|&x| x.into()).collect();
    let dir = tempfile::TempDir::new().unwrap();
    for compress in [false, true] {
        let path = dir.path().join(format!("mesh-{compress}.vtu"));
        write(&path, &mesh, compress);
        let arrays = [
            ("point", "p", "double", 1, &p[..]),
            ("point", "velocity", "double", 3, &u[..]),
            ("cell", "q", "double", 1, &q[..]),
        ];
        let want = expected(&mesh, &mesh.cells, &arrays);
        same(&read_back(&python, &path), &want, &path);

        let path = dir.path().join(format!("boundary-{compress}.vtu"));
        vtu::write_boundary(&path, &mesh, compress).unwrap();
        let arrays = [("cell", "patch", "unsigned_int", 1, &patch[..])];
        let want = expected(&mesh, &mesh.faces, &arrays);
        same(&read_back(&python, &path), &want, &path);
    }
}
