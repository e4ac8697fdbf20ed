//! [`CudaSolver`]: the mesh, the state and the iteration's buffers on a GPU, and the steady
//! iteration of [`crate::time::steady`] run there.
use super::args::{limiter_code, PatchArgs, StepArgs, ViscousArgs};
use super::{step_build, NORM_THREADS};
use crate::gas::Cons;
use crate::residual::Solver;
use crate::time::Steady;
use ferroflow_core::BackendError;
use ferroflow_cuda::cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};
use ferroflow_cuda::cudarc::nvrtc::Ptx;
use ferroflow_cuda::{address, grid, Check, Device, ReduceKernel};
use ferroflow_mesh::colour::greedy;
use std::ops::Range;

/// How the face loop's fluxes reach the cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaceLoop {
    /// Stored per face, then gathered per cell in ascending face order: the CPU's bits.
    Stored,
    /// Added to both cells with atomics as they are computed: not bitwise.
    Atomic,
    /// Faces in colours that share no cell, each colour's fluxes added to their cells in
    /// place, one launch per colour: not bitwise (each cell's sum is in the colours' order).
    Coloured,
}

/// The faces grouped by [`FaceLoop::Coloured`]'s colours.
struct Colours {
    /// The faces, colour after colour, ascending within each.
    faces: CudaSlice<u32>,
    /// Each colour's range in `faces`.
    ranges: Vec<Range<usize>>,
}

/// Where the solver runs and how it launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaOptions {
    /// CUDA device ordinal.
    pub device: usize,
    /// Threads per block of the cell and face loops.
    pub threads: u32,
    /// How the face loop's fluxes reach the cells.
    pub face_loop: FaceLoop,
}

impl Default for CudaOptions {
    fn default() -> CudaOptions {
        CudaOptions {
            device: 0,
            threads: 128,
            face_loop: FaceLoop::Stored,
        }
    }
}

/// The kernels of kernels/fv_step.cu.
struct Kernels {
    primitives: CudaFunction,
    ghosts: CudaFunction,
    gradients: CudaFunction,
    faces: CudaFunction,
    faces_atomic: CudaFunction,
    faces_coloured: CudaFunction,
    viscous: CudaFunction,
    gather: CudaFunction,
    waves: CudaFunction,
    time_steps: CudaFunction,
    stage: CudaFunction,
    norm: CudaFunction,
}

/// A [`Solver`]'s mesh, conditions and state on a GPU, iterated there.
pub struct CudaSolver {
    device: Device,
    kernels: Kernels,
    reduce: ReduceKernel,
    args: StepArgs,
    options: CudaOptions,
    /// u, r, then every other real array `args` points to.
    reals: Vec<CudaSlice<f64>>,
    _indices: Vec<CudaSlice<u32>>,
    _patches: CudaSlice<PatchArgs>,
    /// Σ (R/Ω)² of each conservative variable.
    norm: CudaSlice<f64>,
    /// With [`FaceLoop::Coloured`].
    colours: Option<Colours>,
    cells: usize,
    faces: usize,
    viscous: bool,
}

/// Component k of item i at k × n + i: `values` (items of K numbers) as a structure of arrays.
fn transposed<const K: usize>(values: &[[f64; K]]) -> Vec<f64> {
    (0..K)
        .flat_map(|k| values.iter().map(move |v| v[k]))
        .collect()
}

impl CudaSolver {
    /// `solver`'s mesh, gas, limiter and conditions on the GPU `options.device`, with the
    /// state `u`; an error says why there is none, what does not fit, or what the GPU lacks
    /// (exact-solution boundaries, viscous fluxes added to the cells as computed).
    pub fn new(solver: &Solver, u: &[Cons], options: &CudaOptions) -> Result<Self, BackendError> {
        if solver.viscous.is_some() && options.face_loop != FaceLoop::Stored {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!(
                    "viscous fluxes with the {} face loop (store the fluxes)",
                    match options.face_loop {
                        FaceLoop::Coloured => "coloured",
                        _ => "atomic",
                    }
                ),
            });
        }
        let patches = (solver.boundaries.iter())
            .map(PatchArgs::new)
            .collect::<Result<Vec<_>, _>>()?;
        let g = &solver.geometry;
        let (cells, faces, pairs) = (g.cells, g.faces(), g.cell_faces.len());
        let points = g.centroid.len();
        assert_eq!(u.len(), cells, "one state per cell");
        if pairs >= u32::MAX as usize || points >= u32::MAX as usize {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!("{cells} cells and {faces} faces (32-bit indices)"),
            });
        }
        let device = Device::open(options.device)?;
        // Reals per cell: u, u0, r, dt, volume, 15 gradients, 5 + 3 for cells and ghosts;
        // per face 5 fluxes, wave, normal, area, centroid; per pair 3 weights; indices.
        let need = 8 * (cells * (5 + 5 + 5 + 1 + 1 + 15) + points * (5 + 3))
            + 8 * faces * (5 + 1 + 3 + 1 + 3)
            + 8 * 3 * pairs
            + 4 * (2 * faces + (faces - g.internal) + cells + 1 + pairs);
        device.ensure_free(need, &format!("{cells} cells, {faces} faces"))?;
        let module = (device.ctx)
            .load_module(Ptx::from_binary(device.compile(&step_build())?))
            .check("loading fv_step")?;
        let f = |name: &str| module.load_function(name).check(name);
        let kernels = Kernels {
            primitives: f("fv_primitives")?,
            ghosts: f("fv_ghosts")?,
            gradients: f("fv_gradients")?,
            faces: f("fv_faces")?,
            faces_atomic: f("fv_faces_atomic")?,
            faces_coloured: f("fv_faces_coloured")?,
            viscous: f("fv_viscous")?,
            gather: f("fv_gather")?,
            waves: f("fv_waves")?,
            time_steps: f("fv_time_steps")?,
            stage: f("fv_stage")?,
            norm: f("fv_norm")?,
        };
        let stream = device.stream.clone();
        let up = |v: &[f64]| stream.clone_htod(v).check("uploading the mesh");
        let zeros = |k: usize| stream.alloc_zeros::<f64>(k).check("allocating the state");
        let ints = |v: &[u32]| stream.clone_htod(v).check("uploading the mesh");
        let offsets: Vec<u32> = g.cell_offsets.iter().map(|&o| o as u32).collect();
        let reals = vec![
            up(&transposed(u))?,
            zeros(5 * cells)?,
            zeros(5 * cells)?,
            up(&transposed(&g.normal))?,
            up(&g.area)?,
            up(&transposed(&g.face_centroid))?,
            up(&g.volume)?,
            up(&transposed(&g.centroid))?,
            up(&transposed(&solver.weights))?,
            zeros(5 * points)?,
            zeros(15 * cells)?,
            zeros(5 * faces)?,
            zeros(faces)?,
            zeros(cells)?,
            zeros(5 * cells.div_ceil(NORM_THREADS as usize))?,
        ];
        let indices = vec![
            ints(&g.left)?,
            ints(&g.right)?,
            ints(&g.patch)?,
            ints(&offsets)?,
            ints(&g.cell_faces)?,
        ];
        let patches = stream
            .clone_htod(&patches)
            .check("uploading the boundary conditions")?;
        let a = |k: usize| address(&reals[k], &stream);
        let i = |k: usize| address(&indices[k], &stream);
        let args = StepArgs {
            cells: cells as i64,
            faces: faces as i64,
            internal: g.internal as i64,
            pairs: pairs as i64,
            left: i(0),
            right: i(1),
            normal: a(3),
            area: a(4),
            face_centroid: a(5),
            volume: a(6),
            centroid: a(7),
            patch: i(2),
            patches: address(&patches, &stream),
            offsets: i(3),
            cell_faces: i(4),
            weights: a(8),
            u: a(0),
            u0: a(1),
            r: a(2),
            prim: a(9),
            grad: a(10),
            flux: a(11),
            wave: a(12),
            dt: a(13),
            partials: a(14),
            gamma: solver.gas.gamma,
            cfl: 0.0,
            alpha: 0.0,
            limiter: limiter_code(solver.limiter),
            viscosity: ViscousArgs::new(solver.viscous),
        };
        let norm = zeros(5)?;
        let colours = match options.face_loop {
            FaceLoop::Coloured => {
                let internal = g.internal;
                let colouring = greedy(faces, cells, |f| {
                    [g.left[f], if f < internal { g.right[f] } else { g.left[f] }]
                });
                let (mut order, mut ranges) = (Vec::with_capacity(faces), Vec::new());
                for group in colouring.groups() {
                    ranges.push(order.len()..order.len() + group.len());
                    order.extend(group);
                }
                let faces = ints(&order)?;
                Some(Colours { faces, ranges })
            }
            FaceLoop::Stored | FaceLoop::Atomic => None,
        };
        Ok(CudaSolver {
            reduce: ReduceKernel::new(&device)?,
            kernels,
            args,
            options: *options,
            reals,
            _indices: indices,
            _patches: patches,
            norm,
            colours,
            cells,
            faces,
            viscous: solver.viscous.is_some(),
            device,
        })
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.device.name
    }

    /// The device the solver runs on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Launches the cell and face loops with `threads` threads per block from now on.
    pub fn set_threads(&mut self, threads: u32) {
        self.options.threads = threads;
    }

    /// Iterates with the face loop `how` from now on ([`FaceLoop::Coloured`] only if the
    /// solver was set up with it: its colours stay).
    pub fn set_face_loop(&mut self, how: FaceLoop) {
        self.options.face_loop = how;
    }

    /// Replaces the state.
    pub fn upload(&mut self, u: &[Cons]) -> Result<(), BackendError> {
        assert_eq!(u.len(), self.cells, "one state per cell");
        (self.device.stream)
            .memcpy_htod(&transposed(u), &mut self.reals[0])
            .check("uploading the state")
    }

    /// The state.
    pub fn state(&self) -> Result<Vec<Cons>, BackendError> {
        self.cells_of(0, "downloading the state")
    }

    /// Five numbers per cell of real array `k` (u or r), as the CPU keeps them.
    fn cells_of(&self, k: usize, what: &str) -> Result<Vec<Cons>, BackendError> {
        let stream = &self.device.stream;
        let soa = stream.clone_dtoh(&self.reals[k]).check(what)?;
        stream.synchronize().check(what)?;
        let n = self.cells;
        Ok((0..n)
            .map(|c| std::array::from_fn(|v| soa[v * n + c]))
            .collect())
    }

    /// R(u) of the state (as [`Solver::residual`] at t = 0), by the face loop `how`.
    pub fn residual(&mut self, how: FaceLoop) -> Result<Vec<Cons>, BackendError> {
        self.primitives()?;
        self.gradients()?;
        self.face_loop(how)?;
        self.cells_of(2, "downloading the residual")
    }

    /// Queues `f` over `items` threads.
    fn launch(&self, f: &CudaFunction, items: usize, what: &str) -> Result<(), BackendError> {
        let mut l = self.device.stream.launch_builder(f);
        l.arg(&self.args);
        // SAFETY: every kernel of fv_step.cu takes `Step`, whose arrays hold what it indexes.
        unsafe { l.launch(grid(items, self.options.threads)) }.check(what)?;
        Ok(())
    }

    /// Primitive states of the cells and the ghosts.
    pub(crate) fn primitives(&self) -> Result<(), BackendError> {
        let k = &self.kernels;
        self.launch(&k.primitives, self.cells, "launching fv_primitives")?;
        let ghosts = self.faces - self.args.internal as usize;
        self.launch(&k.ghosts, ghosts, "launching fv_ghosts")
    }

    /// Gradients of the primitive states.
    pub(crate) fn gradients(&self) -> Result<(), BackendError> {
        self.launch(
            &self.kernels.gradients,
            self.cells,
            "launching fv_gradients",
        )
    }

    /// The face loop and, with stored fluxes, the gather: the residual in `r`.
    pub(crate) fn face_loop(&mut self, how: FaceLoop) -> Result<(), BackendError> {
        match how {
            FaceLoop::Stored => {
                self.faces_stored()?;
                self.gather()
            }
            FaceLoop::Atomic => {
                (self.device.stream)
                    .memset_zeros(&mut self.reals[2])
                    .check("zeroing the residual")?;
                let k = &self.kernels.faces_atomic;
                self.launch(k, self.faces, "launching fv_faces_atomic")
            }
            FaceLoop::Coloured => self.faces_coloured(),
        }
    }

    /// The face loop colour by colour, adding into the zeroed residual.
    fn faces_coloured(&mut self) -> Result<(), BackendError> {
        let Some(colours) = &self.colours else {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: "the coloured face loop of a solver set up without colours".into(),
            });
        };
        let stream = &self.device.stream;
        (stream.memset_zeros(&mut self.reals[2])).check("zeroing the residual")?;
        for range in &colours.ranges {
            let (begin, end) = (range.start as i64, range.end as i64);
            let mut l = stream.launch_builder(&self.kernels.faces_coloured);
            l.arg(&self.args).arg(&colours.faces).arg(&begin).arg(&end);
            // SAFETY: fv_faces_coloured takes `Step`, the coloured faces and a range of them.
            unsafe { l.launch(grid(range.len(), self.options.threads)) }
                .check("launching fv_faces_coloured")?;
        }
        Ok(())
    }

    /// The face loop, fluxes stored; in viscous flow the viscous fluxes taken from them.
    pub(crate) fn faces_stored(&self) -> Result<(), BackendError> {
        self.launch(&self.kernels.faces, self.faces, "launching fv_faces")?;
        if self.viscous {
            self.launch(&self.kernels.viscous, self.faces, "launching fv_viscous")?;
        }
        Ok(())
    }

    /// The gather of the stored fluxes.
    pub(crate) fn gather(&self) -> Result<(), BackendError> {
        self.launch(&self.kernels.gather, self.cells, "launching fv_gather")
    }

    /// The local time steps of the primitive states.
    fn time_steps(&mut self, cfl: f64) -> Result<(), BackendError> {
        self.args.cfl = cfl;
        self.launch(&self.kernels.waves, self.faces, "launching fv_waves")?;
        self.launch(
            &self.kernels.time_steps,
            self.cells,
            "launching fv_time_steps",
        )
    }

    /// Σ (R/Ω)² of each variable into `norm`.
    fn norm(&self) -> Result<(), BackendError> {
        let mut l = self.device.stream.launch_builder(&self.kernels.norm);
        l.arg(&self.args);
        // SAFETY: fv_norm takes `Step`; `partials` holds one value per block.
        unsafe { l.launch(grid(self.cells, NORM_THREADS)) }.check("launching fv_norm")?;
        let blocks = self.cells.div_ceil(NORM_THREADS as usize) as i64;
        let norm = address(&self.norm, &self.device.stream);
        (self.reduce).launch(&self.device.stream, self.args.partials, blocks, norm, 5)
    }

    /// The RMS over the cells of each component of R/Ω from `norm`: five numbers copied.
    fn read_rms(&self) -> Result<[f64; 5], BackendError> {
        let stream = &self.device.stream;
        let sum = stream.clone_dtoh(&self.norm).check("reading the norm")?;
        stream.synchronize().check("reading the norm")?;
        Ok(std::array::from_fn(|k| (sum[k] / self.cells as f64).sqrt()))
    }

    /// Stage `k` of the coefficient `alpha`: U = U0 − α Δt/Ω R.
    fn stage(&mut self, k: usize, alpha: f64) -> Result<(), BackendError> {
        self.args.alpha = alpha;
        let first = i32::from(k == 0);
        let mut l = self.device.stream.launch_builder(&self.kernels.stage);
        l.arg(&self.args).arg(&first);
        // SAFETY: fv_stage takes `Step` and an int.
        unsafe { l.launch(grid(self.cells, self.options.threads)) }.check("launching fv_stage")?;
        Ok(())
    }

    /// An iteration up to its first residual: primitive states, time steps, R and its norm.
    fn start_iteration(&mut self, cfl: f64) -> Result<(), BackendError> {
        self.primitives()?;
        self.time_steps(cfl)?;
        self.gradients()?;
        self.face_loop(self.options.face_loop)?;
        self.norm()
    }

    /// The stages after the first residual.
    fn finish_iteration(&mut self, stages: &[f64]) -> Result<(), BackendError> {
        for (k, &alpha) in stages.iter().enumerate() {
            if k > 0 {
                self.primitives()?;
                self.gradients()?;
                self.face_loop(self.options.face_loop)?;
            }
            self.stage(k, alpha)?;
        }
        Ok(())
    }

    /// Begins an iteration of [`Self::steady`] at CFL `cfl`: the local time steps and the
    /// residual R of the state. The RMS over the cells of each component of R/Ω, as
    /// [`crate::time::residual_rms`] measures it but summed in another order (see the
    /// module's notes): the only numbers the host reads.
    pub fn begin_iteration(&mut self, cfl: f64) -> Result<[f64; 5], BackendError> {
        self.start_iteration(cfl)?;
        self.read_rms()
    }

    /// Ends the iteration begun by [`Self::begin_iteration`]: the stages of coefficients
    /// `stages`, queued (the next read waits for them).
    pub fn end_iteration(&mut self, stages: &[f64]) -> Result<(), BackendError> {
        self.finish_iteration(stages)
    }

    /// `iterations` iterations of [`Self::steady`] without its convergence test (the norm is
    /// computed, not read): for timing. Waits for them.
    pub fn iterate(
        &mut self,
        cfl: f64,
        stages: &[f64],
        iterations: usize,
    ) -> Result<(), BackendError> {
        for _ in 0..iterations {
            self.start_iteration(cfl)?;
            self.finish_iteration(stages)?;
        }
        self.device.stream.synchronize().check("iterating")
    }

    /// [`crate::time::steady`] on the device: the state marched by the multistage scheme of
    /// coefficients `stages`, each cell at its own CFL step, until the density residual has
    /// dropped by `drop` or after `max` iterations.
    pub fn steady(
        &mut self,
        cfl: f64,
        stages: &[f64],
        (drop, max): (f64, usize),
    ) -> Result<Steady, BackendError> {
        let mut out = Steady {
            iterations: 0,
            history: Vec::new(),
        };
        let mut first = None;
        while out.iterations < max {
            self.start_iteration(cfl)?;
            let rms = self.read_rms()?[0];
            let first = *first.get_or_insert(rms);
            out.history.push(rms / first);
            if rms <= drop * first {
                return Ok(out);
            }
            self.finish_iteration(stages)?;
            out.iterations += 1;
        }
        self.device.stream.synchronize().check("iterating")?;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::Boundary;
    use crate::flux::Limiter;
    use crate::gas::Gas;
    use crate::viscous::{Viscosity, Viscous};
    use ferroflow_mesh::generate::{box_mesh, BoxCells, SIDES};

    /// Refused before any device is opened: the same answer with or without a GPU.
    #[test]
    fn exact_boundaries_and_viscous_atomics_are_refused() {
        let mesh = box_mesh(BoxCells::Hex, [3, 2, 2], [1.0; 3]).unwrap();
        let walls = SIDES.map(|s| (s, Boundary::SlipWall));
        let mut s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &walls).unwrap();
        let u = s.sample(|_| [1.0, 0.1, 0.0, 0.0, 1.0]);
        s.viscous = Some(Viscous::air(Viscosity::Constant(0.01)));
        let atomic = CudaOptions {
            face_loop: FaceLoop::Atomic,
            ..CudaOptions::default()
        };
        let e = CudaSolver::new(&s, &u, &atomic).err();
        let e = e.expect("a refusal").to_string();
        assert!(
            e.contains("viscous fluxes with the atomic face loop"),
            "{e}"
        );
        let exact = SIDES.map(|s| (s, Boundary::Exact(|_, _| [1.0, 0.0, 0.0, 0.0, 1.0])));
        let s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &exact).unwrap();
        let e = CudaSolver::new(&s, &u, &CudaOptions::default()).err();
        let e = e.expect("a refusal").to_string();
        assert!(e.contains("an exact-solution boundary"), "{e}");
    }
}
