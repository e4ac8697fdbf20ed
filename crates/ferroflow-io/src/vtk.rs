//! Fields for ParaView and VisIt: VTK XML ImageData (`.vti`) with raw binary appended data,
//! and `.pvd` collections indexing several of them by iteration.
use ferroflow_core::{Fields, Problem, Real};
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// Writes the node values of `fields` as `.vti`: velocity as one 3-component vector (w = 0 in
/// 2D) and every other variable (p, ...) as a scalar, in the run's precision.
pub fn write_image_data<R: Real>(
    path: &Path,
    problem: &Problem<R>,
    fields: &Fields<R>,
) -> io::Result<()> {
    let l = fields.layout;
    let dim = l.dim;
    let names = problem.variable_names();
    // (name, variables per point); a missing velocity component is written as zero.
    let mut arrays: Vec<(&str, Vec<Option<usize>>)> = (0..names.len())
        .filter(|v| !(1..=dim).contains(v))
        .map(|v| (names[v], vec![Some(v)]))
        .collect();
    arrays.push((
        "velocity",
        (1..=3).map(|v| (v <= dim).then_some(v)).collect(),
    ));

    let ty = if R::BYTES == 4 { "Float32" } else { "Float64" };
    let extent = format!("0 {} 0 {} 0 {}", l.n[0] - 1, l.n[1] - 1, l.n[2] - 1);
    let h = problem.spacing;
    let mut xml = String::new();
    xml += "<?xml version=\"1.0\"?>\n";
    xml += "<VTKFile type=\"ImageData\" version=\"1.0\" byte_order=\"LittleEndian\" \
            header_type=\"UInt64\">\n";
    let _ = writeln!(
        xml,
        "  <ImageData WholeExtent=\"{extent}\" Origin=\"0 0 0\" Spacing=\"{} {} {}\">",
        h[0], h[1], h[2]
    );
    let _ = writeln!(xml, "    <Piece Extent=\"{extent}\">");
    let _ = writeln!(
        xml,
        "      <PointData Scalars=\"{}\" Vectors=\"velocity\">",
        names[0]
    );
    let mut offset = 0;
    for (name, comps) in &arrays {
        let _ = writeln!(
            xml,
            "        <DataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{}\" \
             format=\"appended\" offset=\"{offset}\"/>",
            comps.len()
        );
        offset += 8 + comps.len() * l.nodes() * R::BYTES;
    }
    xml += "      </PointData>\n    </Piece>\n  </ImageData>\n  <AppendedData encoding=\"raw\">\n_";

    let mut data = Vec::with_capacity(offset);
    for (_, comps) in &arrays {
        data.extend_from_slice(&((comps.len() * l.nodes() * R::BYTES) as u64).to_le_bytes());
        l.for_each_node(|_, _, _, o| {
            for c in comps {
                let x = c.map_or(0.0, |v| fields.vars[v][o].f64());
                if R::BYTES == 4 {
                    data.extend_from_slice(&(x as f32).to_le_bytes());
                } else {
                    data.extend_from_slice(&x.to_le_bytes());
                }
            }
        });
    }
    let mut f = io::BufWriter::new(std::fs::File::create(path)?);
    f.write_all(xml.as_bytes())?;
    f.write_all(&data)?;
    f.write_all(b"\n  </AppendedData>\n</VTKFile>\n")?;
    f.flush()
}

/// Writes a `.pvd` collection: `(iteration, file name relative to the .pvd)` per data set.
pub fn write_collection(path: &Path, datasets: &[(usize, String)]) -> io::Result<()> {
    let mut xml = String::new();
    xml += "<?xml version=\"1.0\"?>\n";
    xml += "<VTKFile type=\"Collection\" version=\"1.0\" byte_order=\"LittleEndian\">\n";
    xml += "  <Collection>\n";
    for (iteration, file) in datasets {
        let _ = writeln!(
            xml,
            "    <DataSet timestep=\"{iteration}\" part=\"0\" file=\"{file}\"/>"
        );
    }
    xml += "  </Collection>\n</VTKFile>\n";
    std::fs::write(path, xml)
}
