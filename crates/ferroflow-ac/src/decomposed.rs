//! The driver of a decomposed grid.
use crate::blocks::{block_problem, FaceBuffers};
use crate::implicit::GaugeSums;
use crate::{BlockBackend, Method, Problem};
use ferroflow_core::decomposition::{BlockExtent, Decomposition, Face};
use ferroflow_core::{
    Backend, BackendError, Fields, Layout, Points, Real, Residuals, Side, Snapshot,
};
use ferroflow_parallel::{Halo, Transport};
use rayon::prelude::*;

/// A decomposed grid driven as one backend: the blocks of this process, their halos, and
/// the transport to the other processes' blocks.
pub struct Decomposed<B: BlockBackend, T> {
    pub(crate) decomposition: Decomposition,
    pub(crate) extents: Vec<BlockExtent>,
    /// Blocks iterated here, with their numbers.
    pub(crate) blocks: Vec<(usize, B)>,
    /// One per interface side of a local block, with the index of that block in `blocks`.
    pub(crate) halos: Vec<Halo<B::Real>>,
    pub(crate) faces: Vec<(usize, Face)>,
    pub(crate) transport: T,
    /// The block holding the pressure reference node, and the node's offset there.
    pub(crate) reference: (usize, usize),
    pub(crate) equations: usize,
    /// The whole grid's layout (no process holds its state).
    layout: Layout,
    name: &'static str,
    /// Whether the problem asks for the implicit method.
    implicit: bool,
}

/// The backend name in errors.
const BACKEND: &str = "decomposed";

fn failed(message: String) -> BackendError {
    BackendError::Failed {
        backend: BACKEND,
        message,
    }
}

/// Tag of the halo that fills side `side` of block `block`: unique per receiving face.
pub(crate) fn face_tag(block: usize, side: Side) -> usize {
    6 * block + side as usize
}

impl<R: Real, B: BlockBackend<Real = R> + Send, T: Transport<R>> Decomposed<B, T> {
    /// Cuts `problem` as `decomposition` says and sets up this process's blocks with `make`
    /// (which gets each block's problem and extent).
    pub fn new(
        problem: &Problem<R>,
        decomposition: Decomposition,
        transport: T,
        mut make: impl FnMut(&Problem<R>, &BlockExtent) -> Result<B, BackendError>,
    ) -> Result<Self, BackendError> {
        decomposition.check_grid(&problem.layout, BACKEND)?;
        let extents = decomposition.extents();
        let (rank, _) = transport.rank_size();
        let vars = problem.equations();
        let mut blocks = Vec::new();
        let (mut halos, mut faces) = (Vec::new(), Vec::new());
        let mut name = "decomposed";
        let implicit = matches!(problem.numerics.method, Method::Implicit(_));
        for e in &extents {
            if transport.owner(e.id, extents.len()) != rank {
                continue;
            }
            let p = block_problem(&decomposition, problem, e)
                .map_err(|err| failed(format!("block {}: {err}", e.id)))?;
            let mut backend = make(&p, e)?;
            name = backend.name();
            if implicit {
                // Refused here, before the run, where a backend cannot couple its blocks.
                backend.implicit()?;
            }
            for side in Side::ALL {
                if let Some(neighbour) = e.neighbours[side as usize] {
                    let face = Face {
                        side,
                        vars,
                        reach: p.halo_reach(),
                    };
                    let len = face.len(&p.layout);
                    halos.push(Halo {
                        block: e.id,
                        neighbour,
                        recv_tag: face_tag(e.id, side),
                        send_tag: face_tag(neighbour, side.opposite()),
                        send: vec![R::zero(); len],
                        recv: vec![R::zero(); len],
                    });
                    faces.push((blocks.len(), face));
                }
            }
            blocks.push((e.id, backend));
        }
        let (owner, local) = decomposition.owner(problem.pressure_ref);
        let layout = extents[owner].layout(decomposition.dim);
        let [i, j, k] = local.map(|x| x as isize);
        Ok(Decomposed {
            decomposition,
            extents,
            blocks,
            halos,
            faces,
            transport,
            reference: (owner, layout.index(i, j, k)),
            equations: problem.equations(),
            layout: problem.layout,
            name,
            implicit,
        })
    }

    /// The decomposition.
    pub fn decomposition(&self) -> &Decomposition {
        &self.decomposition
    }

    /// This process's number and the number of processes.
    pub fn rank_size(&self) -> (usize, usize) {
        self.transport.rank_size()
    }

    /// One iteration of every block, then the halo exchange. The faces a block moves in its
    /// step ([`BlockBackend::moves_in_step`]) are packed there; their halos are read from the
    /// received values when `received` (the last exchange left them there), and this
    /// exchange leaves them there when `defer`.
    fn iterate(
        &mut self,
        norms: bool,
        received: bool,
        defer: bool,
    ) -> Result<Residuals, BackendError> {
        let (owner, offset) = self.reference;
        let mut shift = [R::zero()];
        if let Some((_, b)) = self.blocks.iter_mut().find(|(id, _)| *id == owner) {
            shift[0] = b.pressure_at(offset)?;
        }
        self.share(&mut shift, owner)?;
        let (faces, halos, shift) = (&self.faces, &mut self.halos, shift[0]);
        let sums = B::batch(&mut self.blocks, |blocks| {
            each_block(blocks, faces, halos, |(_, b), faces, halos| {
                let mut moved: Vec<_> = (faces.iter().zip(halos))
                    .filter(|((_, face), _)| b.moves_in_step(face))
                    .map(|((_, face), halo)| FaceBuffers {
                        face,
                        received: received.then_some(&halo.recv[..]),
                        send: &mut halo.send[..],
                    })
                    .collect();
                b.step(shift, norms, &mut moved)
            })
        })?;
        self.exchange_but_moved(Halos::State, true, defer)?;
        // Without norms a block's sums may be empty (not computed): none count.
        match norms {
            true => self.total(sums),
            false => Ok(Residuals::default()),
        }
    }

    /// The whole grid's residuals from this process's blocks' sums (in block order).
    fn total(&mut self, sums: Vec<Residuals>) -> Result<Residuals, BackendError> {
        let ids = self.blocks.iter().map(|(id, _)| *id);
        let (d, equations) = (&self.decomposition, self.equations);
        residuals_in_block_order(d, equations, ids.zip(sums), &mut self.transport)
    }

    /// One implicit iteration: each block's phases, the gauge's sums added over all blocks
    /// before the projection, the increments' halos exchanged after every sweep but the last
    /// (Jacobi across blocks, whatever relaxes within them), the state's after the update.
    fn iterate_implicit(&mut self, norms: bool) -> Result<Residuals, BackendError> {
        let parts = self.each(|b| b.implicit()?.residual())?;
        let gauge = self.gauge(parts)?;
        self.each(|b| b.implicit()?.project(gauge))?;
        let sweeps = match self.blocks.first_mut() {
            Some((_, b)) => b.implicit()?.sweeps(),
            None => 0,
        };
        for sweep in 0..sweeps {
            self.each(|b| b.implicit()?.sweep(sweep))?;
            if sweep + 1 < sweeps {
                self.exchange(Halos::Increments)?;
            }
        }
        let (owner, offset) = self.reference;
        let mut shift = [R::zero()];
        if let Some((_, b)) = self.blocks.iter_mut().find(|(id, _)| *id == owner) {
            shift[0] = b.implicit()?.reference_after(offset)?;
        }
        self.share(&mut shift, owner)?;
        let sums = match norms {
            true => self.each(|b| b.implicit()?.residuals())?,
            false => Vec::new(),
        };
        self.each(|b| b.implicit()?.update(shift[0]))?;
        self.exchange(Halos::State)?;
        match norms {
            true => self.total(sums),
            false => Ok(Residuals::default()),
        }
    }

    /// The whole grid's gauge ([`GaugeSums::gauge`]) from this process's blocks' sums (in
    /// block order): added in block order whatever the processes, so that a job's bits do not
    /// depend on how the blocks are spread over them.
    pub(crate) fn gauge(&mut self, local: Vec<GaugeSums>) -> Result<f64, BackendError> {
        let ids = self.blocks.iter().map(|(id, _)| *id);
        let local = ids.zip(local).map(|(id, g)| (id, vec![g.resid, g.weight]));
        let all = every_block(self.decomposition.count(), 2, local, &mut self.transport)?;
        let mut sums = GaugeSums::default();
        for s in all.chunks_exact(2) {
            sums.add(GaugeSums {
                resid: s[0],
                weight: s[1],
            });
        }
        Ok(sums.gauge())
    }

    /// Gives every process `values` from the process owning block `block`.
    pub(crate) fn share(&mut self, values: &mut [R], block: usize) -> Result<(), BackendError> {
        let root = self.transport.owner(block, self.extents.len());
        self.transport.broadcast(values, root)
    }

    /// `work` on every block of this process, the blocks in parallel; their results in block
    /// order.
    pub(crate) fn each<U: Send>(
        &mut self,
        work: impl Fn(&mut B) -> Result<U, BackendError> + Send + Sync,
    ) -> Result<Vec<U>, BackendError> {
        B::batch(&mut self.blocks, |blocks| {
            blocks.par_iter_mut().map(|(_, b)| work(b)).collect()
        })
    }

    /// Packs `what` on every face, moves the buffers, and unpacks them into the halos.
    pub(crate) fn exchange(&mut self, what: Halos) -> Result<(), BackendError> {
        self.exchange_but_moved(what, false, false)
    }

    /// [`Decomposed::exchange`], but of the faces the blocks moved in their step: not packed
    /// when `packed` (the step did), not unpacked when `defer` (the next step reads them).
    fn exchange_but_moved(
        &mut self,
        what: Halos,
        packed: bool,
        defer: bool,
    ) -> Result<(), BackendError> {
        let (faces, halos) = (&self.faces, &mut self.halos);
        B::batch(&mut self.blocks, |blocks| {
            each_face(blocks, faces, halos, |(_, b), face, halo| match what {
                _ if packed && b.moves_in_step(face) => Ok(()),
                Halos::State => b.pack(face, &mut halo.send),
                Halos::Increments => b.implicit()?.pack_increments(face, &mut halo.send),
            })
        })?;
        self.transport.exchange(&mut self.halos)?;
        let (faces, halos) = (&self.faces, &mut self.halos);
        B::batch(&mut self.blocks, |blocks| {
            each_face(blocks, faces, halos, |(_, b), face, halo| match what {
                _ if defer && b.moves_in_step(face) => Ok(()),
                Halos::State => b.unpack(face, &halo.recv),
                Halos::Increments => b.implicit()?.unpack_increments(face, &halo.recv),
            })
        })
    }
}

/// `work` on every face of every block with the face's halo (`faces` and `halos` list a
/// block's faces together, in block order): the blocks in parallel, a block's faces in turn.
/// The halos of a block's faces lie apart, so packing and unpacking give the same values in
/// any order.
pub(crate) fn each_face<X: Send, R: Send>(
    blocks: &mut [X],
    faces: &[(usize, Face)],
    halos: &mut [Halo<R>],
    work: impl Fn(&mut X, &Face, &mut Halo<R>) -> Result<(), BackendError> + Sync,
) -> Result<(), BackendError> {
    each_block(blocks, faces, halos, |b, faces, halos| {
        (halos.iter_mut().zip(faces)).try_for_each(|(halo, (_, face))| work(b, face, halo))
    })?;
    Ok(())
}

/// `work` on every block with its faces and their halos (listed as for [`each_face`]), the
/// blocks in parallel; the results in block order.
fn each_block<X: Send, R: Send, U: Send>(
    blocks: &mut [X],
    mut faces: &[(usize, Face)],
    mut halos: &mut [Halo<R>],
    work: impl Fn(&mut X, &[(usize, Face)], &mut [Halo<R>]) -> Result<U, BackendError> + Sync,
) -> Result<Vec<U>, BackendError> {
    debug_assert!(faces.is_sorted_by_key(|(b, _)| *b));
    let groups: Vec<_> = (0..blocks.len())
        .map(|b| {
            let n = faces.iter().take_while(|(x, _)| *x == b).count();
            let (mine, rest) = faces.split_at(n);
            faces = rest;
            let (theirs, rest) = std::mem::take(&mut halos).split_at_mut(n);
            halos = rest;
            (mine, theirs)
        })
        .collect();
    blocks
        .par_iter_mut()
        .zip(groups)
        .map(|(b, (faces, halos))| work(b, faces, halos))
        .collect()
}

/// What a halo exchange moves.
#[derive(Clone, Copy)]
pub(crate) enum Halos {
    /// The current state.
    State,
    /// The implicit relaxation's increments.
    Increments,
}

impl<R: Real, B: BlockBackend<Real = R> + Send, T: Transport<R>> Backend for Decomposed<B, T> {
    type Real = R;

    fn name(&self) -> &'static str {
        self.name
    }

    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        let mut res = Residuals::default();
        for it in 0..iterations {
            res = if self.implicit {
                self.iterate_implicit(it + 1 == iterations)?
            } else {
                // Within one call the steps read the moved faces' halos from the received
                // values, and the last exchange unpacks them: between calls every halo is in
                // the state, whatever reads it.
                let last = it + 1 == iterations;
                self.iterate(last, it > 0, !last)?
            };
        }
        Ok(res)
    }

    fn layout(&self) -> Layout {
        self.layout
    }

    /// Every process gets the whole grid: each block's owner shares it.
    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        let (d, blocks) = (&self.decomposition, &mut self.blocks);
        gather_everywhere(d, self.equations, &mut self.transport, |id| {
            let mut mine = blocks.iter_mut().filter(|(i, _)| *i == id);
            mine.next().map(|(_, b)| b.download())
        })
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        let blocks = self.blocks.iter_mut().map(|(id, b)| (*id, b));
        self.decomposition
            .scatter(fields, self.equations, BACKEND, blocks, |b, f| b.upload(f))
    }

    /// This process's blocks, each its own nodes and the first node layers of the blocks above
    /// it ([`crate::pieces`]); no process gathers the grid.
    fn pieces(&mut self) -> Result<Vec<Snapshot<R>>, BackendError> {
        let mut local = Vec::with_capacity(self.blocks.len());
        for (id, b) in &mut self.blocks {
            local.push((self.extents[*id], b.download()?));
        }
        crate::pieces::pieces(&self.decomposition, local, &mut self.transport)
    }

    fn piece_points(&self) -> Vec<Points> {
        let d = &self.decomposition;
        let extents = self.blocks.iter().map(|(id, _)| &self.extents[*id]);
        extents.map(|e| crate::pieces::piece_points(d, e)).collect()
    }

    /// Each block from its own piece, then one halo exchange: every halo value comes from the
    /// block that owns it, as after an iteration.
    fn restore_pieces(&mut self, pieces: &[Snapshot<R>]) -> Result<(), BackendError> {
        check_pieces(
            pieces,
            &Backend::piece_points(self),
            self.equations,
            BACKEND,
        )?;
        let dim = self.decomposition.dim;
        for ((id, b), piece) in self.blocks.iter_mut().zip(pieces) {
            b.upload(&crate::pieces::block_from_piece(
                &self.extents[*id],
                dim,
                piece,
            ))?;
        }
        self.exchange(Halos::State)
    }
}

/// The whole grid in every process: each block's process shares its state (`local(id)`: the
/// state of block `id` if it is this process's).
pub(crate) fn gather_everywhere<R: Real, T: Transport<R>>(
    d: &Decomposition,
    vars: usize,
    transport: &mut T,
    mut local: impl FnMut(usize) -> Option<Result<Fields<R>, BackendError>>,
) -> Result<Fields<R>, BackendError> {
    let count = d.count();
    d.gather(vars, |e| {
        let mut f = match local(e.id) {
            Some(f) => f?,
            None => Fields::zeros(e.layout(d.dim), vars),
        };
        let root = transport.owner(e.id, count);
        for v in &mut f.vars {
            transport.broadcast(v, root)?;
        }
        Ok(f)
    })
}

/// Refuses `pieces` other than those at `expected`, with `vars` variables each.
pub(crate) fn check_pieces<R>(
    pieces: &[Snapshot<R>],
    expected: &[Points],
    vars: usize,
    backend: &'static str,
) -> Result<(), BackendError> {
    let got: Vec<Points> = pieces.iter().map(|p| p.points).collect();
    if got != expected || pieces.iter().any(|p| p.vars.len() != vars) {
        return Err(BackendError::Failed {
            backend,
            message: format!(
                "pieces at {got:?} restored into blocks whose pieces are {expected:?}"
            ),
        });
    }
    Ok(())
}

/// The whole grid's residuals from the sums of this process's blocks (`(id, sums)`): every
/// block's sums reach every process (an all-reduce in which the other processes add zeros,
/// exactly), then they are added in block order, as in one process: the norms do not depend
/// on how the blocks are spread over processes.
pub(crate) fn residuals_in_block_order<R: Real, T: Transport<R>>(
    d: &Decomposition,
    equations: usize,
    local: impl IntoIterator<Item = (usize, Residuals)>,
    transport: &mut T,
) -> Result<Residuals, BackendError> {
    let local = local.into_iter().map(|(id, r)| (id, r.sum_sq));
    let all = every_block(d.count(), equations, local, transport)?;
    let blocks = all.chunks_exact(equations).map(|sums| Residuals {
        sum_sq: sums.to_vec(),
        nodes: 0,
    });
    Ok(d.sum_residuals(equations, blocks))
}

/// Every block's `width` values in every process, block after block, from this process's
/// blocks' (`(id, values)`): an all-reduce in which the other processes add zeros, exactly.
pub(crate) fn every_block<R: Real, T: Transport<R>>(
    count: usize,
    width: usize,
    local: impl IntoIterator<Item = (usize, Vec<f64>)>,
    transport: &mut T,
) -> Result<Vec<f64>, BackendError> {
    let mut all = vec![0.0; count * width];
    for (id, values) in local {
        all[id * width..][..width].copy_from_slice(&values);
    }
    transport.sum(&mut all)?;
    Ok(all)
}
