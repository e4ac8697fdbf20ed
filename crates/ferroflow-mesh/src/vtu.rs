//! `.vtu` output for ParaView and VisIt: a [`Mesh`] with fields on its nodes and cells as VTK
//! XML UnstructuredGrid, in the encoding of ferroflow-io's `.vti` ([`AppendedData`]: binary
//! appended arrays with UInt64 headers, raw or zlib-compressed), each file written atomically.
//! [`write_boundary`] writes the boundary faces instead, with their patch numbers.
//!
//! A series (one `.vtu` per iteration) is a `.pvd` collection: write each step's file, say
//! `fields_00000100.vtu`, then `ferroflow_io::vtk::write_collection(pvd, &steps)` with
//! `steps` every `(iteration, file name relative to the .pvd)` so far; rewriting the `.pvd`
//! after each step keeps the series readable while a run goes on.
use crate::mesh::{Elements, Mesh};
use ferroflow_io::vtk::{data_array, AppendedData};
use std::fmt::Write as _;
use std::io;
use std::path::Path;

/// An array of values on the nodes or the cells, in Float64.
#[derive(Debug, Clone, Copy)]
pub struct Field<'a> {
    /// Its name in the file.
    pub name: &'a str,
    /// Values per node or cell: 1 for a scalar, 3 for a vector.
    pub components: usize,
    /// The values, a node's (or cell's) components together: `components` × nodes (or cells).
    pub values: &'a [f64],
}

/// An array as the file holds it: VTK type, name, components, values as little-endian bytes.
struct Array<'a> {
    ty: &'static str,
    name: &'a str,
    components: usize,
    raw: Vec<u8>,
}

impl<'a> From<&Field<'a>> for Array<'a> {
    fn from(field: &Field<'a>) -> Array<'a> {
        Array {
            ty: "Float64",
            name: field.name,
            components: field.components,
            raw: field.values.iter().flat_map(|x| x.to_le_bytes()).collect(),
        }
    }
}

/// Writes `mesh` as `.vtu` at `path` with `point_data` on its nodes and `cell_data` on its
/// cells, zlib-compressed with `compress`. A field whose length is not its components × the
/// nodes (or cells) is refused ([`io::ErrorKind::InvalidInput`], naming it) before anything is
/// written.
pub fn write(
    path: &Path,
    mesh: &Mesh,
    point_data: &[Field],
    cell_data: &[Field],
    compress: bool,
) -> io::Result<()> {
    check(point_data, mesh.nodes.len(), "node")?;
    check(cell_data, mesh.cells.len(), "cell")?;
    write_grid(
        path,
        &mesh.nodes,
        &mesh.cells,
        point_data.iter().map(Array::from),
        cell_data.iter().map(Array::from),
        compress,
    )
}

/// Writes the boundary faces of `mesh` as `.vtu` at `path`, each with its patch number (an
/// index into `mesh.patches`) as the cell array `patch` (UInt32), zlib-compressed with
/// `compress`.
pub fn write_boundary(path: &Path, mesh: &Mesh, compress: bool) -> io::Result<()> {
    let patch = Array {
        ty: "UInt32",
        name: "patch",
        components: 1,
        raw: mesh
            .face_patch
            .iter()
            .flat_map(|p| p.to_le_bytes())
            .collect(),
    };
    write_grid(
        path,
        &mesh.nodes,
        &mesh.faces,
        std::iter::empty(),
        std::iter::once(patch),
        compress,
    )
}

/// An [`io::ErrorKind::InvalidInput`] error naming the first of `fields` that does not hold
/// whole values for `n` `what`s.
fn check(fields: &[Field], n: usize, what: &str) -> io::Result<()> {
    for f in fields {
        let wrong = if f.components == 0 {
            format!("{what} field \"{}\" has no components", f.name)
        } else if f.values.len() != f.components * n {
            format!(
                "{what} field \"{}\" has {} values, not {} × {n} {what}s",
                f.name,
                f.values.len(),
                f.components
            )
        } else {
            continue;
        };
        return Err(io::Error::new(io::ErrorKind::InvalidInput, wrong));
    }
    Ok(())
}

/// Writes `elements` on `nodes` with the arrays `point_data` and `cell_data`, converted to
/// bytes only when their turn comes, so that one field at a time is held uncompressed.
fn write_grid<'a>(
    path: &Path,
    nodes: &[[f64; 3]],
    elements: &Elements,
    point_data: impl Iterator<Item = Array<'a>>,
    cell_data: impl Iterator<Item = Array<'a>>,
    compress: bool,
) -> io::Result<()> {
    let mut data = AppendedData::new(compress);
    let mut xml = String::new();
    let mut add = |xml: &mut String, array: Array| -> io::Result<()> {
        let offset = data.push(array.raw)?;
        let element = data_array(array.ty, array.name, array.components, offset);
        let _ = writeln!(xml, "        {element}");
        Ok(())
    };
    let _ = writeln!(
        xml,
        "  <UnstructuredGrid>\n    <Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">",
        nodes.len(),
        elements.len()
    );
    xml += "      <Points>\n";
    add(
        &mut xml,
        Array {
            ty: "Float64",
            name: "Points",
            components: 3,
            raw: nodes
                .iter()
                .flatten()
                .flat_map(|x| x.to_le_bytes())
                .collect(),
        },
    )?;
    xml += "      </Points>\n      <Cells>\n";
    let connectivity = elements.connectivity().iter();
    let connectivity = connectivity.flat_map(|&n| i64::from(n).to_le_bytes());
    // VTK's offsets are where each cell ends: the compressed rows' without the first 0.
    let offsets = elements.offsets()[1..].iter();
    let offsets = offsets.flat_map(|&o| (o as i64).to_le_bytes());
    let types = elements.iter().map(|(kind, _)| kind.vtk());
    for (ty, name, raw) in [
        ("Int64", "connectivity", connectivity.collect()),
        ("Int64", "offsets", offsets.collect()),
        ("UInt8", "types", types.collect()),
    ] {
        let components = 1;
        add(
            &mut xml,
            Array {
                ty,
                name,
                components,
                raw,
            },
        )?;
    }
    xml += "      </Cells>\n      <PointData>\n";
    for array in point_data {
        add(&mut xml, array)?;
    }
    xml += "      </PointData>\n      <CellData>\n";
    for array in cell_data {
        add(&mut xml, array)?;
    }
    xml += "      </CellData>\n    </Piece>\n  </UnstructuredGrid>\n";
    data.write(path, "UnstructuredGrid", &xml)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::Kind;

    /// A tetrahedron on the base of a pyramid: 6 nodes, 2 cells of 4 and 5 nodes, a triangle
    /// and a quadrilateral of the boundary in two patches.
    fn tet_and_pyramid() -> Mesh {
        let nodes = vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [1.0, 1.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.5, 0.5, 1.0],
            [0.5, 0.5, -1.0],
        ];
        let mut cells = Elements::default();
        cells.push(Kind::Tet4, &[0, 2, 1, 5]);
        cells.push(Kind::Pyramid5, &[0, 1, 2, 3, 4]);
        let mut faces = Elements::default();
        faces.push(Kind::Tri3, &[0, 1, 4]);
        faces.push(Kind::Quad4, &[0, 3, 2, 1]);
        let patches = vec!["side".to_string(), "base".to_string()];
        Mesh::new(3, nodes, cells, faces, vec![0, 1], patches).unwrap()
    }

    /// The XML of a file written here (up to its appended data) and the appended bytes.
    fn split(file: &[u8]) -> (String, &[u8]) {
        let start = file.windows(2).position(|w| w == b"\n_").unwrap() + 2;
        let xml = String::from_utf8(file[..start].to_vec()).unwrap();
        (xml, &file[start..])
    }

    /// The raw array at `offset` of the appended data.
    fn raw_array(data: &[u8], offset: usize) -> &[u8] {
        let len = u64::from_le_bytes(data[offset..offset + 8].try_into().unwrap()) as usize;
        &data[offset + 8..offset + 8 + len]
    }

    fn int64s(raw: &[u8]) -> Vec<i64> {
        raw.chunks(8)
            .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn the_header_names_each_array_with_its_count_and_offset() {
        let mesh = tet_and_pyramid();
        let p: Vec<f64> = (0..6).map(|i| i as f64 * 0.5).collect();
        let u = vec![0.25; 18];
        let q = [7.0, -1.0];
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("mesh.vtu");
        let point_data = [
            Field {
                name: "p",
                components: 1,
                values: &p,
            },
            Field {
                name: "velocity",
                components: 3,
                values: &u,
            },
        ];
        let cell_data = [Field {
            name: "q<1>",
            components: 1,
            values: &q,
        }];
        write(&path, &mesh, &point_data, &cell_data, false).unwrap();
        let file = std::fs::read(&path).unwrap();
        let (xml, data) = split(&file);
        // Each array is a UInt64 byte count and its bytes: points 6 × 24 bytes, connectivity
        // 9 × 8, offsets 2 × 8, types 2, p 6 × 8, velocity 18 × 8, q 2 × 8.
        let array = |ty: &str, name: &str, comps: usize, offset: usize| {
            format!(
                "        <DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{comps}\" \
                 format=\"appended\" offset=\"{offset}\"/>\n"
            )
        };
        let expected = [
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" \
             byte_order=\"LittleEndian\" header_type=\"UInt64\">\n",
            "  <UnstructuredGrid>\n    <Piece NumberOfPoints=\"6\" NumberOfCells=\"2\">\n",
            "      <Points>\n",
            &array("Float64", "Points", 3, 0),
            "      </Points>\n      <Cells>\n",
            &array("Int64", "connectivity", 1, 152),
            &array("Int64", "offsets", 1, 232),
            &array("UInt8", "types", 1, 256),
            "      </Cells>\n      <PointData>\n",
            &array("Float64", "p", 1, 266),
            &array("Float64", "velocity", 3, 322),
            "      </PointData>\n      <CellData>\n",
            &array("Float64", "q&lt;1&gt;", 1, 474),
            "      </CellData>\n    </Piece>\n  </UnstructuredGrid>\n",
            "  <AppendedData encoding=\"raw\">\n_",
        ]
        .concat();
        assert_eq!(xml, expected);
        assert_eq!(
            data.len(),
            474 + 8 + 16 + "\n  </AppendedData>\n</VTKFile>\n".len()
        );
        assert_eq!(int64s(raw_array(data, 152)), [0, 2, 1, 5, 0, 1, 2, 3, 4]);
        assert_eq!(int64s(raw_array(data, 232)), [4, 9]);
        assert_eq!(raw_array(data, 256), [10, 14]);
        assert_eq!(
            raw_array(data, 474),
            [7.0f64.to_le_bytes(), (-1.0f64).to_le_bytes()].concat()
        );
    }

    #[test]
    fn the_boundary_is_its_faces_with_their_patch_numbers() {
        let mesh = tet_and_pyramid();
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("boundary.vtu");
        write_boundary(&path, &mesh, false).unwrap();
        let file = std::fs::read(&path).unwrap();
        let (xml, data) = split(&file);
        assert!(
            xml.contains("<Piece NumberOfPoints=\"6\" NumberOfCells=\"2\">"),
            "{xml}"
        );
        // Points 152 bytes, connectivity 8 + 7 × 8, offsets 8 + 2 × 8, types 8 + 2.
        let patch = "<CellData>\n        <DataArray type=\"UInt32\" Name=\"patch\" \
                     NumberOfComponents=\"1\" format=\"appended\" offset=\"250\"/>";
        assert!(xml.contains(patch), "{xml}");
        assert_eq!(int64s(raw_array(data, 152)), [0, 1, 4, 0, 3, 2, 1]);
        assert_eq!(raw_array(data, 240), [5, 9]);
        assert_eq!(raw_array(data, 250), [0, 0, 0, 0, 1, 0, 0, 0]);
    }

    #[test]
    fn fields_of_the_wrong_length_are_refused_and_nothing_is_written() {
        let mesh = tet_and_pyramid();
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("mesh.vtu");
        let values = [0.0; 12];
        let field = |name, components, n| Field {
            name,
            components,
            values: &values[..n],
        };
        let cases = [
            (
                vec![field("p", 1, 6), field("velocity", 3, 12)],
                vec![],
                "node field \"velocity\" has 12 values, not 3 × 6 nodes",
            ),
            (
                vec![field("p", 1, 6)],
                vec![field("q", 1, 3)],
                "cell field \"q\" has 3 values, not 1 × 2 cells",
            ),
            (
                vec![],
                vec![field("empty", 0, 0)],
                "cell field \"empty\" has no components",
            ),
        ];
        for (point_data, cell_data, message) in cases {
            let e = write(&path, &mesh, &point_data, &cell_data, true).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
            assert_eq!(e.to_string(), message);
            assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }
}
