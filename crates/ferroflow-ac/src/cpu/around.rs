//! How the fused pass's formulas find the state around a node. They read through
//! [`Around`], so each formula exists once whether a neighbour is found by its offset from
//! any node ([`Offsets`]) or through pointers fixed for a whole row ([`RowPointers`]).
//!
//! The row pointers are for the vectorised explicit pass, which reads a vector of consecutive
//! nodes ([`RowNodes`]) at once: with offsets, LLVM computed each neighbour's address from a
//! vector of node offsets kept on the stack (a load, an add and a move to a general register
//! per neighbour: 35–38 of the 266–271 instructions per vector of nodes of the 3D loop's
//! AVX-512 build). With a pointer per neighbour row and the node's place in the row as the one
//! index, an address is that pointer (a register, or one load) plus the index.
use crate::cpu::lanes::{Isa, Lanes};
use crate::cpu::step::{at, V};
use ferroflow_core::{Real, GHOST};

/// The state around one node (`X` a number) or a vector of nodes (`X` a [`Lanes`]).
pub(crate) trait Around<X> {
    /// Variable `v` at `k` nodes from the node along axis `d` (`k = 0`: the node itself).
    fn q(&self, v: usize, d: usize, k: isize) -> X;
    /// Variable `v` of the source term at the node.
    fn src(&self, v: usize) -> X;
}

/// The node at offset `o` of arrays laid out with strides `st`.
#[derive(Clone, Copy)]
pub(crate) struct Offsets<'a, R> {
    pub q: [&'a [R]; V],
    pub src: [&'a [R]; V],
    pub st: [usize; 3],
    pub o: usize,
}

impl<R: Copy> Around<R> for Offsets<'_, R> {
    #[inline(always)]
    fn q(&self, v: usize, d: usize, k: isize) -> R {
        at(
            self.q[v],
            self.o.wrapping_add_signed(k * self.st[d] as isize),
        )
    }

    #[inline(always)]
    fn src(&self, v: usize) -> R {
        at(self.src[v], self.o)
    }
}

/// Farthest a stencil reaches along an axis: two nodes (fourth differences).
const REACH: usize = 2;

/// Pointers to the rows (fixed j, k) around one row of the state: per variable, the row
/// itself, and the rows `k = -2, -1, 1, 2` steps away along y and z. A node is then its
/// index `t` in the row ([`RowPointers::node`]).
pub(crate) struct RowPointers<'a, R> {
    centre: [*const R; V],
    across: [[[*const R; 2 * REACH]; 2]; V],
    src: [*const R; V],
    /// The arrays the centre rows and the others lie in, whose bounds debug builds check
    /// every read against.
    centre_arrays: [&'a [R]; V],
    arrays: [&'a [R]; V],
}

/// The [`Lanes::WIDTH`] nodes from index `t` of a row of [`RowPointers`], as vectors of
/// instruction set `I`.
#[derive(Clone, Copy)]
pub(crate) struct RowNodes<'a, R, I> {
    rows: &'a RowPointers<'a, R>,
    t: usize,
    isa: std::marker::PhantomData<I>,
}

impl<'a, R: Real> RowPointers<'a, R> {
    /// The rows around the row whose first node is at offset `start` of arrays `q` and `src`
    /// (empty slices for variables they lack), laid out with strides `st`.
    pub(crate) fn new(q: [&'a [R]; V], src: [&[R]; V], st: [usize; 3], start: usize) -> Self {
        // Wrapping: the pointers of variables an array lacks, and of the z rows of a 2D
        // layout, are formed but never read.
        let row = |a: &[R], k: isize, s: usize| {
            a.as_ptr().wrapping_offset(start as isize + k * s as isize)
        };
        RowPointers {
            centre: std::array::from_fn(|v| row(q[v], 0, 0)),
            across: std::array::from_fn(|v| {
                std::array::from_fn(|a| {
                    std::array::from_fn(|i| {
                        let k = i as isize - REACH as isize + (i >= REACH) as isize;
                        row(q[v], k, st[1 + a])
                    })
                })
            }),
            src: std::array::from_fn(|v| row(src[v], 0, 0)),
            centre_arrays: q,
            arrays: q,
        }
    }

    /// These rows with the centre row's nodes read from `centre` (per variable, the row from
    /// `GHOST` nodes before its first interior node) instead of the state.
    pub(crate) fn with_centre<'b>(self, centre: [&'b [R]; V]) -> RowPointers<'b, R>
    where
        'a: 'b,
    {
        RowPointers {
            centre: centre.map(|c| c.as_ptr().wrapping_add(GHOST)),
            centre_arrays: centre,
            ..self
        }
    }

    /// The [`Lanes::WIDTH`] nodes from index `t` of the row.
    #[inline(always)]
    pub(crate) fn nodes<I>(&self, t: usize) -> RowNodes<'_, R, I> {
        RowNodes {
            rows: self,
            t,
            isa: std::marker::PhantomData,
        }
    }
}

impl<R: Real, I: Isa> Around<Lanes<R, I>> for RowNodes<'_, R, I> {
    #[inline(always)]
    fn q(&self, v: usize, d: usize, k: isize) -> Lanes<R, I> {
        debug_assert!(k != 0 || d == 0);
        let t = self.t as isize;
        // SAFETY: the rows were formed from the arrays the stencil reads, and the stencil's
        // nodes lie inside them (checked in debug builds, as by `at`).
        unsafe {
            let p = match d {
                0 => self.rows.centre[v].offset(t + k),
                _ => {
                    let i = (k + REACH as isize - (k > 0) as isize) as usize;
                    self.rows.across[v][d - 1][i].offset(t)
                }
            };
            let arrays = match d {
                0 => &self.rows.centre_arrays,
                _ => &self.rows.arrays,
            };
            let range = arrays[v].as_ptr_range();
            debug_assert!(range.start <= p && p.wrapping_add(Lanes::<R, I>::WIDTH) <= range.end);
            Lanes::load(p)
        }
    }

    #[inline(always)]
    fn src(&self, v: usize) -> Lanes<R, I> {
        // SAFETY: as above (the source has the state's layout).
        unsafe { Lanes::load(self.rows.src[v].add(self.t)) }
    }
}
