//! Sums over nodes in a fixed order whatever the thread count: blocks of [`BLOCK`] items,
//! each added in order on whichever thread takes it, then the blocks' sums in order.
use rayon::prelude::*;

/// Items per block of a fixed-order sum.
pub const BLOCK: usize = 4096;

/// Fewest rows (nodes) a parallel loop hands to one task: below it, handing work to another
/// thread costs more than the rows (the pressure solve's loops on 5,000 nodes ran slower on
/// 16 cores than on 2 without it).
pub const MIN_ROWS: usize = 2048;

/// Σ f(i) for i in 0..n, `K` sums at once (one pass over the data for several dot products).
pub fn sums<const K: usize>(n: usize, f: impl Fn(usize) -> [f64; K] + Sync) -> [f64; K] {
    let blocks: Vec<[f64; K]> = (0..n.div_ceil(BLOCK))
        .into_par_iter()
        .map(|b| {
            let mut s = [0.0; K];
            for i in b * BLOCK..n.min((b + 1) * BLOCK) {
                let v = f(i);
                for k in 0..K {
                    s[k] += v[k];
                }
            }
            s
        })
        .collect();
    let mut total = [0.0; K];
    for s in blocks {
        for k in 0..K {
            total[k] += s[k];
        }
    }
    total
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
}
