/// Fewest nodes per axis: one interior node beyond the three the wall extrapolation reads.
pub const MIN_NODES: usize = 5;

/// Ghost layers on each side of every active axis. The fourth-difference pressure dissipation
/// reaches two nodes out, so two layers let a block's stencil be filled entirely from ghosts.
pub const GHOST: usize = 2;

/// Memory layout of one block: nodes `0..n[d]` per axis (boundary nodes included), ghost layers
/// `-GHOST..0` and `n..n+GHOST` on active axes, `i` fastest. Rows and planes are padded so that
/// neighbouring rows and planes do not start at the same cache sets (power-of-two grids
/// otherwise thrash the caches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Number of active axes (2 or 3). In 2D, axis 2 has one node and no ghosts.
    pub dim: usize,
    /// Nodes per axis, boundary nodes included.
    pub n: [usize; 3],
    /// Ghost layers per axis.
    pub ghost: [usize; 3],
    /// Element strides per axis (`stride[0] == 1`).
    pub stride: [usize; 3],
    /// Elements per array, padding and ghosts included.
    pub len: usize,
}

impl Layout {
    /// Layout of a `dim`-dimensional block with `n` nodes per axis (`n[2]` ignored in 2D).
    /// Panics where [`Layout::try_new`] gives none: grids are validated before they are laid
    /// out.
    pub fn new(dim: usize, n: [usize; 3]) -> Layout {
        Layout::try_new(dim, n).expect("a grid whose arrays fit in the address space")
    }

    /// [`Layout::new`], or none if an array of the layout, of 8-byte values for five
    /// variables, would not fit in the address space.
    pub fn try_new(dim: usize, n: [usize; 3]) -> Option<Layout> {
        let n = if dim == 2 { [n[0], n[1], 1] } else { n };
        let ghost = [GHOST, GHOST, if dim == 3 { GHOST } else { 0 }];
        let mut m = [0; 3];
        for d in 0..3 {
            m[d] = n[d].checked_add(2 * ghost[d])?;
        }
        let row = padded_row(m[0])?;
        let plane = row.checked_mul(padded_rows(dim, m[1])?)?;
        let len = plane.checked_mul(m[2])?;
        len.checked_mul(8 * 5)
            .filter(|b| *b <= isize::MAX as usize)?;
        Some(Layout {
            dim,
            n,
            ghost,
            stride: [1, row, plane],
            len,
        })
    }

    /// Memory offset of node `(i, j, k)`; ghosts have negative or `>= n` indices.
    #[inline(always)]
    pub fn index(&self, i: isize, j: isize, k: isize) -> usize {
        let g = self.ghost;
        (i + g[0] as isize) as usize * self.stride[0]
            + (j + g[1] as isize) as usize * self.stride[1]
            + (k + g[2] as isize) as usize * self.stride[2]
    }

    /// Number of nodes (boundary nodes included, ghosts excluded).
    pub fn nodes(&self) -> usize {
        self.n.iter().product()
    }

    /// Number of nodes updated by the interior scheme (boundary nodes excluded).
    pub fn interior_nodes(&self) -> usize {
        (0..self.dim).map(|d| self.n[d] - 2).product()
    }

    /// Calls `f(i, j, k, offset)` for every node, i fastest.
    pub fn for_each_node(&self, mut f: impl FnMut(usize, usize, usize, usize)) {
        for k in 0..self.n[2] {
            for j in 0..self.n[1] {
                for i in 0..self.n[0] {
                    f(i, j, k, self.index(i as isize, j as isize, k as isize));
                }
            }
        }
    }
}

/// Row length: an odd number of groups of 8 elements (64 bytes in f64). Of any 64
/// consecutive rows then no two start 4 KiB (a multiple of 512 elements in f64, 1024 in f32)
/// apart, where they would map to the same cache sets.
fn padded_row(m: usize) -> Option<usize> {
    let groups = m.div_ceil(8);
    groups.checked_add(1 - groups % 2)?.checked_mul(8)
}

/// Rows per plane in 3D: odd, so that the plane stride, too, is an odd number of groups of 8
/// elements and the five planes the 3D stencil reads do not start at the same cache sets (a
/// power-of-two plane stride at 60³, 124³ or 252³ nodes put them there).
fn padded_rows(dim: usize, m: usize) -> Option<usize> {
    match dim {
        3 => m.checked_add(1 - m % 2),
        _ => Some(m),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_is_a_bijection_onto_the_nodes() {
        for layout in [Layout::new(2, [7, 5, 0]), Layout::new(3, [5, 6, 7])] {
            let mut seen = vec![false; layout.len];
            layout.for_each_node(|_, _, _, o| {
                assert!(!seen[o]);
                seen[o] = true;
            });
            assert_eq!(seen.iter().filter(|s| **s).count(), layout.nodes());
        }
    }

    #[test]
    fn ghosts_stay_inside_the_allocation() {
        let l = Layout::new(3, [5, 6, 7]);
        let g = GHOST as isize;
        assert_eq!(l.index(-g, -g, -g), 0);
        assert!(l.index(4 + g, 5 + g, 6 + g) < l.len);
    }

    #[test]
    fn grids_beyond_the_address_space_have_no_layout() {
        assert!(Layout::try_new(2, [usize::MAX / 2, 5, 1]).is_none());
        assert!(Layout::try_new(3, [1 << 21, 1 << 21, 1 << 21]).is_none());
        assert_eq!(
            Layout::try_new(3, [5, 6, 7]),
            Some(Layout::new(3, [5, 6, 7]))
        );
    }

    #[test]
    fn rows_and_planes_are_padded_off_powers_of_two() {
        let l = Layout::new(2, [508, 10, 0]);
        assert_eq!(l.stride[1], 520);
        assert_eq!(Layout::new(2, [9, 9, 0]).stride[1], 24);
        assert_eq!(Layout::new(2, [11, 9, 0]).stride[1], 24);
        // 124³ nodes, 128 with ghosts: rows of 136, 129 rows per plane.
        let l = Layout::new(3, [124, 124, 124]);
        assert_eq!(l.stride, [1, 136, 136 * 129]);
        assert_eq!(l.len, 136 * 129 * 128);
        // Odd groups of 8 already: unchanged (257³, 261 with ghosts).
        assert_eq!(Layout::new(3, [257; 3]).stride, [1, 264, 264 * 261]);
        for n in [60, 124, 252, 508] {
            let l = Layout::new(3, [n; 3]);
            for s in &l.stride[1..] {
                assert_eq!(s % 16, 8, "{n}: stride {s}");
            }
        }
    }
}
