//! Fields for ParaView and VisIt: VTK XML ImageData (`.vti`) with binary appended data, raw or
//! zlib-compressed, a grid written as pieces (one `.vti` each, by whichever process holds it)
//! with the parallel index (`.pvti`) that makes them one dataset, and `.pvd` collections
//! indexing several of them by iteration; each file written atomically ([`crate::file`]).
//! [`AppendedData`] and [`data_array`] are the encoding itself, for writers of other dataset
//! types (`ferroflow-mesh` writes `.vtu` with them).
use crate::file;
use ferroflow_core::{Points, Real, Snapshot};
use flate2::write::ZlibEncoder;
use flate2::Compression;
use std::fmt::Write as _;
use std::io::{self, Write};
use std::path::Path;

/// Uncompressed bytes per zlib block: VTK's own default, so readers size their buffers as for
/// files VTK writes.
const BLOCK_SIZE: usize = 32 * 1024;

/// Writes the grid values of `snapshot` (variables named `names`, velocity components after the
/// first, node spacing `spacing`) as `.vti`: velocity as one 3-component vector (w = 0 in 2D)
/// and every other variable (p, ...) as a scalar, in the run's precision. With `compress`
/// the arrays are zlib-compressed in blocks (`vtkZLibDataCompressor`).
pub fn write_image_data<R: Real>(
    path: &Path,
    names: &[&str],
    spacing: [f64; 3],
    snapshot: &Snapshot<R>,
    compress: bool,
) -> io::Result<()> {
    let Points::Grid { dim, .. } = snapshot.points;
    let nodes = snapshot.points.len();
    let ty = value_type::<R>();
    let extent = extent(&snapshot.points);
    let h = spacing;
    let mut xml = String::new();
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
    // One array at a time is held uncompressed when compressing.
    let mut data = AppendedData::new(compress);
    for (name, comps) in arrays(names, dim) {
        let mut raw = Vec::with_capacity(comps.len() * nodes * R::BYTES);
        for o in 0..nodes {
            for c in &comps {
                let x = c.map_or(0.0, |v| snapshot.vars[v][o].f64());
                if R::BYTES == 4 {
                    raw.extend_from_slice(&(x as f32).to_le_bytes());
                } else {
                    raw.extend_from_slice(&x.to_le_bytes());
                }
            }
        }
        let offset = data.push(raw)?;
        let _ = writeln!(xml, "        {}", data_array(ty, name, comps.len(), offset));
    }
    xml += "      </PointData>\n    </Piece>\n  </ImageData>\n";
    data.write(path, "ImageData", &xml)
}

/// The arrays of a VTK XML file in its appended-data section (`format="appended"`), encoded
/// as they are added: raw, each a UInt64 byte count and the bytes, or zlib-compressed in
/// blocks (`vtkZLibDataCompressor`). Writers of every dataset type share it.
pub struct AppendedData {
    compress: bool,
    /// Each array as (header, body parts).
    arrays: Vec<(Vec<u8>, Vec<Vec<u8>>)>,
    /// Bytes so far: the offset of the next array.
    len: usize,
}

impl AppendedData {
    /// No arrays yet; `compress` chooses zlib blocks over raw bytes for all of them.
    pub fn new(compress: bool) -> AppendedData {
        AppendedData {
            compress,
            arrays: Vec::new(),
            len: 0,
        }
    }

    /// Adds an array, `raw` its values as little-endian bytes, and returns its offset (the
    /// `offset` of its `DataArray`, see [`data_array`]).
    pub fn push(&mut self, raw: Vec<u8>) -> io::Result<usize> {
        let (header, body) = if self.compress {
            zlib_blocks(&raw)?
        } else {
            (u64_bytes(&[raw.len()]), vec![raw])
        };
        let offset = self.len;
        self.len += header.len() + body.iter().map(Vec::len).sum::<usize>();
        self.arrays.push((header, body));
        Ok(offset)
    }

    /// Writes the file at `path`, atomically: a `VTKFile` of type `kind` (`"ImageData"`,
    /// `"UnstructuredGrid"`, ...) holding `xml` (its dataset element, whose `DataArray`s
    /// refer to the arrays pushed) and then the appended data.
    pub fn write(&self, path: &Path, kind: &str, xml: &str) -> io::Result<()> {
        let mut head = String::new();
        head += "<?xml version=\"1.0\"?>\n";
        let _ = write!(
            head,
            "<VTKFile type=\"{kind}\" version=\"1.0\" byte_order=\"LittleEndian\" \
             header_type=\"UInt64\""
        );
        if self.compress {
            head += " compressor=\"vtkZLibDataCompressor\"";
        }
        head += ">\n";
        file::write_with(path, |f| {
            f.write_all(head.as_bytes())?;
            f.write_all(xml.as_bytes())?;
            f.write_all(b"  <AppendedData encoding=\"raw\">\n_")?;
            for (header, body) in &self.arrays {
                f.write_all(header)?;
                for part in body {
                    f.write_all(part)?;
                }
            }
            f.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
        })
    }
}

/// The `DataArray` element of an array of [`AppendedData`] at `offset`: VTK type `ty`
/// (`"Float64"`, `"Int64"`, `"UInt8"`, ...), `components` values per tuple; the name is
/// escaped for XML.
pub fn data_array(ty: &str, name: &str, components: usize, offset: usize) -> String {
    let mut escaped = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '&' => escaped += "&amp;",
            '<' => escaped += "&lt;",
            '>' => escaped += "&gt;",
            '"' => escaped += "&quot;",
            c => escaped.push(c),
        }
    }
    format!(
        "<DataArray type=\"{ty}\" Name=\"{escaped}\" NumberOfComponents=\"{components}\" \
         format=\"appended\" offset=\"{offset}\"/>"
    )
}

/// The arrays written for variables `names` (velocity components after the first) on a
/// `dim`-dimensional grid, as (name, variable per component): velocity as one 3-component
/// vector (a missing component written as zero), every other variable as a scalar.
fn arrays<'a>(names: &[&'a str], dim: usize) -> Vec<(&'a str, Vec<Option<usize>>)> {
    let mut arrays: Vec<(&str, Vec<Option<usize>>)> = (0..names.len())
        .filter(|v| !(1..=dim).contains(v))
        .map(|v| (names[v], vec![Some(v)]))
        .collect();
    arrays.push((
        "velocity",
        (1..=3).map(|v| (v <= dim).then_some(v)).collect(),
    ));
    arrays
}

/// VTK's name of the type of `R`.
fn value_type<R: Real>() -> &'static str {
    if R::BYTES == 4 {
        "Float32"
    } else {
        "Float64"
    }
}

/// The node index range of `points` per axis, in VTK's `Extent` form (global indices).
fn extent(points: &Points) -> String {
    let Points::Grid { n, offset, .. } = points;
    let range = |d: usize| format!("{} {}", offset[d], offset[d] + n[d] - 1);
    format!("{} {} {}", range(0), range(1), range(2))
}

/// Writes the index (`.pvti`) of a grid of `whole` nodes per axis written as `pieces`, each a
/// `.vti` of [`write_image_data`] (file name relative to the index, and its points): one dataset
/// for ParaView and VTK. Pieces share their boundary nodes with their neighbours, so that no
/// cell is missing between them.
pub fn write_parallel_image_data<R: Real>(
    path: &Path,
    names: &[&str],
    spacing: [f64; 3],
    whole: Points,
    pieces: &[(String, Points)],
) -> io::Result<()> {
    let Points::Grid { dim, .. } = whole;
    let ty = value_type::<R>();
    let h = spacing;
    let mut xml = String::new();
    xml += "<?xml version=\"1.0\"?>\n";
    xml += "<VTKFile type=\"PImageData\" version=\"1.0\" byte_order=\"LittleEndian\" \
            header_type=\"UInt64\">\n";
    let _ = writeln!(
        xml,
        "  <PImageData WholeExtent=\"{}\" GhostLevel=\"0\" Origin=\"0 0 0\" \
         Spacing=\"{} {} {}\">",
        extent(&whole),
        h[0],
        h[1],
        h[2]
    );
    let _ = writeln!(
        xml,
        "    <PPointData Scalars=\"{}\" Vectors=\"velocity\">",
        names[0]
    );
    for (name, comps) in arrays(names, dim) {
        let _ = writeln!(
            xml,
            "      <PDataArray type=\"{ty}\" Name=\"{name}\" NumberOfComponents=\"{}\"/>",
            comps.len()
        );
    }
    xml += "    </PPointData>\n";
    for (file, points) in pieces {
        let _ = writeln!(
            xml,
            "    <Piece Extent=\"{}\" Source=\"{file}\"/>",
            extent(points)
        );
    }
    xml += "  </PImageData>\n</VTKFile>\n";
    file::write(path, xml)
}

/// `values` as the UInt64 little-endian integers of the file's `header_type`.
fn u64_bytes(values: &[usize]) -> Vec<u8> {
    values
        .iter()
        .flat_map(|&v| (v as u64).to_le_bytes())
        .collect()
}

/// `raw` compressed as VTK reads it: a header (block count, uncompressed block size,
/// uncompressed size of a partial last block or 0, each block's compressed size) and the
/// blocks, each an independent zlib stream of at most [`BLOCK_SIZE`] bytes.
fn zlib_blocks(raw: &[u8]) -> io::Result<(Vec<u8>, Vec<Vec<u8>>)> {
    let blocks = raw
        .chunks(BLOCK_SIZE)
        .map(|block| {
            let mut z = ZlibEncoder::new(Vec::new(), Compression::default());
            z.write_all(block)?;
            z.finish()
        })
        .collect::<io::Result<Vec<_>>>()?;
    let mut header = vec![blocks.len(), BLOCK_SIZE, raw.len() % BLOCK_SIZE];
    header.extend(blocks.iter().map(Vec::len));
    Ok((u64_bytes(&header), blocks))
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
    file::write(path, xml)
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::read::ZlibDecoder;
    use std::io::Read;

    /// The array offsets of a `.vti` written here (from its XML) and its appended data (the
    /// bytes after the `_` that opens it).
    fn appended(file: &[u8]) -> (Vec<usize>, &[u8]) {
        let start = file.windows(3).position(|w| w == b">\n_").unwrap() + 3;
        let xml = std::str::from_utf8(&file[..start]).unwrap();
        let offsets = xml
            .split("offset=\"")
            .skip(1)
            .map(|s| s[..s.find('"').unwrap()].parse().unwrap())
            .collect();
        (offsets, &file[start..])
    }

    fn u64_at(data: &[u8], i: usize) -> usize {
        u64::from_le_bytes(data[8 * i..8 * i + 8].try_into().unwrap()) as usize
    }

    /// The array at `offset` of raw appended data.
    fn raw_array(data: &[u8], offset: usize) -> &[u8] {
        let data = &data[offset..];
        &data[8..8 + u64_at(data, 0)]
    }

    /// The array at `offset` of zlib appended data, each block checked against its header.
    fn inflate_array(data: &[u8], offset: usize) -> (Vec<u8>, usize) {
        let data = &data[offset..];
        let (blocks, size, last) = (u64_at(data, 0), u64_at(data, 1), u64_at(data, 2));
        assert_eq!(size, BLOCK_SIZE);
        let mut start = 8 * (3 + blocks);
        let mut out = Vec::new();
        for b in 0..blocks {
            let compressed = u64_at(data, 3 + b);
            let mut block = Vec::new();
            ZlibDecoder::new(&data[start..start + compressed])
                .read_to_end(&mut block)
                .unwrap();
            let full = b + 1 < blocks || last == 0;
            assert_eq!(block.len(), if full { size } else { last }, "block {b}");
            out.extend(block);
            start += compressed;
        }
        (out, blocks)
    }

    /// Writes fields of `nodes` raw and compressed and returns, per array, the block count and
    /// whether the compressed file inflates to the raw bytes exactly.
    fn round_trip<R: Real>(nodes: Vec<usize>, name: &str) -> Vec<(usize, bool)> {
        let mut n = [1; 3];
        n[..nodes.len()].copy_from_slice(&nodes);
        let points = Points::grid(nodes.len(), n);
        let names = &["p", "u", "v", "w"][..1 + nodes.len()];
        let vars = (0..names.len())
            .map(|v| {
                (0..points.len())
                    .map(|i| R::of((0.37 * (i + 1000 * v) as f64).sin()))
                    .collect()
            })
            .collect();
        let snapshot = Snapshot { points, vars };
        let dir = std::env::temp_dir().join(format!("ferroflow-vtk-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |compress, file: &str| {
            let path = dir.join(format!("{file}.vti"));
            write_image_data(&path, names, [0.1; 3], &snapshot, compress).unwrap();
            std::fs::read(path).unwrap()
        };
        let (raw, zlib) = (write(false, "raw"), write(true, "zlib"));
        assert_eq!(
            write(true, "again"),
            zlib,
            "compression is not deterministic"
        );
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(!String::from_utf8_lossy(&raw).contains("compressor"));
        assert!(String::from_utf8_lossy(&zlib)
            .contains("header_type=\"UInt64\" compressor=\"vtkZLibDataCompressor\">"));
        let ((raw_offsets, raw), (zlib_offsets, zlib)) = (appended(&raw), appended(&zlib));
        assert_eq!(raw_offsets.len(), zlib_offsets.len());
        raw_offsets
            .iter()
            .zip(&zlib_offsets)
            .map(|(&r, &z)| {
                let (inflated, blocks) = inflate_array(zlib, z);
                (blocks, inflated == raw_array(raw, r))
            })
            .collect()
    }

    #[test]
    fn compressed_arrays_inflate_to_the_raw_bytes() {
        // f32 65²: p (16 900 bytes) in one partial block, velocity (50 700) in two.
        assert_eq!(
            round_trip::<f32>(vec![65, 65], "f32"),
            [(1, true), (2, true)]
        );
        // f64 128 x 64: p (65 536 bytes) and velocity (196 608) fill whole blocks exactly.
        assert_eq!(
            round_trip::<f64>(vec![128, 64], "f64"),
            [(2, true), (6, true)]
        );
    }

    #[test]
    fn the_parallel_index_lists_the_arrays_and_each_piece_with_its_global_extent() {
        let dir = std::env::temp_dir().join(format!("ferroflow-pvti-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("fields.pvti");
        let piece = |offset: [usize; 3], n: [usize; 3]| Points::Grid { dim: 2, n, offset };
        let pieces = [
            ("fields/a.vti".to_string(), piece([0, 0, 0], [5, 9, 1])),
            ("fields/b.vti".to_string(), piece([4, 0, 0], [4, 9, 1])),
        ];
        let whole = Points::grid(2, [8, 9, 1]);
        write_parallel_image_data::<f32>(&path, &["p", "u", "v"], [0.5; 3], whole, &pieces)
            .unwrap();
        let xml = std::fs::read_to_string(&path).unwrap();
        for line in [
            "<VTKFile type=\"PImageData\"",
            "<PImageData WholeExtent=\"0 7 0 8 0 0\" GhostLevel=\"0\" Origin=\"0 0 0\" \
             Spacing=\"0.5 0.5 0.5\">",
            "<PDataArray type=\"Float32\" Name=\"p\" NumberOfComponents=\"1\"/>",
            "<PDataArray type=\"Float32\" Name=\"velocity\" NumberOfComponents=\"3\"/>",
            "<Piece Extent=\"0 4 0 8 0 0\" Source=\"fields/a.vti\"/>",
            "<Piece Extent=\"4 7 0 8 0 0\" Source=\"fields/b.vti\"/>",
        ] {
            assert!(xml.contains(line), "{line} missing from\n{xml}");
        }
        // A piece written on its own carries its global extent.
        let snapshot = Snapshot {
            points: pieces[1].1,
            vars: vec![vec![0.0f32; 36]; 3],
        };
        write_image_data(
            &dir.join("b.vti"),
            &["p", "u", "v"],
            [0.5; 3],
            &snapshot,
            false,
        )
        .unwrap();
        let text = String::from_utf8_lossy(&std::fs::read(dir.join("b.vti")).unwrap()).to_string();
        assert!(text.contains("<Piece Extent=\"4 7 0 8 0 0\">"), "{text}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
