//! Moving packed halo buffers between blocks, and the global reductions.
use ferroflow_core::{BackendError, Real};

/// One halo link of a local block: the packed values it sends to a neighbouring block and those
/// arriving from it. What the values are (a face of a structured block, an index list of an
/// unstructured partition) is the scheme's business; links are matched by their blocks and tags.
#[derive(Debug, Clone)]
pub struct Halo<R> {
    /// The local block.
    pub block: usize,
    /// The block at the other end.
    pub neighbour: usize,
    /// Tag of the message that fills `recv`: unique among the links into `block` of all blocks.
    pub recv_tag: usize,
    /// Tag of the message `send` goes as: the `recv_tag` of the neighbour's link back.
    pub send_tag: usize,
    /// Packed values this link sends.
    pub send: Vec<R>,
    /// Packed values arriving for this link.
    pub recv: Vec<R>,
}

impl<R> Halo<R> {
    /// Whether `other` is the link across from this one (what it sends, this one receives).
    pub fn faces(&self, other: &Halo<R>) -> bool {
        other.block == self.neighbour
            && other.neighbour == self.block
            && other.send_tag == self.recv_tag
    }
}

/// A message of raw bytes between processes, for drivers that keep their halos in memory
/// of their own (device buffers, pinned host buffers) rather than in [`Halo`]s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Message {
    /// The process at the other end.
    pub rank: usize,
    /// Tag: a receive matches the send of the same tag from `rank`.
    pub tag: usize,
    /// Where the bytes are (sent) or go (received): host memory, or device memory where the
    /// transport says [`Transport::device_memory`].
    pub address: usize,
    /// Number of bytes.
    pub bytes: usize,
}

/// Moves halos between blocks and reduces across them. Every process calls every method in
/// the same order (collective semantics, as MPI).
pub trait Transport<R: Real> {
    /// This process's number and the number of processes.
    fn rank_size(&self) -> (usize, usize);

    /// Fills every halo's `recv` with the `send` of the face across from it; `send` may come
    /// back holding other values (the in-process transport swaps buffers).
    fn exchange(&mut self, halos: &mut [Halo<R>]) -> Result<(), BackendError>;

    /// Sums `values` over all processes (every process gets the sums).
    fn sum(&mut self, values: &mut [f64]) -> Result<(), BackendError>;

    /// Gives every process the values of process `root`.
    fn broadcast(&mut self, values: &mut [R], root: usize) -> Result<(), BackendError>;

    /// Sends every message of `sends` and fills every one of `receives`, returning when all
    /// are done.
    ///
    /// # Safety
    /// Every address must be valid for its bytes (readable for sends, writable for receives)
    /// and not touched by anything else until this returns; device addresses only where
    /// [`Transport::device_memory`] says so.
    unsafe fn exchange_bytes(
        &mut self,
        sends: &[Message],
        receives: &[Message],
    ) -> Result<(), BackendError>;

    /// Whether [`Transport::exchange_bytes`] reads and writes GPU memory itself (CUDA-aware
    /// MPI).
    fn device_memory(&self) -> bool {
        false
    }

    /// The machine process `rank` runs on, numbered from 0: processes of one machine can share
    /// its devices' memory.
    fn machine(&self, _rank: usize) -> usize {
        0
    }

    /// The process that iterates block `block` of `count`: contiguous ranges of blocks.
    fn owner(&self, block: usize, count: usize) -> usize {
        let size = self.rank_size().1;
        (0..size)
            .find(|r| block < (r + 1) * count / size)
            .unwrap_or(size - 1)
    }
}

/// Fills the `recv` of `halos[h]` from the face across from it, which must be in `halos` too,
/// by swapping the two buffers (no values are copied): the `send` across then holds what
/// `recv` held, which the next packing overwrites.
pub(crate) fn swap_across<R: Real>(halos: &mut [Halo<R>], h: usize) -> Result<(), BackendError> {
    let failed = |message| BackendError::Failed {
        backend: "in-process",
        message,
    };
    let from = (0..halos.len())
        .find(|g| halos[h].faces(&halos[*g]))
        .ok_or_else(|| {
            failed(format!(
                "no link from block {} into block {} with tag {}",
                halos[h].neighbour, halos[h].block, halos[h].recv_tag
            ))
        })?;
    if halos[from].send.len() != halos[h].recv.len() {
        return Err(failed(format!(
            "{} values sent from block {} into {} awaited by block {}",
            halos[from].send.len(),
            halos[h].neighbour,
            halos[h].recv.len(),
            halos[h].block
        )));
    }
    let recv = std::mem::take(&mut halos[h].recv);
    halos[h].recv = std::mem::replace(&mut halos[from].send, recv);
    Ok(())
}

/// All blocks in this process: halos are handed over by swapping buffers.
#[derive(Debug, Default, Clone, Copy)]
pub struct InProcess;

impl<R: Real> Transport<R> for InProcess {
    fn rank_size(&self) -> (usize, usize) {
        (0, 1)
    }

    fn exchange(&mut self, halos: &mut [Halo<R>]) -> Result<(), BackendError> {
        (0..halos.len()).try_for_each(|h| swap_across(halos, h))
    }

    fn sum(&mut self, _values: &mut [f64]) -> Result<(), BackendError> {
        Ok(())
    }

    fn broadcast(&mut self, _values: &mut [R], _root: usize) -> Result<(), BackendError> {
        Ok(())
    }

    /// One process has no other to message.
    unsafe fn exchange_bytes(
        &mut self,
        sends: &[Message],
        receives: &[Message],
    ) -> Result<(), BackendError> {
        match sends.iter().chain(receives).next() {
            None => Ok(()),
            Some(m) => Err(BackendError::Failed {
                backend: "in-process",
                message: format!("a message to process {} of a single process", m.rank),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(block: usize, neighbour: usize, tags: (usize, usize), value: f64) -> Halo<f64> {
        Halo {
            block,
            neighbour,
            recv_tag: tags.0,
            send_tag: tags.1,
            send: vec![value; 3],
            recv: vec![0.0; 3],
        }
    }

    #[test]
    fn in_process_links_match_by_blocks_and_tags() {
        // Blocks 0 and 1 share two links (as two faces of a periodic pair would).
        let mut halos = vec![
            link(0, 1, (10, 20), 1.0),
            link(1, 0, (20, 10), 2.0),
            link(0, 1, (11, 21), 3.0),
            link(1, 0, (21, 11), 4.0),
        ];
        InProcess.exchange(&mut halos).unwrap();
        let received: Vec<f64> = halos.iter().map(|h| h.recv[0]).collect();
        assert_eq!(received, [2.0, 1.0, 4.0, 3.0]);
        let mut lonely = vec![link(0, 1, (10, 20), 1.0)];
        let e = InProcess.exchange(&mut lonely).unwrap_err().to_string();
        assert!(
            e.contains("no link from block 1 into block 0 with tag 10"),
            "{e}"
        );
        let mut short = vec![link(0, 1, (10, 20), 1.0), link(1, 0, (20, 10), 2.0)];
        short[1].send.pop();
        let e = InProcess.exchange(&mut short).unwrap_err().to_string();
        assert!(e.contains("2 values sent from block 1 into 3"), "{e}");
    }
}
