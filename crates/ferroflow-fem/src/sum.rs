//! Sums over nodes in a fixed order whatever the thread count, and the order a GPU keeps too
//! (the CUDA kernels' `reduce_chunks`, kernels/fem.cuh): blocks of [`BLOCK`] items, each
//! spread over [`LANES`] lanes (item k of a block to lane k mod [`LANES`], added in order),
//! the lanes then added pairwise in a fixed tree; the blocks' sums are added the same way, as
//! lanes and a tree. A block is one thread block of a GPU, a lane one of its threads.
use ferroflow_core::Real;
use rayon::prelude::*;

/// Items per block of a fixed-order sum.
pub const BLOCK: usize = 1024;

/// Lanes of a block (threads of a GPU block): a power of two.
pub const LANES: usize = 256;

/// Fewest rows (nodes) a parallel loop hands to one task: below it, handing work to another
/// thread costs more than the rows (the pressure solve's loops on 5,000 nodes ran slower on
/// 16 cores than on 2 without it).
pub const MIN_ROWS: usize = 2048;

/// Σ f(i) for i in 0..n, `K` sums at once (one pass over the data for several dot products),
/// added in the working precision `R`.
pub fn sums<R: Real, const K: usize>(n: usize, f: impl Fn(usize) -> [R; K] + Sync) -> [R; K] {
    let blocks: Vec<[R; K]> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .with_min_len(MIN_ROWS / BLOCK)
        .map(|b| lanes(b * BLOCK..n.min((b + 1) * BLOCK), &f))
        .collect();
    lanes(0..blocks.len(), |b| blocks[b])
}

/// Σ f(i) over `items`: item k of the range to lane k mod [`LANES`], the lanes in a tree.
fn lanes<R: Real, const K: usize>(
    items: std::ops::Range<usize>,
    f: impl Fn(usize) -> [R; K],
) -> [R; K] {
    let mut lane = [[R::zero(); K]; LANES];
    for (k, i) in items.enumerate() {
        let v = f(i);
        for c in 0..K {
            lane[k % LANES][c] = lane[k % LANES][c] + v[c];
        }
    }
    let mut half = LANES / 2;
    while half > 0 {
        for t in 0..half {
            for c in 0..K {
                lane[t][c] = lane[t][c] + lane[t + half][c];
            }
        }
        half /= 2;
    }
    lane[0]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_have_the_same_bits_on_any_thread_count() {
        let x: Vec<f64> = (0..50_000).map(|i| 1.0 / (1.0 + i as f64)).collect();
        let f = |i: usize| [x[i], x[i] * x[i]];
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let three = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        let a = one.install(|| sums(x.len(), f));
        let b = three.install(|| sums(x.len(), f));
        assert_eq!(a.map(f64::to_bits), b.map(f64::to_bits));
        assert!((a[0] - x.iter().sum::<f64>()).abs() < 1e-12);
    }

    #[test]
    fn items_go_to_lanes_and_the_lanes_to_a_tree() {
        // One block of three lanes' worth: 0.1 + 0.2 in lane 0 (in order), 1e16 in lane 1,
        // -1e16 in lane 2; the tree adds lane 2 to lane 0 first, then lane 1.
        let mut x = vec![0.0; LANES + 1];
        x[0] = 0.1;
        x[LANES] = 0.2;
        x[1] = 1e16;
        x[2] = -1e16;
        let [s] = sums(x.len(), |i| [x[i]]);
        assert_eq!(s, ((0.1 + 0.2) + -1e16) + 1e16);
        // Blocks' sums: as lanes of their own.
        let y: Vec<f64> = (0..3 * BLOCK)
            .map(|i| if i % BLOCK == 0 { 1.0 } else { 0.0 })
            .collect();
        assert_eq!(sums(y.len(), |i| [y[i]]), [3.0]);
    }
}
