//! A communication-cost model of decomposed runs: what each rank sends per iteration (bytes,
//! messages) for a cut of the grid, and a projection of strong and weak scaling to many ranks
//! from a measured single-device rate and a stated network (latency and bandwidth). It
//! assumes one block per rank, every link at the stated network (ranks of one node talk
//! faster in practice), and one all-reduce of a scalar per iteration (the reference pressure)
//! as a tree of log2 P latency-bound steps.
use ferroflow_core::decomposition::{Decomposition, Face};
use ferroflow_core::{ProblemError, Side};

/// The network between ranks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Network {
    /// Bytes per second one way per rank.
    pub bandwidth: f64,
    /// Seconds per message.
    pub latency: f64,
}

/// What one block sends per iteration, and the nodes it updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// Interior nodes the block updates.
    pub nodes: usize,
    /// Values it sends (every interface face; it receives as many).
    pub values: usize,
    /// Messages it sends (one per interface face).
    pub messages: usize,
}

/// Each block's traffic when `vars` variables are exchanged (the halo widths of
/// `decomposition::halo_width` with second-order differences, as on GPUs).
pub fn traffic(d: &Decomposition, vars: usize) -> Vec<Traffic> {
    d.extents()
        .iter()
        .map(|e| {
            let layout = e.layout(d.dim);
            let faces: Vec<usize> = Side::ALL
                .into_iter()
                .filter(|s| e.neighbours[*s as usize].is_some())
                .map(|side| {
                    Face {
                        side,
                        vars,
                        reach: 1,
                    }
                    .len(&layout)
                })
                .collect();
            Traffic {
                nodes: layout.interior_nodes(),
                values: faces.iter().sum(),
                messages: faces.len(),
            }
        })
        .collect()
}

/// One projected rank count.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// Blocks per axis (one per rank).
    pub blocks: [usize; 3],
    /// The busiest rank's traffic.
    pub busiest: Traffic,
    /// Its seconds per iteration computing and communicating.
    pub compute: f64,
    pub communicate: f64,
    /// Parallel efficiency against one rank: communication after computation, and fully
    /// hidden behind it.
    pub serial: f64,
    pub overlapped: f64,
}

/// Ranks that each update `rate` nodes per second and exchange `vars` variables of
/// `value_bytes` bytes over `net`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    pub vars: usize,
    pub value_bytes: usize,
    pub rate: f64,
    pub net: Network,
}

impl Model {
    /// Strong scaling: the grid of `n` nodes per axis cut for `ranks` ranks.
    pub fn strong(
        &self,
        dim: usize,
        n: [usize; 3],
        ranks: usize,
    ) -> Result<Projection, ProblemError> {
        let d = Decomposition::automatic(dim, n, ranks)?;
        let one = d.layout().interior_nodes() as f64 / self.rate;
        Ok(self.project(&d, one / ranks as f64))
    }

    /// Weak scaling: every rank owns the interior of a grid of `n` nodes per axis (as
    /// measured on one device), the blocks as even as `ranks` allows.
    pub fn weak(&self, dim: usize, n: usize, ranks: usize) -> Result<Projection, ProblemError> {
        // The cut of a cube that many ranks would get: its factors are the most even.
        let mut cube = [1; 3];
        for side in cube.iter_mut().take(dim) {
            *side = ranks * (n - 2) + 2;
        }
        let blocks = Decomposition::automatic(dim, cube, ranks)?.blocks;
        let mut global = [1; 3];
        for a in 0..dim {
            global[a] = blocks[a] * (n - 2) + 2;
        }
        let d = Decomposition::new(dim, global, blocks)?;
        Ok(self.project(&d, (n - 2).pow(dim as u32) as f64 / self.rate))
    }

    /// The busiest rank of `d`; `ideal` is its seconds per iteration without communication
    /// at perfect efficiency.
    fn project(&self, d: &Decomposition, ideal: f64) -> Projection {
        let (ranks, net) = (d.count(), self.net);
        let collective = 2.0 * net.latency * (ranks as f64).log2().ceil();
        let cost = |t: &Traffic| {
            let compute = t.nodes as f64 / self.rate;
            let bytes = (t.values * self.value_bytes) as f64;
            let communicate = match ranks {
                1 => 0.0,
                _ => t.messages as f64 * net.latency + bytes / net.bandwidth + collective,
            };
            (compute, communicate)
        };
        let busiest = traffic(d, self.vars)
            .into_iter()
            .max_by(|a, b| {
                let (ca, ma) = cost(a);
                let (cb, mb) = cost(b);
                (ca + ma).total_cmp(&(cb + mb))
            })
            .expect("a decomposition has blocks");
        let (compute, communicate) = cost(&busiest);
        Projection {
            blocks: d.blocks,
            busiest,
            compute,
            communicate,
            serial: ideal / (compute + communicate),
            overlapped: ideal / compute.max(communicate),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODEL: Model = Model {
        vars: 5,
        value_bytes: 8,
        rate: 10e9,
        net: Network {
            bandwidth: 50e9,
            latency: 1.5e-6,
        },
    };

    #[test]
    fn a_cube_cut_in_eight_sends_three_faces_per_block() {
        let d = Decomposition::new(3, [66, 66, 66], [2, 2, 2]).unwrap();
        for t in traffic(&d, 5) {
            // Owned 32^3; faces of 32 x 32 nodes, p two layers deep, u, v, w, T one.
            assert_eq!((t.nodes, t.messages), (32 * 32 * 32, 3));
            assert_eq!(t.values, 3 * (2 + 4) * 32 * 32);
        }
        let one = Decomposition::new(3, [66, 66, 66], [1, 1, 1]).unwrap();
        assert_eq!(traffic(&one, 5)[0].messages, 0);
    }

    #[test]
    fn one_rank_is_fully_efficient_and_more_ranks_less() {
        let one = MODEL.strong(3, [513; 3], 1).unwrap();
        assert_eq!(
            (one.serial, one.overlapped, one.communicate),
            (1.0, 1.0, 0.0)
        );
        let mut last = 1.0;
        for ranks in [8, 64, 512] {
            let p = MODEL.strong(3, [513; 3], ranks).unwrap();
            assert_eq!(p.blocks.iter().product::<usize>(), ranks);
            assert!(p.serial < last && p.serial <= p.overlapped, "{p:?}");
            last = p.serial;
        }
        // Weak scaling keeps each rank's grid: compute time stays, efficiency falls only
        // by the communication.
        let w = MODEL.weak(3, 257, 64).unwrap();
        assert_eq!(w.blocks, [4, 4, 4]);
        assert_eq!(w.busiest.nodes, 255 * 255 * 255);
        let expected = w.compute / (w.compute + w.communicate);
        assert!((w.serial - expected).abs() < 1e-12 && w.serial < 1.0);
    }
}
