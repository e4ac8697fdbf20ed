//! The Gmsh reader on meshes that the real Gmsh writes from `geo/*.geo`, in MSH 2.2 and 4.1,
//! ASCII and binary. Needs the `gmsh` executable in the environment variable FERROFLOW_GMSH:
//!
//! ```text
//! FERROFLOW_GMSH=/path/to/gmsh cargo test -p ferroflow-mesh --test gmsh_real -- --ignored
//! ```
use ferroflow_mesh::{check, gmsh, topology, Kind, Mesh};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs Gmsh on `geo/NAME.geo` with `args`, writing `out`.
fn run_gmsh(name: &str, args: &[&str], out: &Path) {
    let Some(exe) = std::env::var_os("FERROFLOW_GMSH") else {
        panic!("set FERROFLOW_GMSH to the gmsh executable to run the tests of tests/gmsh_real.rs");
    };
    let geo = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("geo/{name}.geo"));
    let output = Command::new(&exe)
        .arg(&geo)
        .args(args)
        .arg("-o")
        .arg(out)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", PathBuf::from(&exe).display()));
    // Gmsh reports some errors (in .geo files, say) and carries on, exiting with 0.
    let log = String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && !log.lines().any(|l| l.starts_with("Error")),
        "gmsh {} failed:\n{log}",
        geo.display()
    );
}

/// The 3D mesh of `geo/NAME.geo`, written by Gmsh in the four forms and read from each: the
/// two binary forms must give the same mesh, and the two ASCII forms that mesh with its
/// coordinates rounded to the 16 significant digits Gmsh writes (`%.16g`, not always enough
/// to give back the same `f64`).
fn mesh(name: &str) -> Mesh {
    let dir = tempfile::tempdir().unwrap();
    let [ascii22, binary22, ascii41, binary41] = [
        ("msh22", false),
        ("msh22", true),
        ("msh41", false),
        ("msh41", true),
    ]
    .map(|(format, binary)| {
        let out = dir.path().join(format!("{name}-{format}-{binary}.msh"));
        let mut args = vec!["-3", "-format", format];
        if binary {
            args.push("-bin");
        }
        run_gmsh(name, &args, &out);
        gmsh::read(&out).unwrap_or_else(|e| panic!("{e}"))
    });
    assert!(
        binary22 == binary41,
        "{name}: binary MSH 2.2 and 4.1 differ"
    );
    assert!(ascii22 == ascii41, "{name}: ASCII MSH 2.2 and 4.1 differ");
    let mut rounded = binary41.clone();
    for x in rounded.nodes.iter_mut().flatten() {
        *x = format!("{:.15e}", *x).parse().unwrap();
    }
    assert!(rounded == ascii22, "{name}: ASCII and binary differ");
    binary41
}

/// Checks the mesh (positive volumes, closed cells, one orientation, a watertight boundary,
/// every boundary face in a patch); returns its volume.
fn total_volume(mesh: &Mesh) -> f64 {
    check::check(mesh).unwrap_or_else(|e| panic!("{e}")).volume
}

/// Nodes of the boundary faces of patch `name`, with the total area of those faces.
fn patch(mesh: &Mesh, name: &str) -> (Vec<[f64; 3]>, f64) {
    let p = mesh.patches.iter().position(|n| n == name).unwrap() as u32;
    let mut nodes = Vec::new();
    let mut area = 0.0;
    for (f, (_, face)) in mesh.faces.iter().enumerate() {
        if mesh.face_patch[f] == p {
            nodes.extend(face.iter().map(|&n| mesh.nodes[n as usize]));
            let (s, _) = topology::face_geometry(&topology::points(mesh, face));
            area += topology::norm(s);
        }
    }
    assert!(!nodes.is_empty(), "patch {name} has no faces");
    (nodes, area)
}

/// Checks that every node of patch `name` has coordinate `axis` equal to `value`; returns the
/// patch's area.
fn plane(mesh: &Mesh, name: &str, axis: usize, value: f64) -> f64 {
    let (nodes, area) = patch(mesh, name);
    for x in nodes {
        assert!((x[axis] - value).abs() < 1e-12, "{name}: node at {x:?}");
    }
    area
}

#[test]
#[ignore = "needs Gmsh: set FERROFLOW_GMSH to the gmsh executable"]
fn cube_of_tetrahedra() {
    let mesh = mesh("cube-tets");
    assert_eq!(mesh.dim, 3);
    let counts = mesh.cells.counts();
    assert_eq!(counts.keys().collect::<Vec<_>>(), [&Kind::Tet4]);
    assert!((1000..20_000).contains(&mesh.cells.len()), "{counts:?}");
    assert!((total_volume(&mesh) - 1.0).abs() < 1e-12);
    assert_eq!(
        mesh.patches,
        ["xmin", "xmax", "ymin", "ymax", "zmin", "zmax"]
    );
    let mut area = 0.0;
    for (axis, names) in [["xmin", "xmax"], ["ymin", "ymax"], ["zmin", "zmax"]]
        .iter()
        .enumerate()
    {
        area += plane(&mesh, names[0], axis, 0.0) + plane(&mesh, names[1], axis, 1.0);
    }
    assert!((area - 6.0).abs() < 1e-12, "boundary area {area}");
}

#[test]
#[ignore = "needs Gmsh: set FERROFLOW_GMSH to the gmsh executable"]
fn dfg_channel_around_a_cylinder() {
    let mesh = mesh("dfg-channel");
    assert_eq!(
        mesh.cells.counts().keys().collect::<Vec<_>>(),
        [&Kind::Tet4]
    );
    assert!(mesh.cells.len() <= 50_000, "{} cells", mesh.cells.len());
    let exact = 2.5 * 0.41 * 0.41 - std::f64::consts::PI * 0.05f64.powi(2) * 0.41;
    let v = total_volume(&mesh);
    assert!((v / exact - 1.0).abs() < 0.01, "volume {v}, exact {exact}");
    assert_eq!(mesh.patches, ["inlet", "outlet", "walls", "cylinder"]);
    plane(&mesh, "inlet", 0, 0.0);
    plane(&mesh, "outlet", 0, 2.5);
    for x in patch(&mesh, "cylinder").0 {
        let r = (x[0] - 0.5).hypot(x[1] - 0.2);
        assert!((r - 0.05).abs() < 1e-9, "cylinder node at {x:?}");
    }
    for x in patch(&mesh, "walls").0 {
        let on_wall = [x[1], x[2], 0.41 - x[1], 0.41 - x[2]]
            .iter()
            .any(|d| d.abs() < 1e-12);
        assert!(on_wall, "wall node at {x:?}");
    }
}

#[test]
#[ignore = "needs Gmsh: set FERROFLOW_GMSH to the gmsh executable"]
fn hexahedra_and_prisms() {
    let mesh = mesh("mixed");
    let counts = mesh.cells.counts();
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        [&Kind::Prism6, &Kind::Hex8],
        "{counts:?}"
    );
    assert!((total_volume(&mesh) - 1.0).abs() < 1e-12);
    // Physical groups are numbered in the order the file defines them.
    assert_eq!(
        mesh.patches,
        ["zmin", "zmax", "ymin", "xmax", "ymax", "xmin"]
    );
    let area = plane(&mesh, "xmin", 0, 0.0)
        + plane(&mesh, "xmax", 0, 2.0)
        + plane(&mesh, "ymin", 1, 0.0)
        + plane(&mesh, "ymax", 1, 1.0)
        + plane(&mesh, "zmin", 2, 0.0)
        + plane(&mesh, "zmax", 2, 0.5);
    assert!((area - 7.0).abs() < 1e-12, "boundary area {area}");
}

#[test]
#[ignore = "needs Gmsh: set FERROFLOW_GMSH to the gmsh executable"]
fn hexahedra_tetrahedra_and_pyramids() {
    let mesh = mesh("hybrid");
    let counts = mesh.cells.counts();
    assert_eq!(
        counts.keys().collect::<Vec<_>>(),
        [&Kind::Tet4, &Kind::Pyramid5, &Kind::Hex8],
        "{counts:?}"
    );
    assert!((total_volume(&mesh) - 2.0).abs() < 1e-12);
    assert_eq!(mesh.patches, ["xmin", "xmax", "walls"]);
    let area =
        plane(&mesh, "xmin", 0, 0.0) + plane(&mesh, "xmax", 0, 2.0) + patch(&mesh, "walls").1;
    assert!((area - 10.0).abs() < 1e-12, "boundary area {area}");
}

#[test]
#[ignore = "needs Gmsh: set FERROFLOW_GMSH to the gmsh executable"]
fn dfg_channel_in_blocks_splits_into_mirror_symmetric_tetrahedra() {
    use ferroflow_mesh::tetrahedra::{split_prisms, Mirror};
    use std::collections::HashSet;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("blocks.msh");
    run_gmsh("dfg-channel-blocks", &["-3", "-setnumber", "n", "2"], &out);
    let prisms = gmsh::read(&out).unwrap_or_else(|e| panic!("{e}"));
    let counts = prisms.cells.counts();
    assert_eq!(counts.keys().collect::<Vec<_>>(), [&Kind::Prism6]);
    assert_eq!(prisms.patches, ["inlet", "outlet", "walls", "cylinder"]);
    let (yc, zc) = (0.2, 0.205);
    let mesh = split_prisms(&prisms, Some(Mirror { y: yc, z: zc })).unwrap();
    // The cylinder is a polygon of 16 sides (n = 2 per 45 degrees): its area is the circle's
    // times sin(2x) / 2x, x = pi / 16.
    let x = std::f64::consts::PI / 16.0;
    let cylinder = std::f64::consts::PI * 0.05f64.powi(2) * 0.41 * (x.sin() * x.cos() / x);
    let exact = 2.5 * 0.41 * 0.41 - cylinder;
    let v = total_volume(&mesh);
    assert!((v - exact).abs() < 1e-12, "volume {v}, exact {exact}");
    plane(&mesh, "inlet", 0, 0.0);
    plane(&mesh, "outlet", 0, 2.5);
    for x in patch(&mesh, "cylinder").0 {
        let r = (x[0] - 0.5).hypot(x[1] - yc);
        assert!((r - 0.05).abs() < 1e-9, "cylinder node at {x:?}");
    }
    // Every tetrahedron has its mirror image in z = 0.205 and, between y = 0.05 and 0.35
    // (the blocks around the cylinder), in y = 0.2: nodes matched to 1e-9 m.
    let key = |p: [f64; 3]| p.map(|v| (v * 1e9).round() as i64);
    let at: std::collections::HashMap<_, _> = (mesh.nodes.iter().enumerate())
        .map(|(i, &p)| (key(p), i))
        .collect();
    let tets: HashSet<Vec<usize>> = (mesh.cells.iter())
        .map(|(_, ns)| {
            let mut t: Vec<usize> = ns.iter().map(|&n| n as usize).collect();
            t.sort();
            t
        })
        .collect();
    let has_image = |t: &Vec<usize>, image: &dyn Fn([f64; 3]) -> [f64; 3]| {
        let mut m: Vec<usize> = (t.iter())
            .map(|&n| {
                at.get(&key(image(mesh.nodes[n])))
                    .copied()
                    .unwrap_or(usize::MAX)
            })
            .collect();
        m.sort();
        tets.contains(&m)
    };
    let in_z = |p: [f64; 3]| [p[0], p[1], 2.0 * zc - p[2]];
    let in_y = |p: [f64; 3]| [p[0], 2.0 * yc - p[1], p[2]];
    let near = |t: &&Vec<usize>| {
        t.iter()
            .all(|&n| (mesh.nodes[n][1] - yc).abs() <= 0.15 + 1e-9)
    };
    assert!(tets.iter().all(|t| has_image(t, &in_z)));
    let band: Vec<_> = tets.iter().filter(near).collect();
    assert!(
        band.len() > tets.len() / 2,
        "{} of {}",
        band.len(),
        tets.len()
    );
    assert!(band.iter().all(|t| has_image(t, &in_y)));
}
