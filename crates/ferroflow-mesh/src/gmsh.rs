//! Gmsh meshes (`.msh`): MSH 2.2 and 4.1, ASCII and binary (either byte order).
//!
//! Own code rather than a crate: `mshio` reads 4.1 only, and errors here must name the file
//! and the line (ASCII) or byte offset (binary). One cursor reads both encodings (a number is
//! a whitespace-separated token in ASCII files, a fixed-width value in binary ones), so one
//! function per section serves both; MSH 2.2's element headers are the only difference.
//!
//! What the mesh is made of:
//! - Its dimension is the highest of its elements' (2 or 3); its cells are every element of
//!   that dimension.
//! - Its boundary faces are the elements one dimension lower that are in a physical group.
//!   Each physical group of that dimension is a patch, in the order of the groups' numbers,
//!   named by `$PhysicalNames` ("physical N" when unnamed). An element in several groups goes
//!   to the first that its entity lists (MSH 2.2 repeats such an element once per group, one
//!   copy after the other: the copies are dropped).
//! - Nodes that no kept element uses (geometry points, nodes of lines in 3D) are dropped; the
//!   others keep the file's order, numbered from 0 whatever their tags.
//! - Cells and faces are ordered by entity, then Gmsh type, then as read: MSH 2.2 lists
//!   elements by type first, 4.1 by entity first, and the same mesh must come out the same.
//! - Points (type 15) are ignored; types other than 1 to 7 (second order, ...) are errors.
//!
//! Node orders: Gmsh's line, triangle, quadrangle, tetrahedron, pyramid and hexahedron are
//! VTK's (the same reference elements). Gmsh's prism has (0, 1, 2) counter-clockwise seen
//! from (3, 4, 5) (reference nodes (0, 0, −1), (1, 0, −1), (0, 1, −1), then z = 1), VTK's
//! clockwise: swapping nodes 1 and 2, and 4 and 5, turns one into the other. Checked with
//! Gmsh 4.15 (`tests/gmsh_real.rs`): with [`Kind::faces`] every tetrahedron, pyramid, prism
//! and hexahedron of the meshes of `geo/*.geo` has a positive volume (without the swap every
//! prism's is negative). Boundary faces keep Gmsh's orientation, which follows their
//! surface's, not the cell's outward normal.
use crate::element::Kind;
use crate::mesh::{Elements, Location, Mesh, MeshError, NodeId};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// Reads the Gmsh mesh in file `path`.
pub fn read(path: &Path) -> Result<Mesh, MeshError> {
    let file = path.display().to_string();
    match std::fs::read(path) {
        Ok(bytes) => parse(&bytes, &file),
        Err(source) => Err(MeshError::Io { file, source }),
    }
}

/// Parses the Gmsh mesh `bytes`, named `file` in errors.
pub fn parse(bytes: &[u8], file: &str) -> Result<Mesh, MeshError> {
    let mut c = Cursor::new(bytes, file);
    let mut msh = Msh::default();
    loop {
        c.skip_space();
        if c.pos >= bytes.len() {
            break;
        }
        let header = c.line()?;
        let Some(name) = header.strip_prefix(b"$") else {
            return Err(c.error(format!(
                "expected a section such as $Nodes, found `{}`",
                show(header)
            )));
        };
        match (msh.version, name) {
            (None, b"MeshFormat") => {
                c.section = "$MeshFormat";
                msh.version = Some(c.mesh_format()?);
            }
            (None, _) => {
                return Err(c.error(format!(
                    "expected $MeshFormat first, found `{}`",
                    show(header)
                )))
            }
            (Some(_), b"PhysicalNames") => {
                c.section = "$PhysicalNames";
                msh.physical_names(&mut c)?;
            }
            (Some(Version::V4), b"Entities") => {
                c.section = "$Entities";
                msh.entities(&mut c)?;
            }
            (Some(v), b"Nodes") => {
                c.section = "$Nodes";
                msh.nodes(&mut c, v)?;
            }
            (Some(v), b"Elements") => {
                c.section = "$Elements";
                msh.elements(&mut c, v)?;
            }
            _ => {
                c.skip_section(name)?;
                continue;
            }
        }
        c.expect_end()?;
    }
    msh.finish(&mut c)
}

/// The MSH versions read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V2,
    V4,
}

/// A position in the file being read, and how its numbers are encoded.
struct Cursor<'a> {
    bytes: &'a [u8],
    file: &'a str,
    pos: usize,
    /// Line of `pos` (from 1), kept for ASCII files.
    line: usize,
    /// Byte and line where the last item read starts: where an error points.
    mark: (usize, usize),
    /// The section being read, for "unexpected end of file in ...".
    section: &'static str,
    binary: bool,
    big_endian: bool,
    /// Bytes of a binary `size_t` (MSH 4.1's data size).
    size_t: usize,
    /// Inside an ASCII element's record, whose tokens must not cross the line's end.
    in_line: bool,
}

impl<'a> Cursor<'a> {
    fn new(bytes: &'a [u8], file: &'a str) -> Cursor<'a> {
        Cursor {
            bytes,
            file,
            pos: 0,
            line: 1,
            mark: (0, 1),
            section: "the file",
            binary: false,
            big_endian: false,
            size_t: 8,
            in_line: false,
        }
    }

    /// An error at the last item read.
    fn error(&self, what: impl Into<String>) -> MeshError {
        let at = if self.binary {
            Location::Byte(self.mark.0 as u64)
        } else {
            Location::Line(self.mark.1)
        };
        MeshError::Format {
            file: self.file.to_string(),
            at,
            what: what.into(),
        }
    }

    fn end_of_file(&mut self) -> MeshError {
        self.mark = (self.bytes.len(), self.line);
        self.error(format!("unexpected end of file in {}", self.section))
    }

    fn set_mark(&mut self) {
        self.mark = (self.pos, self.line);
    }

    /// Skips blanks and, outside an element's record, line ends.
    fn skip_space(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            match b {
                b'\n' if self.in_line => return,
                b'\n' => self.line += 1,
                b' ' | b'\t' | b'\r' => {}
                _ => return,
            }
            self.pos += 1;
        }
    }

    /// The next whitespace-separated token.
    fn token(&mut self) -> Result<&'a [u8], MeshError> {
        self.skip_space();
        self.set_mark();
        match self.bytes.get(self.pos) {
            None => return Err(self.end_of_file()),
            Some(b'\n') => return Err(self.error("the element's line ends early")),
            Some(_) => {}
        }
        let start = self.pos;
        while self
            .bytes
            .get(self.pos)
            .is_some_and(|b| !b.is_ascii_whitespace())
        {
            self.pos += 1;
        }
        Ok(&self.bytes[start..self.pos])
    }

    /// The next non-blank line, without its blanks at either end; consumes exactly its line
    /// end, so that binary data may follow.
    fn line(&mut self) -> Result<&'a [u8], MeshError> {
        self.skip_space();
        self.set_mark();
        let rest = &self.bytes[self.pos..];
        if rest.is_empty() {
            return Err(self.end_of_file());
        }
        let end = rest.iter().position(|&b| b == b'\n');
        self.pos += end.map_or(rest.len(), |e| e + 1);
        self.line += usize::from(end.is_some());
        Ok(rest[..end.unwrap_or(rest.len())].trim_ascii())
    }

    /// A count on a line of its own (text even in binary files).
    fn count_line(&mut self) -> Result<u64, MeshError> {
        let l = self.line()?;
        parse_int(l)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| self.error(format!("expected a count, found `{}`", show(l))))
    }

    /// Whether an ASCII record's line has no more tokens (never, in binary files).
    fn at_line_end(&mut self) -> bool {
        if self.binary {
            return false;
        }
        while matches!(self.bytes.get(self.pos), Some(b' ' | b'\t' | b'\r')) {
            self.pos += 1;
        }
        matches!(self.bytes.get(self.pos), None | Some(b'\n'))
    }

    /// The next `N` bytes of binary data.
    fn take<const N: usize>(&mut self) -> Result<[u8; N], MeshError> {
        self.set_mark();
        let bytes = self.bytes.get(self.pos..self.pos + N);
        match bytes.and_then(|b| <[u8; N]>::try_from(b).ok()) {
            Some(b) => {
                self.pos += N;
                Ok(b)
            }
            None => Err(self.end_of_file()),
        }
    }

    /// A binary number of `N` bytes in the file's byte order.
    fn number<const N: usize, T>(
        &mut self,
        little: fn([u8; N]) -> T,
        big: fn([u8; N]) -> T,
    ) -> Result<T, MeshError> {
        let b = self.take::<N>()?;
        Ok(if self.big_endian { big(b) } else { little(b) })
    }

    /// A signed integer (a binary `int`).
    fn int(&mut self) -> Result<i64, MeshError> {
        if self.binary {
            return Ok(self.number(i32::from_le_bytes, i32::from_be_bytes)?.into());
        }
        let t = self.token()?;
        parse_int(t).ok_or_else(|| self.error(format!("expected an integer, found `{}`", show(t))))
    }

    /// A non-negative integer of `bytes` bytes in binary files (4: an `int`, else a `size_t`).
    fn uint(&mut self, bytes: usize) -> Result<u64, MeshError> {
        if self.binary {
            return match bytes {
                4 => Ok(self.number(u32::from_le_bytes, u32::from_be_bytes)?.into()),
                _ => self.number(u64::from_le_bytes, u64::from_be_bytes),
            };
        }
        let t = self.token()?;
        parse_int(t)
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| {
                self.error(format!(
                    "expected a non-negative integer, found `{}`",
                    show(t)
                ))
            })
    }

    /// A MSH 4.1 `size_t`.
    fn size(&mut self) -> Result<u64, MeshError> {
        self.uint(self.size_t)
    }

    /// A finite real number (a binary `double`).
    fn float(&mut self) -> Result<f64, MeshError> {
        let x = if self.binary {
            self.number(f64::from_le_bytes, f64::from_be_bytes)?
        } else {
            let t = self.token()?;
            match std::str::from_utf8(t).ok().and_then(|s| s.parse().ok()) {
                Some(x) => x,
                None => return Err(self.error(format!("expected a number, found `{}`", show(t)))),
            }
        };
        if x.is_finite() {
            Ok(x)
        } else {
            Err(self.error(format!("{x} is not a finite number")))
        }
    }

    /// `n` (as a capacity to allocate) if the rest of the file can hold `n` items of `ints`
    /// integers, `sizes` `size_t`s and `floats` reals, else an error.
    fn room(&self, n: u64, ints: usize, sizes: usize, floats: usize) -> Result<usize, MeshError> {
        // An ASCII number takes at least a digit and a separator.
        let each = if self.binary {
            4 * ints + self.size_t * sizes + 8 * floats
        } else {
            2 * (ints + sizes + floats)
        };
        let left = self.bytes.len() - self.pos;
        match usize::try_from(n)
            .ok()
            .filter(|&n| n.saturating_mul(each) <= left)
        {
            Some(n) => Ok(n),
            None => Err(self.error(format!(
                "{} announces {n} items, more than the {left} bytes left can hold",
                self.section
            ))),
        }
    }

    /// Reads `$MeshFormat`'s body: the version, the encoding and, in binary files, the byte
    /// order (from the integer 1 stored after the header).
    fn mesh_format(&mut self) -> Result<Version, MeshError> {
        let l = self.line()?;
        let mut words = l.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
        let (v, ty, size) = (words.next(), words.next(), words.next());
        let version = match v {
            Some(b"2.2") => Version::V2,
            Some(b"4.1") => Version::V4,
            _ => {
                return Err(self.error(format!(
                    "MSH version `{}` is not read (2.2 and 4.1 are)",
                    show(v.unwrap_or_default())
                )))
            }
        };
        self.binary = match ty {
            Some(b"0") => false,
            Some(b"1") => true,
            _ => return Err(self.error(format!("expected file type 0 or 1 in `{}`", show(l)))),
        };
        self.size_t = match (version, size) {
            (Version::V2, Some(b"8")) | (Version::V4, Some(b"8")) => 8,
            (Version::V4, Some(b"4")) => 4,
            _ => return Err(self.error(format!("unsupported data size in `{}`", show(l)))),
        };
        if self.binary {
            self.big_endian = match self.take::<4>()? {
                [1, 0, 0, 0] => false,
                [0, 0, 0, 1] => true,
                _ => {
                    return Err(
                        self.error("the binary marker is not the integer 1 in either byte order")
                    )
                }
            };
        }
        Ok(version)
    }

    /// Reads the line closing the current section.
    fn expect_end(&mut self) -> Result<(), MeshError> {
        self.in_line = false;
        let l = self.line()?;
        let want = self.section.replacen('$', "$End", 1);
        if l != want.as_bytes() {
            return Err(self.error(format!("expected {want}, found `{}`", show(l))));
        }
        Ok(())
    }

    /// Skips a section this reader does not use, up to its `$End` line.
    fn skip_section(&mut self, name: &[u8]) -> Result<(), MeshError> {
        let end = [b"$End".as_slice(), name].concat();
        let mut from = self.pos;
        // The first `$EndName` that is a line of its own (binary data may hold the bytes).
        let found = loop {
            let Some(i) = self.bytes[from..].windows(end.len()).position(|w| w == end) else {
                break None;
            };
            let at = from + i;
            let line_start = at == 0 || self.bytes.get(at - 1) == Some(&b'\n');
            let after = self.bytes.get(at + end.len());
            if line_start && matches!(after, None | Some(b'\n' | b'\r')) {
                break Some(at);
            }
            from = at + 1;
        };
        let Some(at) = found else {
            self.mark = (self.bytes.len(), self.line);
            return Err(self.error(format!(
                "unexpected end of file in ${}",
                String::from_utf8_lossy(name)
            )));
        };
        self.line += self.bytes[self.pos..at]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        self.pos = at;
        self.line()?;
        Ok(())
    }
}

/// The Gmsh element types read: a kind, or `None` for a point (ignored).
fn gmsh_kind(ty: i64) -> Option<Option<Kind>> {
    Some(Some(match ty {
        1 => Kind::Line2,
        2 => Kind::Tri3,
        3 => Kind::Quad4,
        4 => Kind::Tet4,
        5 => Kind::Hex8,
        6 => Kind::Prism6,
        7 => Kind::Pyramid5,
        15 => return Some(None),
        _ => return None,
    }))
}

/// Node numbers by tag: a table when the tags are dense enough, else sorted pairs.
enum NodeIndex {
    Dense(Vec<NodeId>),
    Sorted(Vec<(u64, NodeId)>),
}

impl NodeIndex {
    /// The index of nodes `tags`, or the first tag found twice.
    fn new(tags: &[u64]) -> Result<NodeIndex, u64> {
        let max = tags.iter().copied().max().unwrap_or(0);
        if max < 4 * tags.len() as u64 + 1024 {
            let mut table = vec![NodeId::MAX; max as usize + 1];
            for (i, &t) in tags.iter().enumerate() {
                let slot = &mut table[t as usize];
                if *slot != NodeId::MAX {
                    return Err(t);
                }
                *slot = i as NodeId;
            }
            return Ok(NodeIndex::Dense(table));
        }
        let mut pairs: Vec<_> = (0..).zip(tags).map(|(i, &t)| (t, i)).collect();
        pairs.sort_unstable();
        match pairs.windows(2).find(|w| w[0].0 == w[1].0) {
            Some(w) => Err(w[0].0),
            None => Ok(NodeIndex::Sorted(pairs)),
        }
    }

    fn get(&self, tag: u64) -> Option<NodeId> {
        match self {
            NodeIndex::Dense(table) => {
                let i = *table.get(usize::try_from(tag).ok()?)?;
                (i != NodeId::MAX).then_some(i)
            }
            NodeIndex::Sorted(pairs) => pairs
                .binary_search_by_key(&tag, |p| p.0)
                .ok()
                .map(|k| pairs[k].1),
        }
    }
}

/// The elements read so far, by dimension, in our node order.
#[derive(Default)]
struct Kept {
    /// Elements of dimension 1, 2 and 3.
    elements: [Elements; 3],
    /// Physical group of each element of dimension 1 and 2 (0: none).
    physical: [Vec<i64>; 2],
    /// Each element's entity and Gmsh type, as one number that orders them.
    keys: [Vec<u64>; 3],
}

impl Kept {
    /// Appends an element of `kind` (Gmsh type `ty`) of `entity` on Gmsh-ordered nodes `n`.
    fn push(&mut self, kind: Kind, n: &[NodeId; 8], physical: i64, entity: i64, ty: i64) {
        let ours = match kind {
            Kind::Prism6 => [n[0], n[2], n[1], n[3], n[5], n[4], 0, 0],
            _ => *n,
        };
        let d = kind.dim();
        self.elements[d - 1].push(kind, &ours[..kind.nodes()]);
        if d < 3 {
            self.physical[d - 1].push(physical);
        }
        self.keys[d - 1].push((entity as u32 as u64) << 8 | ty as u8 as u64);
    }

    /// The elements of dimension `d` and their physical groups, ordered by entity, then type,
    /// then as read: MSH 2.2 lists elements by type first, 4.1 by entity first, and the same
    /// mesh must come out the same from both.
    fn sorted(&mut self, d: usize) -> (Elements, Vec<i64>) {
        let elements = std::mem::take(&mut self.elements[d - 1]);
        let mut groups = match d {
            1 | 2 => std::mem::take(&mut self.physical[d - 1]),
            _ => Vec::new(),
        };
        let keys = &self.keys[d - 1];
        if keys.is_sorted() {
            return (elements, groups);
        }
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&e| keys[e]);
        if !groups.is_empty() {
            groups = order.iter().map(|&e| groups[e]).collect();
        }
        (elements.permuted(&order), groups)
    }
}

/// What the sections read so far hold.
#[derive(Default)]
struct Msh {
    version: Option<Version>,
    /// Physical group names by (dimension, tag).
    names: BTreeMap<(i64, i64), String>,
    /// MSH 4.1: the first physical group of each entity (0: none), by (dimension, tag).
    entities: HashMap<(i64, i64), i64>,
    nodes: Vec<[f64; 3]>,
    index: Option<NodeIndex>,
    kept: Kept,
    has_elements: bool,
}

impl Msh {
    /// `$PhysicalNames`: lines `dimension tag "name"`, text in every encoding.
    fn physical_names(&mut self, c: &mut Cursor) -> Result<(), MeshError> {
        let n = c.count_line()?;
        for _ in 0..n {
            let l = c.line()?;
            let mut rest = l;
            let mut number = || {
                let t = rest.trim_ascii_start();
                let end = t
                    .iter()
                    .position(u8::is_ascii_whitespace)
                    .unwrap_or(t.len());
                rest = &t[end..];
                parse_int(&t[..end])
            };
            let (dim, tag) = (number(), number());
            let name = rest
                .trim_ascii()
                .strip_prefix(b"\"")
                .and_then(|r| r.strip_suffix(b"\""))
                .and_then(|r| std::str::from_utf8(r).ok());
            let (Some(dim), Some(tag), Some(name)) = (dim, tag, name) else {
                return Err(c.error(format!(
                    "expected `dimension tag \"name\"`, found `{}`",
                    show(l)
                )));
            };
            self.names.insert((dim, tag), name.to_string());
        }
        Ok(())
    }

    /// MSH 4.1 `$Entities`: the physical groups of each point, curve, surface and volume.
    fn entities(&mut self, c: &mut Cursor) -> Result<(), MeshError> {
        let mut counts = [0; 4];
        for n in &mut counts {
            *n = c.size()?;
        }
        for (dim, n) in (0..).zip(counts) {
            for _ in 0..n {
                let tag = c.int()?;
                // A point's coordinates, or a bounding box.
                for _ in 0..if dim == 0 { 3 } else { 6 } {
                    c.float()?;
                }
                let mut first = 0;
                for i in 0..c.size()? {
                    let group = c.int()?;
                    if i == 0 {
                        first = group;
                    }
                }
                if dim > 0 {
                    for _ in 0..c.size()? {
                        c.int()?;
                    }
                }
                self.entities.insert((dim, tag), first);
            }
        }
        Ok(())
    }

    /// `$Nodes`: tags and coordinates.
    fn nodes(&mut self, c: &mut Cursor, version: Version) -> Result<(), MeshError> {
        if self.index.is_some() {
            return Err(c.error("a second $Nodes section"));
        }
        let header = c.mark;
        let mut tags = Vec::new();
        match version {
            Version::V2 => {
                let n = c.count_line()?;
                let cap = c.room(n, 1, 0, 3)?;
                tags.reserve(cap);
                self.nodes.reserve(cap);
                for _ in 0..n {
                    tags.push(c.uint(4)?);
                    self.nodes.push([c.float()?, c.float()?, c.float()?]);
                }
            }
            Version::V4 => {
                let blocks = c.size()?;
                let n = c.size()?;
                c.size()?;
                c.size()?;
                let cap = c.room(n, 0, 1, 3)?;
                tags.reserve(cap);
                self.nodes.reserve(cap);
                for _ in 0..blocks {
                    let dim = c.int()?;
                    c.int()?;
                    let parametric = c.int()?;
                    let m = c.size()?;
                    c.room(m, 0, 1, 3)?;
                    for _ in 0..m {
                        tags.push(c.size()?);
                    }
                    // Parametric coordinates follow x, y, z: one per dimension of the entity.
                    let extra = if parametric != 0 { dim.clamp(0, 3) } else { 0 };
                    for _ in 0..m {
                        self.nodes.push([c.float()?, c.float()?, c.float()?]);
                        for _ in 0..extra {
                            c.float()?;
                        }
                    }
                }
                if tags.len() as u64 != n {
                    return Err(c.error(format!(
                        "$Nodes announces {n} nodes, its blocks hold {}",
                        tags.len()
                    )));
                }
            }
        }
        if tags.len() >= NodeId::MAX as usize {
            return Err(c.error(format!(
                "{} nodes, more than this reader numbers",
                tags.len()
            )));
        }
        match NodeIndex::new(&tags) {
            Ok(index) => self.index = Some(index),
            Err(tag) => {
                c.mark = header;
                return Err(c.error(format!("node tag {tag} appears twice in $Nodes")));
            }
        }
        Ok(())
    }

    /// `$Elements`.
    fn elements(&mut self, c: &mut Cursor, version: Version) -> Result<(), MeshError> {
        let Some(index) = &self.index else {
            return Err(c.error("$Elements comes before $Nodes"));
        };
        if std::mem::replace(&mut self.has_elements, true) {
            return Err(c.error("a second $Elements section"));
        }
        let kept = &mut self.kept;
        let mut nodes = [0; 8];
        match version {
            Version::V2 => {
                let n = c.count_line()?;
                c.room(n, 2, 0, 0)?;
                // Binary files group elements in blocks of one type and number of tags.
                let (mut ty, mut ntags, mut block) = (0, 0, 0);
                let mut previous = None;
                for _ in 0..n {
                    if c.binary {
                        while block == 0 {
                            ty = c.int()?;
                            block = c.uint(4)?;
                            ntags = c.int()?;
                        }
                        block -= 1;
                        c.int()?;
                    } else {
                        c.int()?;
                        c.in_line = true;
                        ty = c.int()?;
                        ntags = c.int()?;
                    }
                    // Tags: the physical group, the elementary entity, partitions.
                    let (mut physical, mut entity) = (0, 0);
                    for i in 0..ntags {
                        let t = c.int()?;
                        match i {
                            0 => physical = t,
                            1 => entity = t,
                            _ => {}
                        }
                    }
                    nodes = [0; 8];
                    let kind = element_nodes(c, ty, 4, index, &mut nodes)?;
                    // A copy of the element before, for another physical group.
                    let copy = previous == Some((ty, entity, nodes));
                    previous = Some((ty, entity, nodes));
                    if let (Some(kind), false) = (kind, copy) {
                        kept.push(kind, &nodes, physical, entity, ty);
                    }
                }
            }
            Version::V4 => {
                let blocks = c.size()?;
                let n = c.size()?;
                c.size()?;
                c.size()?;
                c.room(n, 0, 2, 0)?;
                let size_t = c.size_t;
                for _ in 0..blocks {
                    let dim = c.int()?;
                    let entity = c.int()?;
                    let ty = c.int()?;
                    let m = c.size()?;
                    let physical = match dim {
                        1 | 2 => *self.entities.get(&(dim, entity)).ok_or_else(|| {
                            c.error(format!(
                                "entity {entity} of dimension {dim} is not in $Entities"
                            ))
                        })?,
                        _ => 0,
                    };
                    for _ in 0..m {
                        c.size()?;
                        c.in_line = true;
                        if let Some(kind) = element_nodes(c, ty, size_t, index, &mut nodes)? {
                            kept.push(kind, &nodes, physical, entity, ty);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The mesh: cells, boundary faces in patches, used nodes only.
    fn finish(self, c: &mut Cursor) -> Result<Mesh, MeshError> {
        c.mark = (c.bytes.len(), c.line);
        if self.index.is_none() {
            return Err(c.error("no $Nodes section"));
        }
        if !self.has_elements {
            return Err(c.error("no $Elements section"));
        }
        let mut kept = self.kept;
        let Some(dim) = [3, 2]
            .into_iter()
            .find(|&d| !kept.elements[d - 1].is_empty())
        else {
            return Err(c.error("no elements of dimension 2 or 3"));
        };
        let (mut cells, _) = kept.sorted(dim);
        let (lower, groups) = kept.sorted(dim - 1);

        // Patches: the named groups of the faces' dimension and those the faces are in.
        let mut patch: BTreeMap<i64, u32> = self
            .names
            .keys()
            .filter(|k| k.0 == dim as i64 - 1)
            .map(|k| (k.1, 0))
            .collect();
        patch.extend(groups.iter().filter(|&&g| g != 0).map(|&g| (g, 0)));
        let mut patches = Vec::with_capacity(patch.len());
        for (&g, p) in patch.iter_mut() {
            *p = patches.len() as u32;
            let name = self.names.get(&(dim as i64 - 1, g));
            patches.push(name.cloned().unwrap_or_else(|| format!("physical {g}")));
        }
        let mut faces = Elements::default();
        let mut face_patch = Vec::new();
        for ((kind, nodes), g) in lower.iter().zip(&groups) {
            if let Some(&p) = patch.get(g) {
                faces.push(kind, nodes);
                face_patch.push(p);
            }
        }

        // Drop unused nodes, keeping the others' order (0 marks a used node until numbered).
        let mut new = vec![NodeId::MAX; self.nodes.len()];
        for &x in cells.connectivity().iter().chain(faces.connectivity()) {
            new[x as usize] = 0;
        }
        let mut nodes = Vec::with_capacity(self.nodes.len());
        for (x, slot) in self.nodes.iter().zip(&mut new) {
            if *slot == 0 {
                *slot = nodes.len() as NodeId;
                nodes.push(*x);
            }
        }
        for elements in [&mut cells, &mut faces] {
            for e in 0..elements.len() {
                for x in elements.nodes_mut(e) {
                    *x = new[*x as usize];
                }
            }
        }
        Mesh::new(dim, nodes, cells, faces, face_patch, patches)
    }
}

/// Reads the node tags of an element of Gmsh type `ty` (`tag_bytes` each in binary files)
/// into `out` as node numbers, in Gmsh's order, and returns its kind (`None`: a point). In
/// ASCII files the element's line must hold exactly these tags.
fn element_nodes(
    c: &mut Cursor,
    ty: i64,
    tag_bytes: usize,
    index: &NodeIndex,
    out: &mut [NodeId; 8],
) -> Result<Option<Kind>, MeshError> {
    let kind = gmsh_kind(ty).ok_or_else(|| {
        c.error(format!(
            "Gmsh element type {ty} is not read (only types 1 to 7, first order, and 15, points)"
        ))
    })?;
    let (n, name) = kind.map_or((1, "point"), |k| (k.nodes(), k.name()));
    for (i, slot) in out.iter_mut().take(n).enumerate() {
        if c.at_line_end() {
            return Err(c.error(format!("expected {n} node tags of a {name}, found {i}")));
        }
        let tag = c.uint(tag_bytes)?;
        *slot = index
            .get(tag)
            .ok_or_else(|| c.error(format!("node tag {tag} is not in $Nodes")))?;
    }
    if !c.binary {
        let mut found = n;
        while !c.at_line_end() {
            c.token()?;
            found += 1;
        }
        if found != n {
            return Err(c.error(format!("expected {n} node tags of a {name}, found {found}")));
        }
    }
    c.in_line = false;
    Ok(kind)
}

/// A decimal integer with an optional sign, without overflow.
fn parse_int(t: &[u8]) -> Option<i64> {
    let (negative, digits) = match t {
        [b'-', rest @ ..] => (true, rest),
        [b'+', rest @ ..] => (false, rest),
        _ => (false, t),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(if negative { -v } else { v })
}

/// Bytes of a file as text for a message, cut short.
fn show(t: &[u8]) -> String {
    String::from_utf8_lossy(&t[..t.len().min(40)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tetrahedra, sparse node tags, a node only a point uses and one only a line uses,
    /// boundary triangles in a named group, in an unnamed one (and a second group), in none;
    /// elements of entity 2 before entity 1, as MSH 2.2 may order them.
    const MSH22: &str = r#"$MeshFormat
2.2 0 8
$EndMeshFormat
$PhysicalNames
3
1 5 "edge"
2 1 "bottom"
3 2 "fluid"
$EndPhysicalNames
$Nodes
7
10 0 0 0
20 1 0 0
30 0 1 0
99 5 5 5
40 0 0 1
70 0.5 0 0
50 1 1 1
$EndNodes
$Comments
skipped, even $EndNodes
$EndComments
$Elements
8
1 15 2 0 1 99
2 1 2 5 1 10 70
3 2 2 3 2 20 30 50
4 2 2 1 2 20 30 50
5 2 2 1 1 10 30 20
6 2 2 0 4 10 20 40
7 4 2 2 1 10 20 30 40
8 4 2 2 1 20 30 40 50
$EndElements
"#;

    /// The same mesh in MSH 4.1, nodes in several blocks, one of them parametric.
    const MSH41: &str = r#"$MeshFormat
4.1 0 8
$EndMeshFormat
$PhysicalNames
3
1 5 "edge"
2 1 "bottom"
3 2 "fluid"
$EndPhysicalNames
$Entities
1 1 3 1
1 5 5 5 0
1 0 0 0 0.5 0 0 1 5 2 1 -2
1 0 0 0 1 1 0 1 1 0
2 0 0 0 1 1 1 2 3 1 0
4 0 0 0 1 0 1 0 0
1 0 0 0 1 1 1 1 2 3 1 2 -4
$EndEntities
$Nodes
5 7 10 99
3 1 0 3
10
20
30
0 0 0
1 0 0
0 1 0
0 1 0 1
99
5 5 5
3 1 0 1
40
0 0 1
1 1 1 1
70
0.5 0 0 0.25
3 1 0 1
50
1 1 1
$EndNodes
$Elements
6 7 1 7
0 1 15 1
1 99
1 1 1 1
2 10 70
2 1 2 1
3 10 30 20
2 2 2 1
4 20 30 50
2 4 2 1
5 10 20 40
3 1 4 2
6 10 20 30 40
7 20 30 40 50
$EndElements
"#;

    /// The test mesh's nodes (tag, coordinates), its entities (dimension, tag, physical
    /// groups) and its element blocks (entity dimension, entity tag, Gmsh type, elements).
    const NODES: [(u64, [f64; 3]); 7] = [
        (10, [0.0, 0.0, 0.0]),
        (20, [1.0, 0.0, 0.0]),
        (30, [0.0, 1.0, 0.0]),
        (99, [5.0, 5.0, 5.0]),
        (40, [0.0, 0.0, 1.0]),
        (70, [0.5, 0.0, 0.0]),
        (50, [1.0, 1.0, 1.0]),
    ];
    const ENTITIES: [(i64, i64, &[i64]); 6] = [
        (0, 1, &[]),
        (1, 1, &[5]),
        (2, 1, &[1]),
        (2, 2, &[3, 1]),
        (2, 4, &[]),
        (3, 1, &[2]),
    ];
    type Block = (i64, i64, i64, &'static [&'static [u64]]);
    const BLOCKS: [Block; 6] = [
        (0, 1, 15, &[&[99]]),
        (1, 1, 1, &[&[10, 70]]),
        (2, 1, 2, &[&[10, 30, 20]]),
        (2, 2, 2, &[&[20, 30, 50]]),
        (2, 4, 2, &[&[10, 20, 40]]),
        (3, 1, 4, &[&[10, 20, 30, 40], &[20, 30, 40, 50]]),
    ];

    fn expected() -> Mesh {
        let mut cells = Elements::default();
        cells.push(Kind::Tet4, &[0, 1, 2, 3]);
        cells.push(Kind::Tet4, &[1, 2, 3, 4]);
        let mut faces = Elements::default();
        faces.push(Kind::Tri3, &[0, 2, 1]);
        faces.push(Kind::Tri3, &[1, 2, 4]);
        let nodes = vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 1.0, 0.0],
            [0.0, 0.0, 1.0],
            [1.0, 1.0, 1.0],
        ];
        let patches = vec!["bottom".to_string(), "physical 3".to_string()];
        Mesh::new(3, nodes, cells, faces, vec![0, 1], patches).unwrap()
    }

    /// Numbers as a Gmsh file holds them: tokens, or bytes in either order.
    struct Writer {
        out: Vec<u8>,
        binary: bool,
        big_endian: bool,
        size_t: usize,
    }

    impl Writer {
        fn text(&mut self, s: &str) {
            self.out.extend_from_slice(s.as_bytes());
        }

        /// Ends a record: a line in ASCII, nothing in binary.
        fn end(&mut self) {
            if !self.binary {
                self.text("\n");
            }
        }

        fn put(&mut self, le: &[u8], be: &[u8], token: String) {
            match (self.binary, self.big_endian) {
                (false, _) => self.text(&(token + " ")),
                (true, false) => self.out.extend_from_slice(le),
                (true, true) => self.out.extend_from_slice(be),
            }
        }

        fn int(&mut self, v: i64) {
            let v = v as i32;
            self.put(&v.to_le_bytes(), &v.to_be_bytes(), v.to_string());
        }

        fn size(&mut self, v: u64) {
            if self.size_t == 4 {
                let w = v as u32;
                self.put(&w.to_le_bytes(), &w.to_be_bytes(), v.to_string());
            } else {
                self.put(&v.to_le_bytes(), &v.to_be_bytes(), v.to_string());
            }
        }

        fn float(&mut self, x: f64) {
            self.put(&x.to_le_bytes(), &x.to_be_bytes(), x.to_string());
        }
    }

    /// The test mesh as MSH `version`, ASCII or binary, as Gmsh writes it (MSH 2.2: one
    /// copy of an element per physical group, one binary header per element).
    fn write(version: Version, binary: bool, big_endian: bool, size_t: usize) -> Vec<u8> {
        let mut w = Writer {
            out: Vec::new(),
            binary,
            big_endian,
            size_t,
        };
        let v = if version == Version::V2 { "2.2" } else { "4.1" };
        w.text(&format!("$MeshFormat\n{v} {} {size_t}\n", u8::from(binary)));
        if binary {
            w.binary = true;
            w.int(1);
            w.text("\n");
        }
        w.text("$EndMeshFormat\n$PhysicalNames\n3\n1 5 \"edge\"\n2 1 \"bottom\"\n");
        w.text("3 2 \"fluid\"\n$EndPhysicalNames\n");
        let groups = |dim, tag| {
            let e = ENTITIES.iter().find(|e| (e.0, e.1) == (dim, tag));
            e.map_or(&[][..], |e| e.2)
        };
        match version {
            Version::V2 => {
                w.text(&format!("$Nodes\n{}\n", NODES.len()));
                for (tag, x) in NODES {
                    w.int(tag as i64);
                    x.into_iter().for_each(|x| w.float(x));
                    w.end();
                }
                w.text(if binary {
                    "\n$EndNodes\n"
                } else {
                    "$EndNodes\n"
                });
                let mut records = Vec::new();
                for (dim, entity, ty, elements) in BLOCKS {
                    let physical = groups(dim, entity);
                    for nodes in elements {
                        for &p in physical.iter().chain(physical.is_empty().then_some(&0)) {
                            records.push((ty, p, entity, nodes));
                        }
                    }
                }
                w.text(&format!("$Elements\n{}\n", records.len()));
                for (tag, (ty, p, entity, nodes)) in (1..).zip(records) {
                    if binary {
                        [ty, 1, 2].into_iter().for_each(|v| w.int(v));
                        [tag, p, entity].into_iter().for_each(|v| w.int(v));
                    } else {
                        [tag, ty, 2, p, entity].into_iter().for_each(|v| w.int(v));
                    }
                    nodes.iter().for_each(|&n| w.int(n as i64));
                    w.end();
                }
                w.text(if binary {
                    "\n$EndElements\n"
                } else {
                    "$EndElements\n"
                });
            }
            Version::V4 => {
                w.text("$Entities\n");
                for dim in 0..4 {
                    w.size(ENTITIES.iter().filter(|e| e.0 == dim).count() as u64);
                }
                w.end();
                for (dim, tag, physical) in ENTITIES {
                    w.int(tag);
                    (0..if dim == 0 { 3 } else { 6 }).for_each(|_| w.float(0.0));
                    w.size(physical.len() as u64);
                    physical.iter().for_each(|&p| w.int(p));
                    if dim > 0 {
                        w.size(0);
                    }
                    w.end();
                }
                w.text(if binary {
                    "\n$EndEntities\n"
                } else {
                    "$EndEntities\n"
                });
                w.text("$Nodes\n");
                [1, NODES.len() as u64, 10, 99]
                    .into_iter()
                    .for_each(|v| w.size(v));
                w.end();
                [3, 1, 0].into_iter().for_each(|v| w.int(v));
                w.size(NODES.len() as u64);
                w.end();
                for (tag, _) in NODES {
                    w.size(tag);
                    w.end();
                }
                for (_, x) in NODES {
                    x.into_iter().for_each(|x| w.float(x));
                    w.end();
                }
                w.text(if binary {
                    "\n$EndNodes\n"
                } else {
                    "$EndNodes\n"
                });
                w.text("$Elements\n");
                let n: usize = BLOCKS.iter().map(|b| b.3.len()).sum();
                [BLOCKS.len() as u64, n as u64, 1, n as u64]
                    .into_iter()
                    .for_each(|v| w.size(v));
                w.end();
                let mut tag = 0;
                for (dim, entity, ty, elements) in BLOCKS {
                    [dim, entity, ty].into_iter().for_each(|v| w.int(v));
                    w.size(elements.len() as u64);
                    w.end();
                    for nodes in elements {
                        tag += 1;
                        w.size(tag);
                        nodes.iter().for_each(|&n| w.size(n));
                        w.end();
                    }
                }
                w.text(if binary {
                    "\n$EndElements\n"
                } else {
                    "$EndElements\n"
                });
            }
        }
        w.out
    }

    /// The test mesh in every form: the hand-written files and what [`write`] makes.
    fn files() -> Vec<(String, Vec<u8>)> {
        let mut files = vec![
            ("MSH22".to_string(), MSH22.as_bytes().to_vec()),
            ("MSH41".to_string(), MSH41.as_bytes().to_vec()),
        ];
        for (version, binary, big_endian, size_t) in [
            (Version::V2, false, false, 8),
            (Version::V2, true, false, 8),
            (Version::V2, true, true, 8),
            (Version::V4, false, false, 8),
            (Version::V4, true, false, 8),
            (Version::V4, true, true, 8),
            (Version::V4, true, false, 4),
        ] {
            let name = format!("{version:?} binary {binary} big-endian {big_endian} {size_t}");
            files.push((name, write(version, binary, big_endian, size_t)));
        }
        files
    }

    #[test]
    fn every_form_gives_the_same_mesh() {
        for (name, bytes) in files() {
            let mesh = parse(&bytes, &name).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(mesh, expected(), "{name}");
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        for (name, bytes) in files() {
            let end = bytes.len() - bytes.trim_ascii_end().len();
            for k in 0..bytes.len() - end {
                assert!(parse(&bytes[..k], &name).is_err(), "{name} cut at {k}");
            }
        }
        let e = parse(&MSH41.as_bytes()[..MSH41.find("6 10 20").unwrap()], "t.msh");
        assert_eq!(
            e.unwrap_err().to_string(),
            "t.msh, line 54: unexpected end of file in $Elements"
        );
    }

    #[test]
    fn changed_bytes_never_panic() {
        for (name, bytes) in files() {
            for i in 0..bytes.len() {
                for b in [0, b'0', b'9', b'-', b' ', b'\n', b'$', 0xff] {
                    let mut changed = bytes.clone();
                    changed[i] = b;
                    let _ = parse(&changed, &name);
                }
            }
        }
    }

    #[test]
    fn errors_name_the_line_and_what_is_wrong() {
        for (file, from, to, error) in [
            (
                MSH22,
                "70 0.5 0 0",
                "70 0.5 0 zero",
                "line 17: expected a number, found `zero`",
            ),
            (
                MSH22,
                "7\n10",
                "x7\n10",
                "line 11: expected a count, found `x7`",
            ),
            (
                MSH22,
                "50 1 1 1",
                "40 1 1 1",
                "line 10: node tag 40 appears twice in $Nodes",
            ),
            (
                MSH22,
                "7 4 2 2 1",
                "7 11 2 2 1",
                "line 31: Gmsh element type 11 is not read (only types 1 to 7, first order, \
                 and 15, points)",
            ),
            (
                MSH22,
                "30 40 50\n",
                "30 40 17\n",
                "line 32: node tag 17 is not in $Nodes",
            ),
            (
                MSH22,
                "30 40 50\n",
                "30 40\n",
                "line 32: expected 4 node tags of a tetrahedron, found 3",
            ),
            (
                MSH22,
                "1 2 5 1 10",
                "1 2",
                "line 26: the element's line ends early",
            ),
            (
                MSH41,
                "7 20 30 40 50",
                "7 20 30 40 50 60",
                "line 55: expected 4 node tags of a tetrahedron, found 5",
            ),
            (
                MSH41,
                "4.1 0 8",
                "4.0 0 8",
                "line 2: MSH version `4.0` is not read (2.2 and 4.1 are)",
            ),
            (
                MSH41,
                "2 4 2 1",
                "2 9 2 1",
                "line 51: entity 9 of dimension 2 is not in $Entities",
            ),
            (
                MSH41,
                "0 0 0.25",
                "0 0 nan",
                "line 36: NaN is not a finite number",
            ),
            (
                MSH41,
                "$EndElements",
                "$EndElement",
                "line 56: expected $EndElements, found `$EndElement`",
            ),
            (
                MSH41,
                "$Nodes",
                "Nodes",
                "line 19: expected a section such as $Nodes, found `Nodes`",
            ),
        ] {
            assert!(file.contains(from), "{from}");
            let e = parse(file.replacen(from, to, 1).as_bytes(), "t.msh").unwrap_err();
            assert_eq!(e.to_string(), format!("t.msh, {error}"));
        }
    }

    #[test]
    fn binary_errors_name_the_byte() {
        let mut bytes = write(Version::V4, true, false, 8);
        let last = bytes.len() - b"\n$EndElements\n".len() - 8;
        assert_eq!(bytes[last..last + 8], 50u64.to_le_bytes());
        bytes[last..last + 8].copy_from_slice(&17u64.to_le_bytes());
        match parse(&bytes, "t.msh") {
            Err(MeshError::Format { at, what, .. }) => {
                assert_eq!(at, Location::Byte(last as u64));
                assert_eq!(what, "node tag 17 is not in $Nodes");
            }
            other => panic!("{other:?}"),
        }
        let marker = bytes
            .windows(4)
            .position(|w| w == 1i32.to_le_bytes())
            .unwrap();
        bytes[marker] = 2;
        let e = parse(&bytes, "t.msh").unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "t.msh, byte {marker}: the binary marker is not the integer 1 in either byte order"
            )
        );
    }

    #[test]
    fn a_2d_mesh_has_lines_for_faces() {
        let msh = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n4\n1 0 0 0\n2 1 0 0\n\
                   3 1 1 0\n4 0 1 0\n$EndNodes\n$Elements\n4\n1 1 2 7 1 1 2\n2 1 2 0 2 2 3\n\
                   3 2 2 0 1 1 2 3\n4 2 2 0 1 1 3 4\n$EndElements\n";
        let mesh = parse(msh.as_bytes(), "t.msh").unwrap();
        assert_eq!(mesh.dim, 2);
        assert_eq!(mesh.cells.len(), 2);
        assert_eq!(
            mesh.faces.iter().collect::<Vec<_>>(),
            [(Kind::Line2, &[0, 1][..])]
        );
        assert_eq!(mesh.patches, ["physical 7"]);
    }

    #[test]
    fn gmsh_prisms_are_turned_into_vtk_wedges() {
        let msh = "$MeshFormat\n4.1 0 8\n$EndMeshFormat\n$Entities\n0 0 0 1\n\
                   1 0 0 0 1 1 1 0 0\n$EndEntities\n$Nodes\n1 6 1 6\n3 1 0 6\n1\n2\n3\n4\n5\n6\n\
                   0 0 0\n1 0 0\n0 1 0\n0 0 1\n1 0 1\n0 1 1\n$EndNodes\n$Elements\n1 1 1 1\n\
                   3 1 6 1\n1 1 2 3 4 5 6\n$EndElements\n";
        let mesh = parse(msh.as_bytes(), "t.msh").unwrap();
        assert_eq!(mesh.cells.nodes(0), [0, 2, 1, 3, 5, 4]);
    }

    #[test]
    fn a_missing_file_is_an_io_error() {
        let e = read(Path::new("/nonexistent/mesh.msh")).unwrap_err();
        assert!(matches!(e, MeshError::Io { .. }), "{e}");
    }
}
