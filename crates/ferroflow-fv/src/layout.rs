//! Cell data of the fast loops in one of two layouts: structure of arrays (one array per
//! variable, seed 004's baseline `q[npde][ncell]`) or array of structures padded to 64-byte
//! records (seed 004's optimised `q[ncell][8]`): a cell's state and centroid in one cache
//! line, its gradients in two. A face reads one record per side instead of 23 scattered
//! numbers.
use crate::gas::{Prim, Vec3};
use crate::gradients::Gradient;
use crate::lanes::Lane;
use std::marker::PhantomData;

/// How cell data lies in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One array per variable.
    Soa,
    /// One 64-byte record per cell for ρ, u, v, w, p, x, y, z; two for the 15 gradients.
    Aos,
}

/// One cache line.
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy)]
struct Line([f64; 8]);

/// Doubles per cell of the state records: ρ, u, v, w, p and the centroid.
const STATE: usize = 8;
/// Doubles per cell of the gradient records: 15 and one of padding.
const GRAD: usize = 16;

/// Primitive states and centroids of cells and ghosts, gradients of cells.
pub(crate) struct Cells {
    aos: bool,
    /// Cells and ghosts.
    all: usize,
    /// Cells (those with gradients).
    cells: usize,
    state: Vec<Line>,
    grad: Vec<Line>,
}

impl Cells {
    /// Storage for `centroids.len()` cells and ghosts (their centroids), the first `cells`
    /// with gradients; states and gradients zero.
    pub(crate) fn new(layout: Layout, centroids: &[Vec3], cells: usize) -> Cells {
        let all = centroids.len();
        let lines = |n: usize| vec![Line([0.0; 8]); n.div_ceil(8)];
        let mut out = Cells {
            aos: layout == Layout::Aos,
            all,
            cells,
            state: lines(STATE * all),
            grad: lines(GRAD * cells),
        };
        let view = out.view(false);
        for (c, x) in centroids.iter().enumerate() {
            for k in 0..3 {
                // SAFETY: c < all, and the view is the only access.
                unsafe { *view.state_at(c, 5 + k) = x[k] };
            }
        }
        out
    }

    /// Raw access for the loops, which write disjoint cells from several threads; with
    /// `transpose`, records are read whole (see [`CellView::state`]).
    pub(crate) fn view(&mut self, transpose: bool) -> CellView<'_> {
        CellView {
            aos: self.aos,
            transpose: transpose && self.aos,
            all: self.all,
            cells: self.cells,
            state: self.state.as_mut_ptr().cast(),
            grad: self.grad.as_mut_ptr().cast(),
            life: PhantomData,
        }
    }
}

/// Pointers into [`Cells`]. Safety, for every method: indices in range, and no two threads
/// write the same number while any reads it.
#[derive(Clone, Copy)]
pub(crate) struct CellView<'a> {
    aos: bool,
    transpose: bool,
    all: usize,
    cells: usize,
    state: *mut f64,
    grad: *mut f64,
    life: PhantomData<&'a mut Cells>,
}

// SAFETY: the loops write disjoint cells (see the methods' contract).
unsafe impl Send for CellView<'_> {}
// SAFETY: as for Send.
unsafe impl Sync for CellView<'_> {}

impl CellView<'_> {
    /// Address of number `k` (ρ, u, v, w, p, x, y, z) of cell or ghost `c`.
    #[inline(always)]
    unsafe fn state_at(&self, c: usize, k: usize) -> *mut f64 {
        let i = if self.aos {
            STATE * c + k
        } else {
            k * self.all + c
        };
        self.state.add(i)
    }

    /// Address of gradient component `k` = 3 v + axis of cell `c`.
    #[inline(always)]
    unsafe fn grad_at(&self, c: usize, k: usize) -> *mut f64 {
        let i = if self.aos {
            GRAD * c + k
        } else {
            k * self.cells + c
        };
        self.grad.add(i)
    }

    /// The states of cells or ghosts `c(lane)`.
    #[inline(always)]
    pub(crate) unsafe fn prim<T: Lane>(&self, c: impl Fn(usize) -> usize) -> [T; 5] {
        std::array::from_fn(|v| T::from_fn(|i| *self.state_at(c(i), v)))
    }

    /// The centroids of cells or ghosts `c(lane)`.
    #[inline(always)]
    pub(crate) unsafe fn centroid<T: Lane>(&self, c: impl Fn(usize) -> usize) -> [T; 3] {
        std::array::from_fn(|k| T::from_fn(|i| *self.state_at(c(i), 5 + k)))
    }

    /// The states and centroids of cells or ghosts `c(lane)`: transposed from whole
    /// records (and written back so by the setters), or number by number.
    #[inline(always)]
    pub(crate) unsafe fn state<T: Lane>(&self, c: impl Fn(usize) -> usize) -> ([T; 5], [T; 3]) {
        if !self.transpose {
            return (self.prim(&c), self.centroid(&c));
        }
        let a = T::columns(|i| self.state_at(c(i), 0));
        let b = T::columns(|i| self.state_at(c(i), 4));
        ([a[0], a[1], a[2], a[3], b[0]], [b[1], b[2], b[3]])
    }

    /// The gradients of cells `c(lane)`: transposed from whole records, or number by
    /// number.
    #[inline(always)]
    pub(crate) unsafe fn grad<T: Lane>(&self, c: impl Fn(usize) -> usize) -> [[T; 3]; 5] {
        if !self.transpose {
            return std::array::from_fn(|v| {
                std::array::from_fn(|a| T::from_fn(|i| *self.grad_at(c(i), 3 * v + a)))
            });
        }
        let q: [[T; 4]; 4] = std::array::from_fn(|k| T::columns(|i| self.grad_at(c(i), 4 * k)));
        std::array::from_fn(|v| std::array::from_fn(|a| q[(3 * v + a) / 4][(3 * v + a) % 4]))
    }

    /// Sets the states of cells or ghosts `c0 + lane`.
    #[inline(always)]
    pub(crate) unsafe fn set_prim<T: Lane>(&self, c0: usize, w: &[T; 5]) {
        if self.transpose {
            // ρ, u, v, w as four-number rows; p lane by lane (the centroid follows it).
            T::rows([w[0], w[1], w[2], w[3]], |i| self.state_at(c0 + i, 0));
            w[4].each(|i, x| *self.state_at(c0 + i, 4) = x);
            return;
        }
        for (v, w) in w.iter().enumerate() {
            if self.aos {
                w.each(|i, x| *self.state_at(c0 + i, v) = x);
            } else {
                w.store(self.state_at(c0, v));
            }
        }
    }

    /// Sets the gradients of cells `c0 + lane`.
    #[inline(always)]
    pub(crate) unsafe fn set_grad<T: Lane>(&self, c0: usize, g: &[[T; 3]; 5]) {
        if self.transpose {
            let at = |k: usize| {
                if k < 15 {
                    g[k / 3][k % 3]
                } else {
                    T::splat(0.0)
                }
            };
            for k in 0..4 {
                let columns = [0, 1, 2, 3].map(|j| at(4 * k + j));
                T::rows(columns, |i| self.grad_at(c0 + i, 4 * k));
            }
            return;
        }
        for v in 0..5 {
            for a in 0..3 {
                if self.aos {
                    g[v][a].each(|i, x| *self.grad_at(c0 + i, 3 * v + a) = x);
                } else {
                    g[v][a].store(self.grad_at(c0, 3 * v + a));
                }
            }
        }
    }

    /// Asks for the lines cell `c`'s face work reads (state, centroid, gradients) to be
    /// brought into the L1 cache.
    #[inline(always)]
    pub(crate) fn prefetch(&self, c: usize) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            // SAFETY: SSE is part of x86-64; a prefetch never faults.
            let line = |p: *const f64| unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) };
            // Addresses in range all the same.
            let c = c.min(self.all - 1);
            let g = c.min(self.cells - 1);
            if self.aos {
                line(self.state.wrapping_add(STATE * c));
                line(self.grad.wrapping_add(GRAD * g));
                line(self.grad.wrapping_add(GRAD * g + 8));
            } else {
                for k in 0..STATE {
                    line(self.state.wrapping_add(k * self.all + c));
                }
                for k in 0..15 {
                    line(self.grad.wrapping_add(k * self.cells + g));
                }
            }
        }
    }

    /// The state of cell or ghost `c`.
    #[inline(always)]
    pub(crate) unsafe fn prim1(&self, c: usize) -> Prim {
        self.prim(|_| c)
    }

    /// The gradients of cell `c`.
    #[inline(always)]
    pub(crate) unsafe fn grad1(&self, c: usize) -> Gradient {
        self.grad(|_| c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_keep_what_is_written() {
        let x: Vec<Vec3> = (0..11).map(|c| [c as f64, 0.5, -1.0]).collect();
        for layout in [Layout::Soa, Layout::Aos] {
            let mut cells = Cells::new(layout, &x, 9);
            let v = cells.view(true);
            // SAFETY: indices in range, one thread.
            unsafe {
                assert_eq!(v.state::<f64>(|_| 10).1, [10.0, 0.5, -1.0]);
                v.set_prim(10, &[1.0, 2.0, 3.0, 4.0, 5.0]);
                v.set_grad(8, &std::array::from_fn(|a| [a as f64, 7.0, -(a as f64)]));
                assert_eq!(v.prim1(10), [1.0, 2.0, 3.0, 4.0, 5.0]);
                assert_eq!(v.prim1(9), [0.0; 5]);
                assert_eq!(v.centroid::<f64>(|_| 10), [10.0, 0.5, -1.0]);
                assert_eq!(v.grad1(8)[3], [3.0, 7.0, -3.0]);
                assert_eq!(v.grad1(7), [[0.0; 3]; 5]);
            }
        }
    }
}
