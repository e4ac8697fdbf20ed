//! The order in which the fused pass visits the rows of a 3D block: tiles of a few rows in y,
//! each marched through all planes in z, so that the five planes of p and three of each
//! velocity component the stencil reads stay in the core's L2 cache from one plane to the
//! next (in plain row order a plane of a 257³ grid is 0.5 MiB per variable, and each value
//! came from the shared L3 cache five times). A 2D block is one tile: plain row order.
use ferroflow_core::Layout;

/// Bytes the tiles of planes a 3D row reads may take: within the L2 cache of one core (1–2
/// MiB on current x86 cores), with room for the rows written.
const TILE_BYTES: usize = 512 << 10;

/// Tiles of planes the 3D stencil reads at once: five of p, three of each velocity component.
const PLANES_READ: usize = 5 + 3 * 3;

/// The interior rows (fixed j, k) of a layout in tile order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowTiles {
    rows_j: usize,
    planes: usize,
    /// Rows per tile (the last tile may have fewer).
    tile: usize,
    /// The first interior plane: 1 in 3D, 0 in 2D.
    k0: usize,
}

impl RowTiles {
    /// The order for layout `l` of values of `size` bytes.
    pub(crate) fn new(l: &Layout, size: usize) -> RowTiles {
        let rows_j = l.n[1] - 2;
        match l.dim {
            3 => {
                // A tile of a plane holds the tile's rows and two more on either side.
                let rows = TILE_BYTES / (PLANES_READ * l.stride[1] * size);
                RowTiles {
                    rows_j,
                    planes: l.n[2] - 2,
                    tile: rows.saturating_sub(4).clamp(1, rows_j),
                    k0: 1,
                }
            }
            _ => RowTiles {
                rows_j,
                planes: 1,
                tile: rows_j,
                k0: 0,
            },
        }
    }

    /// Number of rows.
    pub(crate) fn rows(&self) -> usize {
        self.rows_j * self.planes
    }

    /// The interior row (j, k) visited at position `p`.
    #[inline]
    pub(crate) fn row(&self, p: usize) -> (usize, usize) {
        let first = p / (self.tile * self.planes) * self.tile;
        let width = self.tile.min(self.rows_j - first);
        let q = p - first * self.planes;
        (1 + first + q % width, self.k0 + q / width)
    }

    /// The position of the row of plain index `r` (rows in k, then j order).
    #[inline]
    pub(crate) fn position(&self, r: usize) -> usize {
        let (j, k) = (r % self.rows_j, r / self.rows_j);
        let first = j / self.tile * self.tile;
        let width = self.tile.min(self.rows_j - first);
        first * self.planes + k * width + j - first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_visit_every_row_once_and_march_through_the_planes() {
        for (dim, n, size) in [(3, [9, 23, 6], 8), (3, [300, 45, 7], 4), (2, [9, 12, 1], 8)] {
            let l = Layout::new(dim, n);
            let t = RowTiles::new(&l, size);
            let planes = if dim == 3 { n[2] - 2 } else { 1 };
            let rows = (n[1] - 2) * planes;
            assert_eq!(t.rows(), rows);
            let mut seen = vec![false; rows];
            for p in 0..rows {
                let (j, k) = t.row(p);
                let r = (k - t.k0) * (n[1] - 2) + j - 1;
                assert!(!seen[r], "{n:?}: row {r} twice");
                seen[r] = true;
                assert_eq!(t.position(r), p, "{n:?}");
            }
            // The first tile's rows, plane after plane.
            let first: Vec<_> = (0..planes * t.tile).map(|p| t.row(p)).collect();
            let want: Vec<_> = (0..planes)
                .flat_map(|k| (1..=t.tile).map(move |j| (j, t.k0 + k)))
                .collect();
            assert_eq!(first, want, "{n:?}");
        }
        // 300 f32 nodes per row (304 with ghosts, 312 padded): 512 KiB / (14 · 1248 B) = 30
        // rows, 26 rows per tile; the 2D block is one tile.
        assert_eq!(RowTiles::new(&Layout::new(3, [300, 45, 7]), 4).tile, 26);
        assert_eq!(RowTiles::new(&Layout::new(2, [9, 12, 1]), 8).tile, 10);
    }
}
