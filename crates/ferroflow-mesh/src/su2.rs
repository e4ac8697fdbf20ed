//! SU2's native mesh format (`.su2`, text, one zone): [`read`], [`parse`], [`write`].
//!
//! A file is keyword lines `KEY= value`, each followed by its data lines. `NDIME=` (2 or 3)
//! comes first; then, in either order, `NELEM= n` with n element lines
//! `VTK_TYPE node… [element number]` and `NPOIN= n [owned]` with n point lines
//! `x y [z] [point number]` (z in 3D only); then `NMARK= n` with, per marker,
//! `MARKER_TAG= name`, `MARKER_ELEMS= m` and m element lines one dimension lower. `%` starts a
//! comment. Types are VTK's numbers and node orders, which are ours ([`Kind::from_vtk`]); node
//! numbers count from 0. Markers become patches, in file order. Trailing element and point
//! numbers must be numbers and are otherwise ignored, as is everything from the first `FFD_`
//! keyword on (free-form deformation boxes, which SU2 writes last).
use crate::element::Kind;
use crate::mesh::{Elements, Location, Mesh, MeshError, NodeId};
use std::io::{self, Write};
use std::path::Path;
use std::str::FromStr;

/// Reads the `.su2` file at `path`.
pub fn read(path: &Path) -> Result<Mesh, MeshError> {
    let file = path.display().to_string();
    match std::fs::read_to_string(path) {
        Ok(text) => parse(&text, &file),
        Err(source) => Err(MeshError::Io { file, source }),
    }
}

/// The mesh in `text`, the contents of a `.su2` file; `file` names it in errors, which give
/// the line and what is wrong.
pub fn parse(text: &str, file: &str) -> Result<Mesh, MeshError> {
    let mut r = Reader {
        lines: text.lines().enumerate(),
        file,
        line: 0,
        // Every entry takes a line of 4 bytes at least: a count that lies cannot make the
        // reader reserve much more than the text holds.
        room: text.len() / 4,
        highest: None,
    };
    let (mut dim, mut cells, mut points, mut markers) = (None, None, None, None);
    while let Some(line) = r.next() {
        let Some((key, value)) = keyword(line) else {
            return Err(r.error(format!(
                "expected a keyword (NDIME=, NELEM=, NPOIN= or NMARK=), found '{line}'"
            )));
        };
        match key {
            "NDIME" if dim.is_none() => dim = Some(r.dimension(value)?),
            "NELEM" if cells.is_none() => {
                let dim = r.after_ndime(dim, key)?;
                let n = r.count(value, key)?;
                let mut elements = Elements::with_capacity(n.min(r.room), 0);
                r.elements(&Section::new("NELEM", n, r.line), dim, &mut elements)?;
                cells = Some(elements);
            }
            "NPOIN" if points.is_none() => {
                points = Some(r.points(value, r.after_ndime(dim, key)?)?)
            }
            "NMARK" if markers.is_none() => {
                markers = Some(r.markers(value, r.after_ndime(dim, key)?)?)
            }
            "NDIME" | "NELEM" | "NPOIN" | "NMARK" => {
                return Err(r.error(format!("a second {key}=")))
            }
            _ if key.starts_with("FFD_") => break,
            _ => return Err(r.error(format!("unknown keyword {key}="))),
        }
    }
    let missing = |key: &str| r.error(format!("the file ends without {key}="));
    let dim = dim.ok_or_else(|| missing("NDIME"))?;
    let cells = cells.ok_or_else(|| missing("NELEM"))?;
    let points = points.ok_or_else(|| missing("NPOIN"))?;
    let markers = markers.ok_or_else(|| missing("NMARK"))?;
    if let Some((node, line)) = r.highest.filter(|&(node, _)| node as usize >= points.len()) {
        return Err(r.error_at(line, format!("node {node} of {} points", points.len())));
    }
    let Markers {
        faces,
        face_patch,
        names,
    } = markers;
    Mesh::new(dim, points, cells, faces, face_patch, names)
}

/// Writes `mesh` to `path` in the format [`read`] reads, atomically: elements and points with
/// their numbers, each patch as a marker with its faces in mesh order (so faces that are
/// grouped by patch, in patch order, read back identical). Coordinates round-trip exactly; a
/// 2D mesh's z is not written. A patch name that is not one word free of `%` and `=` is an
/// error of kind `InvalidInput`.
pub fn write(mesh: &Mesh, path: &Path) -> io::Result<()> {
    if let Some(name) = mesh
        .patches
        .iter()
        .find(|p| p.is_empty() || p.contains(|c: char| c.is_whitespace() || c == '%' || c == '='))
    {
        let what = format!("patch name '{name}' is not an SU2 marker tag");
        let error = io::Error::new(io::ErrorKind::InvalidInput, what);
        return Err(ferroflow_io::file::naming(path, error));
    }
    let mut by_patch = vec![Vec::new(); mesh.patches.len()];
    for (f, &p) in mesh.face_patch.iter().enumerate() {
        by_patch[p as usize].push(f);
    }
    ferroflow_io::file::write_with(path, |w| {
        writeln!(w, "% ferroflow mesh")?;
        writeln!(w, "NDIME= {}", mesh.dim)?;
        writeln!(w, "NELEM= {}", mesh.cells.len())?;
        for (e, (kind, nodes)) in mesh.cells.iter().enumerate() {
            write_element(w, kind, nodes)?;
            writeln!(w, " {e}")?;
        }
        writeln!(w, "NPOIN= {}", mesh.nodes.len())?;
        for (i, x) in mesh.nodes.iter().enumerate() {
            // `Debug` prints the shortest text that parses back to the same f64.
            for c in &x[..mesh.dim] {
                write!(w, "{c:?} ")?;
            }
            writeln!(w, "{i}")?;
        }
        writeln!(w, "NMARK= {}", mesh.patches.len())?;
        for (name, faces) in mesh.patches.iter().zip(&by_patch) {
            writeln!(w, "MARKER_TAG= {name}")?;
            writeln!(w, "MARKER_ELEMS= {}", faces.len())?;
            for &f in faces {
                write_element(w, mesh.faces.kind(f), mesh.faces.nodes(f))?;
                writeln!(w)?;
            }
        }
        Ok(())
    })
}

/// An element's type and nodes, without the line's end.
fn write_element(w: &mut impl Write, kind: Kind, nodes: &[NodeId]) -> io::Result<()> {
    write!(w, "{}", kind.vtk())?;
    for x in nodes {
        write!(w, " {x}")?;
    }
    Ok(())
}

/// The key and value of a `KEY= value` line.
fn keyword(line: &str) -> Option<(&str, &str)> {
    let (key, value) = line.split_once('=')?;
    Some((key.trim(), value.trim()))
}

/// A keyword's promise of `n` entries, made at line `at`.
struct Section {
    key: &'static str,
    n: usize,
    at: usize,
}

impl Section {
    fn new(key: &'static str, n: usize, at: usize) -> Section {
        Section { key, n, at }
    }
}

/// The markers as boundary faces, the patch number of each and the patch names.
struct Markers {
    faces: Elements,
    face_patch: Vec<u32>,
    names: Vec<String>,
}

/// The lines of a file with content, and what the checks that need the whole file collect.
struct Reader<'a> {
    lines: std::iter::Enumerate<std::str::Lines<'a>>,
    file: &'a str,
    /// Number (from 1) of the line last read; 0 before the first.
    line: usize,
    /// The most entries a count may make the reader reserve.
    room: usize,
    /// The highest node number of any element and its line: points may come after elements.
    highest: Option<(NodeId, usize)>,
}

impl<'a> Reader<'a> {
    /// The next line with content, without its comment and surrounding blanks.
    fn next(&mut self) -> Option<&'a str> {
        for (i, raw) in self.lines.by_ref() {
            self.line = i + 1;
            let content = raw.split('%').next().unwrap_or_default().trim();
            if !content.is_empty() {
                return Some(content);
            }
        }
        None
    }

    fn error(&self, what: String) -> MeshError {
        // An empty file has no line 0; name its first.
        self.error_at(self.line.max(1), what)
    }

    fn error_at(&self, line: usize, what: String) -> MeshError {
        MeshError::Format {
            file: self.file.to_string(),
            at: Location::Line(line),
            what,
        }
    }

    /// `token` as a `T`, or an error calling it a bad `what`.
    fn number<T: FromStr>(&self, token: &str, what: &str) -> Result<T, MeshError> {
        token
            .parse()
            .map_err(|_| self.error(format!("bad {what} '{token}'")))
    }

    fn count(&self, value: &str, key: &str) -> Result<usize, MeshError> {
        self.number(value, &format!("count after {key}="))
    }

    fn dimension(&self, value: &str) -> Result<usize, MeshError> {
        match self.count(value, "NDIME")? {
            d @ (2 | 3) => Ok(d),
            d => Err(self.error(format!("NDIME= {d} (2 or 3)"))),
        }
    }

    /// The dimension, which `key` needs.
    fn after_ndime(&self, dim: Option<usize>, key: &str) -> Result<usize, MeshError> {
        dim.ok_or_else(|| self.error(format!("{key}= before NDIME=")))
    }

    /// The next line with content, entry `done` of `section`.
    fn entry(&mut self, section: &Section, done: usize) -> Result<&'a str, MeshError> {
        let Section { key, n, at } = *section;
        self.next().ok_or_else(|| {
            self.error_at(at, format!("{key} says {n} but the file ends after {done}"))
        })
    }

    /// The next line, a data line (not a keyword), entry `done` of `section`.
    fn data(&mut self, section: &Section, done: usize) -> Result<&'a str, MeshError> {
        let line = self.entry(section, done)?;
        if line.contains('=') {
            let Section { key, n, at } = *section;
            return Err(self.error(format!(
                "{key}= (line {at}) says {n} but '{line}' follows after {done}"
            )));
        }
        Ok(line)
    }

    /// The value of the next line, which must be `key= value`, entry `done` of `section`.
    fn keyed(&mut self, key: &str, section: &Section, done: usize) -> Result<&'a str, MeshError> {
        let line = self.entry(section, done)?;
        match keyword(line) {
            Some((k, value)) if k == key => Ok(value),
            _ => Err(self.error(format!("expected {key}=, found '{line}'"))),
        }
    }

    /// The element lines of `section`, of dimension `dim`, appended to `out`.
    fn elements(
        &mut self,
        section: &Section,
        dim: usize,
        out: &mut Elements,
    ) -> Result<(), MeshError> {
        let mut nodes = Vec::with_capacity(8);
        for done in 0..section.n {
            let line = self.data(section, done)?;
            let mut tokens = line.split_whitespace();
            let code = tokens.next().unwrap_or_default();
            let code = self.number(code, "element type")?;
            let kind = Kind::from_vtk(code)
                .ok_or_else(|| self.error(format!("unknown element type {code}")))?;
            if kind.dim() != dim {
                return Err(self.error(format!(
                    "a {} (type {code}) where {dim}D elements belong",
                    kind.name()
                )));
            }
            let (want, given) = (kind.nodes(), tokens.clone().count());
            if given != want && given != want + 1 {
                return Err(self.error(format!(
                    "expected {want} node numbers for a {} (and an optional element number), \
                     found {given} numbers",
                    kind.name()
                )));
            }
            nodes.clear();
            for token in tokens.by_ref().take(want) {
                let x: NodeId = self.number(token, "node number")?;
                if self.highest.is_none_or(|(h, _)| x > h) {
                    self.highest = Some((x, self.line));
                }
                nodes.push(x);
            }
            if let Some(token) = tokens.next() {
                self.number::<u64>(token, "element number")?;
            }
            out.push(kind, &nodes);
        }
        Ok(())
    }

    /// The points after `NPOIN= value`, in `dim` dimensions.
    fn points(&mut self, value: &str, dim: usize) -> Result<Vec<[f64; 3]>, MeshError> {
        let mut counts = value.split_whitespace();
        let n = self.count(counts.next().unwrap_or_default(), "NPOIN")?;
        // The second count, of points this rank owns, concerns partitioned files only.
        if let Some(owned) = counts.next() {
            let owned = self.count(owned, "NPOIN")?;
            if owned > n {
                return Err(self.error(format!("{owned} owned points of {n}")));
            }
        }
        if counts.next().is_some() {
            return Err(self.error(format!("NPOIN= takes one or two counts, found '{value}'")));
        }
        let section = Section::new("NPOIN", n, self.line);
        let mut points = Vec::with_capacity(n.min(self.room));
        for done in 0..n {
            let line = self.data(&section, done)?;
            let mut tokens = line.split_whitespace();
            let given = tokens.clone().count();
            if given != dim && given != dim + 1 {
                return Err(self.error(format!(
                    "expected {dim} coordinates (and an optional point number), found {given} \
                     numbers"
                )));
            }
            let mut x = [0.0_f64; 3];
            for (c, token) in x[..dim].iter_mut().zip(tokens.by_ref()) {
                *c = self.number(token, "coordinate")?;
                if !c.is_finite() {
                    return Err(self.error(format!("coordinate '{token}' is not finite")));
                }
            }
            if let Some(token) = tokens.next() {
                self.number::<u64>(token, "point number")?;
            }
            points.push(x);
        }
        Ok(points)
    }

    /// The markers after `NMARK= value`, of a `dim`-dimensional mesh.
    fn markers(&mut self, value: &str, dim: usize) -> Result<Markers, MeshError> {
        let n = self.count(value, "NMARK")?;
        let section = Section::new("NMARK", n, self.line);
        let (mut faces, mut face_patch) = (Elements::default(), Vec::new());
        let mut names: Vec<String> = Vec::with_capacity(n.min(self.room));
        for done in 0..n {
            let name = self.keyed("MARKER_TAG", &section, done)?;
            if name.is_empty() {
                return Err(self.error("a marker without a name".to_string()));
            }
            if names.iter().any(|m| m == name) {
                return Err(self.error(format!("a second marker named '{name}'")));
            }
            let m = self.keyed("MARKER_ELEMS", &section, done)?;
            let m = self.count(m, "MARKER_ELEMS")?;
            self.elements(
                &Section::new("MARKER_ELEMS", m, self.line),
                dim - 1,
                &mut faces,
            )?;
            face_patch.resize(faces.len(), done as u32);
            names.push(name.to_string());
        }
        Ok(Markers {
            faces,
            face_patch,
            names,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SQUARE: &str = include_str!("../tests/data/square.su2");

    fn square() -> Mesh {
        parse(SQUARE, "square.su2").unwrap()
    }

    /// The last line (from 1) of `text` that holds `content` and nothing else but blanks.
    fn line_of(text: &str, content: &str) -> usize {
        let found = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim() == content)
            .last();
        found.unwrap_or_else(|| panic!("no line '{content}'")).0 + 1
    }

    /// The line and message of a format error.
    fn format_error(result: Result<Mesh, MeshError>) -> (usize, String) {
        match result {
            Err(MeshError::Format {
                at: Location::Line(line),
                what,
                ..
            }) => (line, what),
            other => panic!("not a format error: {other:?}"),
        }
    }

    /// One cell of each kind on 12 nodes, each sharing a face with another: a hexahedron,
    /// a prism on its face x = 1, a pyramid on its top, a tetrahedron on the pyramid's face
    /// x ≈ 0; markers of quadrilaterals, triangles and both.
    fn mixed() -> Mesh {
        let unit = [
            [0, 0, 0],
            [1, 0, 0],
            [1, 1, 0],
            [0, 1, 0],
            [0, 0, 2],
            [1, 0, 2],
            [1, 1, 2],
            [0, 1, 2],
            [2, 0, 0],
            [2, 1, 0],
            [1, 1, 3],
            [-1, 1, 5],
        ];
        // Coordinates whose text is not short, to see that they round-trip.
        let nodes = unit
            .iter()
            .map(|&[x, y, z]| {
                let (x, y, z) = (x as f64, y as f64, z as f64 / 2.0);
                [x * 0.1 + 1.0 / 3.0, y * 2.5e10, z * 1e-7 - 0.7]
            })
            .collect();
        let mut cells = Elements::default();
        cells.push(Kind::Hex8, &[0, 1, 2, 3, 4, 5, 6, 7]);
        cells.push(Kind::Prism6, &[1, 8, 5, 2, 9, 6]);
        cells.push(Kind::Pyramid5, &[4, 5, 6, 7, 10]);
        cells.push(Kind::Tet4, &[7, 4, 10, 11]);
        let mut faces = Elements::default();
        faces.push(Kind::Quad4, &[0, 3, 2, 1]);
        faces.push(Kind::Quad4, &[1, 2, 9, 8]);
        faces.push(Kind::Tri3, &[1, 8, 5]);
        faces.push(Kind::Tri3, &[2, 6, 9]);
        faces.push(Kind::Quad4, &[8, 9, 6, 5]);
        faces.push(Kind::Tri3, &[4, 10, 11]);
        let face_patch = vec![0, 0, 1, 1, 2, 2];
        let patches = ["floor", "ends", "sides"].map(String::from).to_vec();
        Mesh::new(3, nodes, cells, faces, face_patch, patches).unwrap()
    }

    #[test]
    fn the_square_reads_with_its_points_cells_and_markers() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/square.su2");
        let mesh = read(Path::new(path)).unwrap();
        assert_eq!(mesh, square());
        assert_eq!(mesh.dim, 2);
        assert_eq!(mesh.nodes.len(), 9);
        assert_eq!(mesh.nodes[3], [0.0, 0.5, 0.0]);
        assert_eq!(mesh.nodes[8], [1.0, 1.0, 0.0]);
        let counts = mesh.cells.counts();
        assert_eq!((counts[&Kind::Tri3], counts[&Kind::Quad4]), (4, 2));
        assert_eq!(mesh.cells.nodes(3), &[3, 6, 7, 4]);
        assert_eq!(mesh.patches, ["lower", "right", "upper", "left"]);
        assert_eq!(mesh.face_patch, [0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(mesh.faces.nodes(4), &[7, 8]);
        let missing = read(Path::new("no/such/file.su2")).unwrap_err();
        assert!(matches!(missing, MeshError::Io { .. }), "{missing}");
    }

    #[test]
    fn a_2d_and_a_3d_mesh_round_trip() {
        let dir = tempfile::TempDir::new().unwrap();
        for (name, mesh) in [("square.su2", square()), ("mixed.su2", mixed())] {
            let path = dir.path().join(name);
            write(&mesh, &path).unwrap();
            assert_eq!(read(&path).unwrap(), mesh, "{name}");
        }
    }

    #[test]
    fn a_patch_name_that_is_no_marker_tag_is_not_written() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("square.su2");
        let mut mesh = square();
        mesh.patches[2] = "upper wall".to_string();
        let e = write(&mesh, &path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("'upper wall'"), "{e}");
        assert!(!path.exists());
    }

    #[test]
    fn what_follows_ffd_is_ignored() {
        let text = format!("{SQUARE}FFD_NBOX= 1\nFFD_NLEVEL= 1\nFFD_TAG= box\n");
        assert_eq!(parse(&text, "ffd.su2").unwrap(), square());
    }

    #[test]
    fn every_truncation_is_an_error_at_a_line_it_holds_or_the_whole_mesh() {
        let whole = square();
        let lines: Vec<&str> = SQUARE.lines().collect();
        let mut whole_at = Vec::new();
        for k in 0..=lines.len() {
            match parse(&lines[..k].join("\n"), "cut.su2") {
                Ok(mesh) => {
                    assert_eq!(mesh, whole, "cut after line {k}");
                    whole_at.push(k);
                }
                Err(e) => {
                    let (at, what) = format_error(Err(e));
                    assert!(
                        (1..=k.max(1)).contains(&at),
                        "cut after {k}: line {at}: {what}"
                    );
                }
            }
        }
        assert_eq!(whole_at, [lines.len()]);
        // Cut anywhere, even inside a number: no panic, whatever the result.
        for (i, _) in SQUARE.char_indices() {
            let _ = parse(&SQUARE[..i], "cut.su2");
        }
    }

    #[test]
    fn a_garbled_token_is_an_error_at_its_line() {
        let lines: Vec<&str> = SQUARE.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let content = line.split('%').next().unwrap_or_default();
            let tokens: Vec<&str> = content.split_whitespace().collect();
            for t in 0..tokens.len() {
                // Any word names a marker.
                if tokens[0] == "MARKER_TAG=" && t == 1 {
                    continue;
                }
                let mut garbled = tokens.clone();
                garbled[t] = "x";
                let garbled = garbled.join(" ");
                let mut text = lines.clone();
                text[i] = &garbled;
                let (at, what) = format_error(parse(&text.join("\n"), "garbled.su2"));
                assert_eq!(at, i + 1, "'{garbled}': {what}");
            }
        }
        // Any character changed to one of these: no panic, whatever the result.
        for (i, old) in SQUARE.char_indices() {
            for new in ['x', '9', '-', '=', '%', ' ', '\n'] {
                let text = format!("{}{new}{}", &SQUARE[..i], &SQUARE[i + old.len_utf8()..]);
                let _ = parse(&text, "garbled.su2");
            }
        }
    }

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        let nmark = "NMARK= 4";
        // The line replaced, its replacement, the line of the error, the message.
        let cases = [
            (
                "9 1 2 5 4 2",
                "7 1 2 5 4 2",
                "7 1 2 5 4 2",
                "unknown element type 7",
            ),
            (
                "9 1 2 5 4 2",
                "9 1 2 5",
                "9 1 2 5",
                "expected 4 node numbers for a quadrilateral (and an optional element number), \
                 found 3 numbers",
            ),
            ("3 5 8", "3 5 99", "3 5 99", "node 99 of 9 points"),
            (
                "3 5 8",
                "5 5 8 1",
                "5 5 8 1",
                "a triangle (type 5) where 1D elements belong",
            ),
            (
                "0.5 1.0 7",
                "0.5 1,0 7",
                "0.5 1,0 7",
                "bad coordinate '1,0'",
            ),
            (
                "0.5 1.0 7",
                "0.5 inf 7",
                "0.5 inf 7",
                "coordinate 'inf' is not finite",
            ),
            (
                "0.5 1.0 7",
                "0.5 1.0 0.0",
                "0.5 1.0 0.0",
                "bad point number '0.0'",
            ),
            ("NDIME= 2", "NDIME= 4", "NDIME= 4", "NDIME= 4 (2 or 3)"),
            (
                "NPOIN= 9 9",
                "NPOIN= 9 10",
                "NPOIN= 9 10",
                "10 owned points of 9",
            ),
            (
                "NELEM= 6",
                "NELEM= 7",
                nmark,
                "NELEM= (line 17) says 7 but 'NMARK= 4' follows after 6",
            ),
            ("NMARK= 4", "NPOIN= 4", "NPOIN= 4", "a second NPOIN="),
            (
                "MARKER_TAG= left",
                "MARKER_TAG= right",
                "MARKER_TAG= right",
                "a second marker named 'right'",
            ),
            (
                "MARKER_TAG= left",
                "MARKER_TAG=",
                "MARKER_TAG=",
                "a marker without a name",
            ),
            (
                "MARKER_ELEMS= 2",
                "NELEM= 2",
                "NELEM= 2",
                "expected MARKER_ELEMS=, found 'NELEM= 2'",
            ),
            ("NDIME= 2", "NDIMS= 2", "NDIMS= 2", "unknown keyword NDIMS="),
        ];
        for (from, to, at, what) in cases {
            let text = SQUARE.replacen(&format!("\n{from}\n"), &format!("\n{to}\n"), 1);
            assert_ne!(text, SQUARE, "no line '{from}'");
            let got = format_error(parse(&text, "square.su2"));
            assert_eq!(
                got,
                (line_of(&text, at), what.to_string()),
                "{from} -> {to}"
            );
        }
        // Ends where more was promised: the promise's line.
        let cut = &SQUARE[..SQUARE.find("5 4 7 8 5").unwrap()];
        let got = format_error(parse(cut, "cut.su2"));
        assert_eq!(
            got,
            (
                line_of(SQUARE, "NELEM= 6"),
                "NELEM says 6 but the file ends after 5".to_string()
            )
        );
        let cut = &SQUARE[..SQUARE.find("NMARK").unwrap()];
        let got = format_error(parse(cut, "cut.su2"));
        assert_eq!(got.1, "the file ends without NMARK=");
        let got = format_error(parse("NELEM= 0\n", "cut.su2"));
        assert_eq!(got, (1, "NELEM= before NDIME=".to_string()));
        let huge = "NDIME= 3\nNELEM= 18446744073709551615\n";
        let got = format_error(parse(huge, "huge.su2"));
        let what = "NELEM says 18446744073709551615 but the file ends after 0";
        assert_eq!(got, (2, what.to_string()));
        let got = format_error(parse("", "empty.su2"));
        assert_eq!(got, (1, "the file ends without NDIME=".to_string()));
    }
}
