//! The x faces of a block that the explicit pass moves itself
//! ([`crate::BlockBackend::moves_in_step`]). An x face holds one or two nodes of every row:
//! packed after the pass and unpacked before the next, each row's values are a cache line of
//! their own per variable, read from memory twice and written once, besides the pass's
//! reading and writing of the same lines. The pass packs the nodes a row sends right after
//! updating the row, and reads the centre row of a row next to a received halo from a copy
//! with the received values in the halo ([`XFaces::centre_row`]): the loop over the row's
//! vectors stays as it is.
use crate::blocks::FaceBuffers;
use crate::cpu::face_parts;
use crate::cpu::step::V;
use ferroflow_core::decomposition::Face;
use ferroflow_core::{Layout, Real, GHOST};

/// Most nodes of a vector of the pass (16 f32): how far past the row's last interior node its
/// last vector reads, besides the stencil's reach.
const MAX_WIDTH: usize = 16;

/// Most bytes of a centre row's copy, all variables: a third of the 48 KiB first-level data
/// cache of current cores, which also holds the rows the pass reads. Longer rows pack and
/// unpack their x faces after the pass (a 4097² grid in [2, 2] blocks: 50 KB in f64, whose
/// copy cost the blocks 7 % on 16 Xeon cores; 257³ in [2, 2, 1]: 4.8 KB).
const CENTRE_BYTES: usize = 16 << 10;

/// Whether the pass moves `face` of a block of layout `l` with values of `size` bytes: an x
/// face, of rows whose centre copy is short.
pub(crate) fn moves(face: &Face, l: &Layout, size: usize) -> bool {
    face.side.axis() == 0 && row_len(l) * face.vars * size <= CENTRE_BYTES
}

/// Values of a centre row the pass reads: the row, its ghosts, and the last vector's reach
/// past them.
fn row_len(l: &Layout) -> usize {
    l.n[0] - 2 + 2 * GHOST + MAX_WIDTH
}

/// One variable's nodes of a row on an x face: the first node along x and how many, and
/// where the variable's part of the packed buffer starts.
#[derive(Clone, Copy, Default)]
struct Part {
    i: isize,
    width: usize,
    at: usize,
}

/// One x face: where each variable's values lie in its buffers, and the buffers.
struct XFace<'a, R> {
    sends: [Part; V],
    send: *mut R,
    send_len: usize,
    receives: [Part; V],
    received: Option<&'a [R]>,
}

/// The x faces the pass moves.
pub(crate) struct XFaces<'a, R> {
    faces: Vec<XFace<'a, R>>,
    vars: usize,
    /// The faces' first row and plane and their rows per plane: the order of their packing.
    j0: isize,
    k0: isize,
    rows_j: usize,
    /// Values of a centre row the pass reads ([`row_len`]).
    row_len: usize,
}

// SAFETY: the values a row sends are written by the one task that updates the row, and the
// received values are only read.
unsafe impl<R: Sync> Sync for XFaces<'_, R> {}

impl<'a, R: Real> XFaces<'a, R> {
    /// The x faces among `faces` of a block of layout `l`, if any (those [`moves`] accepts).
    pub(crate) fn of(faces: &'a mut [FaceBuffers<'_, R>], l: &Layout) -> Option<XFaces<'a, R>> {
        let parts = |f: &FaceBuffers<R>, receive: bool| {
            let mut parts = [Part::default(); V];
            for (p, (r, range)) in parts.iter_mut().zip(face_parts(f.face, l, receive)) {
                let width = (r[0].1 - r[0].0) as usize;
                *p = Part {
                    i: r[0].0,
                    width,
                    at: range.start,
                };
            }
            parts
        };
        let (mut vars, mut rows) = (0, (1, 1, 1));
        let faces: Vec<_> = faces
            .iter_mut()
            .filter(|f| moves(f.face, l, std::mem::size_of::<R>()))
            .map(|f| {
                let r = f.face.region(l, 0, false);
                (vars, rows) = (f.face.vars, (r[1].0, r[2].0, (r[1].1 - r[1].0) as usize));
                let (sends, receives) = (parts(f, false), parts(f, true));
                XFace {
                    sends,
                    send: f.send.as_mut_ptr(),
                    send_len: f.send.len(),
                    receives,
                    received: f.received,
                }
            })
            .collect();
        (!faces.is_empty()).then_some(XFaces {
            faces,
            vars,
            j0: rows.0,
            k0: rows.1,
            rows_j: rows.2,
            row_len: row_len(l),
        })
    }

    /// Row (j, k)'s place in the packing order.
    fn packed_row(&self, j: isize, k: isize) -> usize {
        (k - self.k0) as usize * self.rows_j + (j - self.j0) as usize
    }

    /// Packs the nodes row (j, k) sends; `row` holds each variable's row from its first ghost
    /// (`i = -GHOST`), as [`crate::cpu::boundary::XWalls::fill`] takes it.
    pub(crate) fn send(&self, row: &[&mut [R]], j: isize, k: isize) {
        let r = self.packed_row(j, k);
        for f in &self.faces {
            for (part, values) in f.sends.iter().zip(row).take(self.vars) {
                let (from, at) = ((part.i + GHOST as isize) as usize, part.at + r * part.width);
                assert!(at + part.width <= f.send_len);
                // SAFETY: inside the buffer (asserted), and row r's values are this task's
                // alone.
                let out = unsafe { std::slice::from_raw_parts_mut(f.send.add(at), part.width) };
                out.copy_from_slice(&values[from..from + part.width]);
            }
        }
    }

    /// Whether any halo is read from received values.
    pub(crate) fn reads_received(&self) -> bool {
        self.faces.iter().any(|f| f.received.is_some())
    }

    /// Row (j, k)'s centre row with the received halos, in `scratch`: per variable, the row
    /// from `GHOST` nodes before its first interior node, copied from `q` at offset `from`, as
    /// far as the pass's last vector reads it, with the received values in its halos.
    pub(crate) fn centre_row<'s>(
        &self,
        q: [&[R]; V],
        from: usize,
        (j, k): (isize, isize),
        scratch: &'s mut Vec<R>,
    ) -> [&'s [R]; V] {
        let (len, r) = (self.row_len, self.packed_row(j, k));
        scratch.resize(V * len, R::zero());
        let mut centre: [&[R]; V] = [&[]; V];
        let rows = centre.iter_mut().zip(scratch.chunks_exact_mut(len));
        for (v, (centre, row)) in rows.enumerate().take(self.vars) {
            row.copy_from_slice(&q[v][from..from + len]);
            for f in &self.faces {
                let (Some(received), part) = (f.received, f.receives[v]) else {
                    continue;
                };
                let at = part.at + r * part.width;
                let i = (part.i - 1 + GHOST as isize) as usize;
                row[i..i + part.width].copy_from_slice(&received[at..at + part.width]);
            }
            *centre = row;
        }
        centre
    }
}
