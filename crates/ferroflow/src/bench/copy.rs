//! The CPU's copy bandwidth, the denominator of every CPU roofline share `ferroflow bench`
//! prints, and the pairing of each timed repetition with the copies measured beside it.
//!
//! The copy is an explicit loop of vector loads and ordinary stores over two arrays of 256 MiB
//! of f64, on a pool built as the solver's: each destination line is read before it is
//! written (the write-allocate), as the pass's stores are. Bytes are counted as STREAM counts
//! them, 8 read and 8 written per value; the write-allocate's reads are not counted, nor are
//! they in the pass's bytes per node. It is not `copy_from_slice`: glibc's memcpy copies a
//! chunk of 2 KiB to 1 MiB (the L2 cache on AMD) with `rep movsb`, which the processor may
//! carry out without the write-allocate; on the 2-core development machine that copy gave
//! 27–30 GB/s in some runs and 43–45 GB/s in others (BENCHMARKS.md).
use rayon::prelude::*;
use std::time::Instant;

/// Values (f64) of each array: 256 MiB, beyond the last-level caches measured (32 MiB, 300 MiB).
const VALUES: usize = 32 << 20;

/// Values of a chunk, the least a thread of the pool copies, as the pass updates rows of at
/// least 4096 nodes: rayon splits the chunks among the threads as it splits the pass's rows.
const CHUNK: usize = 4096;

/// Copies timed for one sample (the fastest counts).
const COPIES_PER_SAMPLE: usize = 5;

/// The two arrays of the copy.
pub(crate) struct CopyProbe {
    src: Vec<f64>,
    dst: Vec<f64>,
}

impl CopyProbe {
    /// The arrays, both written once on `pool` (so every page is mapped before a timed copy).
    pub(crate) fn new(pool: &rayon::ThreadPool) -> CopyProbe {
        let mut probe = CopyProbe {
            src: vec![1.0; VALUES],
            dst: vec![0.0; VALUES],
        };
        probe.copy(pool);
        probe
    }

    /// Bytes read + written per second of one copy on `pool`.
    fn copy(&mut self, pool: &rayon::ThreadPool) -> f64 {
        // A factor of one the compiler cannot see: a plain copy loop would become a call of
        // memcpy, whose store kind glibc chooses by size.
        let one = std::hint::black_box(1.0);
        let start = Instant::now();
        pool.install(|| {
            (self.dst.par_chunks_mut(CHUNK))
                .zip(self.src.par_chunks(CHUNK))
                .for_each(|(d, s)| d.iter_mut().zip(s).for_each(|(d, s)| *d = s * one))
        });
        let secs = start.elapsed().as_secs_f64();
        std::hint::black_box(&self.dst);
        (2 * VALUES * size_of::<f64>()) as f64 / secs
    }

    /// One sample of the copy bandwidth: the fastest of a few copies. Other programs on the
    /// machine only slow a copy down, and a slowed copy would raise the shares divided by it;
    /// STREAM, too, reports its best.
    pub(crate) fn sample(&mut self, pool: &rayon::ThreadPool) -> f64 {
        let copies: Vec<f64> = (0..COPIES_PER_SAMPLE).map(|_| self.copy(pool)).collect();
        Spread::of(&copies).max
    }
}

/// The copy bandwidth a bench's shares of the roofline divide by.
pub(crate) enum Copies {
    /// Measured once: a GPU's device-to-device copy, the CPU's in an MPI run, or nothing on
    /// an MPI process that does not report.
    Once(f64),
    /// The CPU's, sampled again beside every timed repetition on a pool built as the solver's.
    Beside {
        probe: CopyProbe,
        pool: rayon::ThreadPool,
    },
}

impl Copies {
    /// The CPU's copy on `pool`, its arrays set up.
    pub(crate) fn cpu(pool: rayon::ThreadPool) -> Copies {
        let probe = CopyProbe::new(&pool);
        Copies::Beside { probe, pool }
    }

    /// The bandwidth now, bytes read + written per second.
    pub(crate) fn sample(&mut self) -> f64 {
        match self {
            Copies::Once(bandwidth) => *bandwidth,
            Copies::Beside { probe, pool } => probe.sample(pool),
        }
    }
}

/// `repeats` timed repetitions (`time` returns one's seconds) with a copy sample (`copy`)
/// before the first and after each: the repetitions' seconds and the `repeats + 1` samples.
pub(crate) fn interleaved<E>(
    repeats: usize,
    mut copy: impl FnMut() -> f64,
    mut time: impl FnMut() -> Result<f64, E>,
) -> Result<(Vec<f64>, Vec<f64>), E> {
    let mut copies = vec![copy()];
    let mut seconds = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        seconds.push(time()?);
        copies.push(copy());
    }
    Ok((seconds, copies))
}

/// The copy bandwidth of a CPU pool for a bench that measures it once: the median of
/// `samples` samples.
pub(crate) fn cpu_copy_bandwidth(pool: &rayon::ThreadPool, samples: usize) -> f64 {
    let mut probe = CopyProbe::new(pool);
    let all: Vec<f64> = (0..samples.max(1)).map(|_| probe.sample(pool)).collect();
    Spread::of(&all).median
}

/// The median and range of some numbers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Spread {
    /// The middle one; of an even count, the upper of the two middle ones.
    pub median: f64,
    pub min: f64,
    pub max: f64,
}

impl Spread {
    /// The spread of `values`, of which there must be at least one.
    pub(crate) fn of(values: &[f64]) -> Spread {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        Spread {
            median: v[v.len() / 2],
            min: v[0],
            max: v[v.len() - 1],
        }
    }
}

/// Each timed repetition's share of the roofline: its node rate times the bytes per node, over
/// the mean of the copy bandwidths measured just before and just after it. `copies` holds one
/// more value than `rates`: copy, repetition, copy, …, repetition, copy.
pub(crate) fn paired_shares(rates: &[f64], copies: &[f64], bytes_per_node: f64) -> Vec<f64> {
    assert_eq!(
        copies.len(),
        rates.len() + 1,
        "a copy before and after each repetition"
    );
    rates
        .iter()
        .zip(copies.windows(2))
        .map(|(rate, beside)| rate * bytes_per_node / (0.5 * (beside[0] + beside[1])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_repetition_is_divided_by_the_copies_beside_it() {
        // Rates of 1 and 2 G nodes/s at 10 B/node against copies of 20, 40, 40 GB/s: the
        // first pairs with 30 GB/s, the second with 40.
        let shares = paired_shares(&[1e9, 2e9], &[20e9, 40e9, 40e9], 10.0);
        assert_eq!(shares, vec![1.0 / 3.0, 0.5]);
        // A copy that jumps between repetitions moves only the shares beside it.
        let shares = paired_shares(&[1e9; 3], &[10e9, 10e9, 20e9, 20e9], 10.0);
        assert_eq!(shares, vec![1.0, 10.0 / 15.0, 0.5]);
    }

    #[test]
    fn copies_are_sampled_before_the_first_repetition_and_after_each() {
        let log = std::cell::RefCell::new(String::new());
        let copy = || {
            log.borrow_mut().push('c');
            10.0 * log.borrow().len() as f64
        };
        let time = || {
            log.borrow_mut().push('t');
            Ok::<f64, ()>(log.borrow().len() as f64)
        };
        let (seconds, copies) = interleaved(3, copy, time).unwrap();
        assert_eq!(*log.borrow(), "ctctctc");
        assert_eq!(seconds, vec![2.0, 4.0, 6.0]);
        assert_eq!(copies, vec![10.0, 30.0, 50.0, 70.0]);
        // A failed repetition ends the measurement with its error.
        let mut runs = 0;
        let failed = interleaved(
            3,
            || 1.0,
            || {
                runs += 1;
                if runs == 2 {
                    Err("lost")
                } else {
                    Ok(1.0)
                }
            },
        );
        assert_eq!(failed, Err("lost"));
        assert_eq!(runs, 2);
    }

    #[test]
    #[should_panic(expected = "a copy before and after each repetition")]
    fn a_repetition_without_a_copy_after_it_is_refused() {
        paired_shares(&[1e9, 1e9], &[10e9, 10e9], 8.0);
    }

    #[test]
    fn the_spread_is_the_middle_and_the_ends_whatever_the_order() {
        let s = Spread::of(&[3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (3.0, 1.0, 4.0));
        let s = Spread::of(&[5.0]);
        assert_eq!((s.median, s.min, s.max), (5.0, 5.0, 5.0));
    }
}
