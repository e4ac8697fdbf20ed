//! [`CudaBackend`]: the state stays on the device; each iteration is the fused interior pass,
//! one wall-fill launch per axis and a buffer swap, with no host traffic. Residual norms are
//! computed and copied back only for the last iteration of each `advance` call. Iterations
//! before it are replayed from CUDA graphs, which removes most of the launch overhead that
//! dominates on small grids.
use super::implicit::{bytes_of, values_of, Relaxer};
use super::launch::{BoundaryKernel, GridArgs, HaloKernel, NodeBox, StepArgs, StepKernel};
use super::multigrid::Transfers;
use super::programs::{Program, Variant};
use super::state::{bytes, bytes_mut, Norms, State};
use super::tune::{self, StepTuning, TuneMode, TuneReport};
use crate::blocks::FaceBuffers;
use crate::implicit::{GaugeSums, ImplicitBlock};
use crate::iteration::{finish, iterate, AcKernels};
use crate::{BlockBackend, Problem};
use ferroflow_core::decomposition::Face;
use ferroflow_core::{Backend, BackendError, Fields, Layout, Real, Residuals};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use ferroflow_cuda::cudarc::driver::{CudaGraph, CudaSlice};
use ferroflow_cuda::{address, Check, Device, GIB};
use ferroflow_cuda::{ReduceKernel, Scalar};

/// Options of [`CudaBackend::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaOptions {
    /// Device ordinal.
    pub device: usize,
    /// How the launch shape of the interior kernel is chosen.
    pub tune: TuneMode,
    /// Compile with `--fmad=true`. Off by default: without fused multiply-adds the kernels
    /// round as the CPU backend does; the interior pass is memory-bound, so fusing gains
    /// little.
    pub fmad: bool,
    /// Iterations per captured CUDA graph, rounded down to an even number (a graph must end on
    /// the buffer it started from); 0 launches every kernel directly.
    pub graph_iterations: usize,
}

impl Default for CudaOptions {
    fn default() -> CudaOptions {
        CudaOptions {
            device: 0,
            tune: TuneMode::Cached,
            fmad: false,
            graph_iterations: 16,
        }
    }
}

/// A captured chunk of iterations.
struct Graph(CudaGraph);

// SAFETY: CUDA graphs may be used from any thread as long as calls are serialised; the backend
// owns its graphs and uses them through `&mut self` only.
unsafe impl Send for Graph {}

/// CUDA backend for one block: the CPU backend's iteration on an NVIDIA GPU.
pub struct CudaBackend<R: Real> {
    pub(crate) device: Device,
    pub(crate) layout: Layout,
    pub(crate) equations: usize,
    pub(crate) state: State,
    pub(crate) norms: Norms,
    pub(crate) args: StepArgs<R>,
    pub(crate) step: StepKernel,
    pub(crate) boundary: BoundaryKernel,
    reduce: ReduceKernel,
    pub(crate) halo: HaloKernel,
    /// Offset of the pressure reference node.
    p_ref: usize,
    /// The pressure shift given from outside, for a block of a decomposed grid.
    pub(crate) shifts: CudaSlice<u8>,
    /// A packed face on the device, for [`BlockBackend::pack`] and `unpack`.
    face: Option<CudaSlice<u8>>,
    /// One graph per starting buffer, captured on first use.
    graphs: [Option<Graph>; 2],
    graph_iterations: usize,
    tuning: TuneReport,
    /// The implicit relaxation, when the problem asks for it.
    pub(crate) implicit: Option<Relaxer>,
    /// The transfers to and from a coarser level, for a problem with multigrid levels.
    pub(crate) multigrid: Option<Transfers>,
}

impl<R: Real> CudaBackend<R> {
    /// Opens the device, compiles the kernels, uploads `problem.initial` (and the source) and
    /// chooses the interior kernel's launch shape as `options.tune` says. Errors say exactly
    /// what is missing ([`BackendError::Unavailable`]: no driver, no NVRTC, no device), what
    /// failed to compile ([`BackendError::Compile`], with the NVRTC log), how much memory the
    /// case needs ([`BackendError::OutOfMemory`]) or which driver call failed
    /// ([`BackendError::Driver`]).
    pub fn new(
        problem: &Problem<R>,
        options: &CudaOptions,
    ) -> Result<CudaBackend<R>, BackendError> {
        CudaBackend::on(problem, options, None)
    }

    /// [`CudaBackend::new`] on `device` (its stream shared) where one is given, else on the
    /// device `options` names.
    pub(crate) fn on(
        problem: &Problem<R>,
        options: &CudaOptions,
        device: Option<&Device>,
    ) -> Result<CudaBackend<R>, BackendError> {
        if let crate::Method::Implicit(imp) = &problem.numerics.method {
            super::implicit::jacobi_only(&imp.on(true))?;
        }
        let precision = Scalar::of::<R>().ok_or_else(|| BackendError::NotSuitable {
            backend: "cuda",
            what: format!("real type {}", R::NAME),
        })?;
        let layout = problem.layout;
        let equations = problem.equations();
        let device = match device {
            Some(d) => d.clone(),
            None => Device::open(options.device)?,
        };
        let stream = device.stream.clone();

        ensure_memory(&device, problem)?;

        let boundary_cubin = device.compile(&Program::Boundary.build(precision, options.fmad))?;
        let boundary =
            BoundaryKernel::new(device.load(boundary_cubin.clone(), "fill_walls")?, problem);
        let halo = HaloKernel {
            function: device.load(boundary_cubin, "halo_box")?,
        };
        let reduce = ReduceKernel::new(&device)?;

        let implicit = match problem.numerics.method {
            crate::Method::Implicit(imp) => Some(Relaxer::new(
                &device,
                problem,
                &imp.on(true),
                precision,
                options.fmad,
            )?),
            crate::Method::Explicit => None,
        };
        let multigrid = match (&implicit, problem.numerics.multigrid.levels) {
            (Some(_), 2..) => Some(Transfers::new(&device, precision, options.fmad)?),
            _ => None,
        };
        let mut state = State::new(&stream, problem)?;
        let mut args = StepArgs {
            coeffs: crate::Coefficients::new(problem),
            grid: GridArgs::new(problem),
            src: state.source(),
            partials: 0,
            x_walls: boundary.x_walls(),
        };
        state.upload(&stream, &problem.initial, &boundary, &args.grid)?;
        let tuning = StepTuning {
            device: &device,
            layout,
            precision,
            fmad: options.fmad,
            variant: Variant::of(problem),
            args: &args,
            boundary: &boundary,
            cur: state.cur(),
            next: state.next(),
        };
        // The implicit method does not use the explicit pass: its default shape is not tuned.
        let tune = if implicit.is_some() {
            TuneMode::Off
        } else {
            options.tune
        };
        let (step, tuning) = ferroflow_cuda::tune(&device, &tuning, tune)?;
        let blocks = implicit.as_ref().map_or(step.blocks(), Relaxer::blocks);
        let norms = Norms::new(&stream, equations, blocks)?;
        args.partials = norms.partials(&stream);
        let shifts = stream
            .alloc_zeros::<u8>(std::mem::size_of::<R>())
            .check("allocating the pressure shifts")?;
        stream.synchronize().check("setting up the CUDA backend")?;
        Ok(CudaBackend {
            device,
            layout,
            equations,
            state,
            norms,
            args,
            step,
            boundary,
            reduce,
            halo,
            p_ref: problem.pressure_ref_offset(),
            shifts,
            face: None,
            graphs: [None, None],
            graph_iterations: options.graph_iterations / 2 * 2,
            tuning,
            implicit,
            multigrid,
        })
    }

    /// How the interior kernel's launch shape was chosen, with the timing table.
    pub fn tuning(&self) -> &TuneReport {
        &self.tuning
    }

    /// Name of the device.
    pub fn device_name(&self) -> &str {
        &self.device.name
    }

    /// Device address of the current state's pressure at the reference node.
    pub(crate) fn own_shift(&self) -> CUdeviceptr {
        self.state.cur().v[0] + (self.p_ref * std::mem::size_of::<R>()) as CUdeviceptr
    }

    /// Pressure at the reference node of the current state, once the queued work is done.
    pub(crate) fn own_pressure(&self) -> Result<R, BackendError> {
        self.state.value(&self.device.stream, 0, self.p_ref)
    }

    /// Device address of the pressure shift given from outside.
    pub(crate) fn given_shift(&self) -> CUdeviceptr {
        address(&self.shifts, &self.device.stream)
    }

    /// Queues the interior pass over `region` (None: all interior nodes) into the next buffer;
    /// returns the x walls it filled (`StepKernel::launch`).
    pub(crate) fn queue_step(
        &self,
        region: Option<&NodeBox>,
        shift: CUdeviceptr,
        norms: bool,
    ) -> Result<i32, BackendError> {
        let stream = &self.device.stream;
        self.step.launch(
            stream,
            &self.args,
            &self.state.cur(),
            &self.state.next(),
            region,
            shift,
            norms,
        )
    }

    /// The residual sums of the last iteration queued with norms (waits for it).
    pub(crate) fn read_norms(&self) -> Result<Residuals, BackendError> {
        let sums = self.norms.read(&self.device.stream)?;
        Ok(Residuals {
            sum_sq: sums,
            nodes: self.layout.interior_nodes(),
        })
    }

    /// Queues packing (or unpacking) `face` of the state `vars` to (from) the device buffer
    /// at `buf`.
    pub(crate) fn queue_face(
        &self,
        stream: &ferroflow_cuda::cudarc::driver::CudaStream,
        vars: &super::launch::Vars,
        face: &Face,
        buf: CUdeviceptr,
        unpack: bool,
    ) -> Result<(), BackendError> {
        let size = std::mem::size_of::<R>();
        let (grid, layout) = (&self.args.grid, &self.layout);
        queue_face(
            &self.halo, stream, grid, layout, vars, face, buf, size, unpack,
        )
    }

    /// The device face buffer, grown to `bytes` bytes.
    fn face_buffer(&mut self, bytes: usize) -> Result<CUdeviceptr, BackendError> {
        if self.face.as_ref().is_none_or(|f| f.len() < bytes) {
            self.face = Some(
                self.device
                    .stream
                    .alloc_zeros::<u8>(bytes)
                    .check("allocating a face buffer")?,
            );
        }
        Ok(self
            .face
            .as_ref()
            .map_or(0, |f| address(f, &self.device.stream)))
    }

    /// Queues one iteration of the problem's method, with the residual norms when `norms`.
    fn iteration(&mut self, norms: bool) -> Result<(), BackendError> {
        let Some(relaxer) = &self.implicit else {
            return iterate(self, self.own_shift(), norms);
        };
        let stream = &self.device.stream;
        let (cur, next) = (self.state.cur(), self.state.next());
        let a = &self.args;
        relaxer.queue(stream, &a.coeffs, &a.grid, &cur, &next, &a.src, &self.norms)?;
        finish(self, 0, norms)
    }

    /// Runs `graph_iterations` iterations from the graph of the current buffer.
    fn replay(&mut self) -> Result<(), BackendError> {
        let parity = self.state.parity();
        if self.graphs[parity].is_none() {
            let graph = self.capture()?;
            self.graphs[parity] = Some(graph);
        }
        if let Some(graph) = &self.graphs[parity] {
            graph.0.launch().check("launching a CUDA graph")?;
        }
        Ok(())
    }

    /// Records `graph_iterations` iterations into a graph. Captured launches do not run, and
    /// an even count leaves the buffers as they were.
    fn capture(&mut self) -> Result<Graph, BackendError> {
        let stream = self.device.stream.clone();
        stream
            .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .check("starting a graph capture")?;
        let captured = (0..self.graph_iterations).try_for_each(|_| self.iteration(false));
        // End the capture even after a failed launch, or the stream stays capturing.
        let graph = stream
            .end_capture(CUgraphInstantiate_flags(0))
            .check("capturing a CUDA graph");
        captured?;
        graph?.map(Graph).ok_or_else(|| BackendError::Failed {
            backend: "cuda",
            message: "graph capture recorded nothing".into(),
        })
    }
}

/// Queues packing (or unpacking) `face` of the arrays `vars` (elements of `size` bytes, which
/// `halo` copies) to (from) the device buffer at `buf`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn queue_face(
    halo: &HaloKernel,
    stream: &ferroflow_cuda::cudarc::driver::CudaStream,
    grid: &GridArgs,
    layout: &Layout,
    vars: &super::launch::Vars,
    face: &Face,
    buf: CUdeviceptr,
    size: usize,
    unpack: bool,
) -> Result<(), BackendError> {
    let mut at = 0;
    for var in 0..face.vars {
        let region = face.region(layout, var, unpack);
        let len = ferroflow_core::decomposition::region_len(&region);
        let buf = buf + (at * size) as CUdeviceptr;
        halo.launch(
            stream,
            vars.v[var],
            buf,
            grid,
            &NodeBox::of(&region),
            unpack,
        )?;
        at += len;
    }
    Ok(())
}

/// Errors unless the device has room for the state, the source term and the residual sums.
fn ensure_memory<R: Real>(device: &Device, problem: &Problem<R>) -> Result<(), BackendError> {
    let layout = problem.layout;
    let array = layout.len * std::mem::size_of::<R>();
    let arrays = State::arrays(problem);
    // Residual partial sums: one per thread block, most with the smallest candidate blocks.
    let blocks = tune::candidates(layout.dim)
        .iter()
        .filter_map(|s| s.grid(&layout).ok())
        .map(|(x, y, z)| x as usize * y as usize * z as usize)
        .max()
        .unwrap_or(0);
    let sums = problem.equations() * (blocks + 1) * std::mem::size_of::<f64>();
    let source = if problem.source.is_some() {
        " and the source term"
    } else {
        ""
    };
    let implicit = match problem.numerics.method {
        crate::Method::Implicit(imp) => Relaxer::bytes(problem, &imp.on(true)),
        crate::Method::Explicit => 0,
    };
    let relaxation = if implicit > 0 {
        format!(
            "; {:.3} GiB for the implicit relaxation",
            implicit as f64 / GIB
        )
    } else {
        String::new()
    };
    device.ensure_free(
        arrays * array + sums + implicit,
        &format!(
            "{arrays} arrays of {:.3} GiB: two buffers per variable{source}; residual \
             sums{relaxation}",
            array as f64 / GIB
        ),
    )
}

impl<R: Real> Backend for CudaBackend<R> {
    type Real = R;

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        if iterations == 0 {
            return Ok(Residuals::default());
        }
        let quiet = iterations - 1;
        let replays = quiet.checked_div(self.graph_iterations).unwrap_or(0);
        for _ in 0..replays {
            self.replay()?;
        }
        for _ in replays * self.graph_iterations..quiet {
            self.iteration(false)?;
        }
        self.iteration(true)?;
        self.read_norms()
    }

    fn layout(&self) -> Layout {
        self.layout
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        self.state.download(&self.device.stream)
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        self.state
            .upload(&self.device.stream, fields, &self.boundary, &self.args.grid)
    }
}

/// The scheme's kernels, queued on the device's stream.
impl<R: Real> AcKernels for CudaBackend<R> {
    type Shift = CUdeviceptr;
    /// The x walls the interior pass filled (`StepKernel::launch`).
    type Filled = i32;

    fn interior_pass(&mut self, shift: CUdeviceptr, norms: bool) -> Result<i32, BackendError> {
        self.queue_step(None, shift, norms)
    }

    fn fill_walls(&mut self, filled: i32) -> Result<(), BackendError> {
        let stream = &self.device.stream;
        self.boundary
            .launch(stream, &self.state.next(), &self.args.grid, filled)
    }

    fn reduce_norms(&mut self) -> Result<(), BackendError> {
        let stream = &self.device.stream;
        self.reduce.launch(
            stream,
            self.args.partials,
            self.norms.blocks as i64,
            self.norms.sums(stream),
            self.equations as u32,
        )
    }

    fn swap(&mut self) {
        self.state.swap();
    }
}

/// Host-driven blocks (the generic driver, MPI): every call waits for the device.
impl<R: Real> BlockBackend for CudaBackend<R> {
    fn implicit(&mut self) -> Result<&mut dyn ImplicitBlock<R>, BackendError> {
        relaxer(&mut self.implicit)?;
        Ok(self)
    }

    fn pressure_at(&mut self, offset: usize) -> Result<R, BackendError> {
        self.state.value(&self.device.stream, 0, offset)
    }

    /// Moves no face itself ([`BlockBackend::moves_in_step`]).
    fn step(
        &mut self,
        p_shift: R,
        norms: bool,
        _faces: &mut [FaceBuffers<'_, R>],
    ) -> Result<Residuals, BackendError> {
        let stream = self.device.stream.clone();
        stream
            .memcpy_htod(bytes(&[p_shift]), &mut self.shifts)
            .check("copying the pressure shift to the device")?;
        iterate(self, self.given_shift(), norms)?;
        if norms {
            self.read_norms()
        } else {
            Ok(Residuals::default())
        }
    }

    fn pack(&mut self, face: &Face, buf: &mut [R]) -> Result<(), BackendError> {
        let size = std::mem::size_of_val(buf);
        let dev = self.face_buffer(size)?;
        let stream = self.device.stream.clone();
        self.queue_face(&stream, &self.state.cur(), face, dev, false)?;
        if let Some(f) = self.face.as_ref() {
            stream
                .memcpy_dtoh(&f.slice(..size), bytes_mut(buf))
                .check("copying a face to the host")?;
        }
        stream.synchronize().check("packing a face")
    }

    fn unpack(&mut self, face: &Face, buf: &[R]) -> Result<(), BackendError> {
        let size = std::mem::size_of_val(buf);
        let dev = self.face_buffer(size)?;
        let stream = self.device.stream.clone();
        if let Some(f) = self.face.as_mut() {
            stream
                .memcpy_htod(bytes(buf), &mut f.slice_mut(..size))
                .check("copying a face to the device")?;
        }
        self.queue_face(&stream, &self.state.cur(), face, dev, true)?;
        stream.synchronize().check("unpacking a face")
    }
}

/// The implicit iteration of a block of a decomposed grid, phase by phase (see
/// `ImplicitBlock`): each phase queues its kernels; the gauge's sums, the reference pressure
/// and the increments' faces go through the host.
impl<R: Real> ImplicitBlock<R> for CudaBackend<R> {
    fn sweeps(&self) -> usize {
        self.implicit.as_ref().map_or(0, Relaxer::sweeps)
    }

    fn residual(&mut self) -> Result<GaugeSums, BackendError> {
        let stream = self.device.stream.clone();
        let (a, cur) = (&self.args, self.state.cur());
        let r = relaxer(&mut self.implicit)?;
        r.zero_increments(&stream)?;
        let none = super::launch::Vars::default();
        r.queue_residual(
            &stream,
            &a.coeffs,
            &a.grid,
            &cur,
            &a.src,
            &self.norms,
            &none,
        )?;
        let [resid, weight] = r.read_sums(&stream)?;
        Ok(GaugeSums { resid, weight })
    }

    fn project(&mut self, gauge: f64) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let r = relaxer(&mut self.implicit)?;
        r.set_gauge(&stream, R::of(gauge))?;
        r.queue_project(&stream, &self.args.grid, &self.norms)
    }

    fn residuals(&mut self) -> Result<Residuals, BackendError> {
        self.reduce_norms()?;
        self.read_norms()
    }

    fn sweep(&mut self, sweep: usize) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let r = relaxer(&mut self.implicit)?;
        r.queue_sweeps(&stream, &self.args.grid, sweep % 2, 1)?;
        r.latest = 1 - sweep % 2;
        Ok(())
    }

    fn pack_increments(&mut self, face: &Face, buf: &mut [R]) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let scalar = relaxer(&mut self.implicit)?.scalar();
        let dev = self.face_buffer(buf.len() * scalar.bytes())?;
        self.queue_increments_face(face, dev, false)?;
        let mut packed = vec![0u8; buf.len() * scalar.bytes()];
        if let Some(f) = self.face.as_ref() {
            stream
                .memcpy_dtoh(&f.slice(..packed.len()), &mut packed)
                .check("copying a face to the host")?;
        }
        stream.synchronize().check("packing a face")?;
        for (b, v) in buf.iter_mut().zip(values_of(&packed, scalar)) {
            *b = R::of(v);
        }
        Ok(())
    }

    fn unpack_increments(&mut self, face: &Face, buf: &[R]) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let scalar = relaxer(&mut self.implicit)?.scalar();
        let packed = bytes_of(buf.iter().map(|v| v.f64()), scalar);
        let dev = self.face_buffer(packed.len())?;
        if let Some(f) = self.face.as_mut() {
            stream
                .memcpy_htod(&packed, &mut f.slice_mut(..packed.len()))
                .check("copying a face to the device")?;
        }
        self.queue_increments_face(face, dev, true)?;
        stream.synchronize().check("unpacking a face")
    }

    fn reference_after(&mut self, offset: usize) -> Result<R, BackendError> {
        let stream = self.device.stream.clone();
        let p: R = self.state.value(&stream, 0, offset)?;
        let r = relaxer(&mut self.implicit)?;
        Ok(p + R::of(r.increment_at(&stream, r.latest, offset)?))
    }

    fn update(&mut self, shift: R) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        stream
            .memcpy_htod(bytes(&[shift]), &mut self.shifts)
            .check("copying the pressure shift to the device")?;
        let (cur, next, given) = (self.state.cur(), self.state.next(), self.given_shift());
        let r = relaxer(&mut self.implicit)?;
        r.queue_update(&stream, &cur, &next, r.latest, given)?;
        finish(self, 0, false)
    }
}

impl<R: Real> CudaBackend<R> {
    /// Queues packing (or unpacking) `face` of the latest increments to (from) the device
    /// buffer at `buf`.
    fn queue_increments_face(
        &mut self,
        face: &Face,
        buf: CUdeviceptr,
        unpack: bool,
    ) -> Result<(), BackendError> {
        let stream = self.device.stream.clone();
        let r = relaxer(&mut self.implicit)?;
        let halo = r.halo.as_ref().ok_or_else(no_interfaces)?;
        let (vars, size) = (r.increments(r.latest), r.scalar().bytes());
        let (grid, layout) = (&self.args.grid, &self.layout);
        queue_face(halo, &stream, grid, layout, vars, face, buf, size, unpack)
    }
}

/// The relaxation of a block asking for the implicit method.
fn relaxer(implicit: &mut Option<Relaxer>) -> Result<&mut Relaxer, BackendError> {
    implicit
        .as_mut()
        .ok_or_else(|| crate::implicit::explicit_block("cuda"))
}

/// The error of a block without interfaces asked to move its increments' halos.
fn no_interfaces() -> BackendError {
    BackendError::Failed {
        backend: "cuda",
        message: "a halo of the increments asked of a block without interfaces".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backends_can_move_to_another_thread() {
        fn send<T: Send>() {}
        send::<CudaBackend<f64>>();
        send::<CudaBackend<f32>>();
    }
}
