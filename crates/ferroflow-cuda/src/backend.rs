//! [`CudaBackend`]: the state stays on the device; each iteration is the fused interior pass,
//! one wall-fill launch per axis and a buffer swap, with no host traffic. Residual norms are
//! computed and copied back only for the last iteration of each `advance` call. Iterations
//! before it are replayed from CUDA graphs, which removes most of the launch overhead that
//! dominates on small grids.
use crate::compile::{Build, Precision, Program};
use crate::device::{Check, Device, GIB};
use crate::launch::{BoundaryKernel, Coeffs, Grid, ReduceKernel, StepArgs, StepKernel};
use crate::state::{Norms, State};
use crate::tune::{self, TuneMode, TuneReport, Tuner};
use cudarc::driver::sys::{CUgraphInstantiate_flags, CUstreamCaptureMode};
use cudarc::driver::CudaGraph;
use ferroflow_core::{Backend, BackendError, Fields, Layout, Problem, Real, Residuals};

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
    device: Device,
    layout: Layout,
    equations: usize,
    state: State,
    norms: Norms,
    args: StepArgs<R>,
    step: StepKernel,
    boundary: BoundaryKernel,
    reduce: ReduceKernel,
    /// One graph per starting buffer, captured on first use.
    graphs: [Option<Graph>; 2],
    graph_iterations: usize,
    tuning: TuneReport,
}

impl<R: Real> CudaBackend<R> {
    /// Opens the device, compiles the kernels, uploads `problem.initial` (and the source) and
    /// chooses the interior kernel's launch shape as `options.tune` says. Errors say exactly
    /// what is missing ([`BackendError::Unavailable`]: no driver, no NVRTC, no device), what
    /// failed to compile (with the NVRTC log) or how much memory the case needs.
    pub fn new(
        problem: &Problem<R>,
        options: &CudaOptions,
    ) -> Result<CudaBackend<R>, BackendError> {
        let precision = Precision::of::<R>().ok_or_else(|| BackendError::NotSuitable {
            backend: "cuda",
            what: format!("real type {}", R::NAME),
        })?;
        let layout = problem.layout;
        let equations = problem.equations();
        let device = Device::open(options.device)?;
        let stream = device.stream.clone();

        ensure_memory(&device, problem)?;

        let build = |program| Build {
            program,
            precision,
            fmad: options.fmad,
        };
        let boundary = BoundaryKernel::new(
            device.load(device.compile(&build(Program::Boundary))?, "fill_walls")?,
            problem,
        );
        let reduce = ReduceKernel {
            function: device.load(device.compile(&build(Program::Reduce))?, "reduce_sums")?,
        };

        let mut state = State::new(&stream, problem)?;
        let mut args = StepArgs {
            coeffs: Coeffs::new(problem),
            grid: Grid::new(problem),
            src: state.source(),
            partials: 0,
        };
        state.upload(&stream, &problem.initial, &boundary, &args.grid)?;
        let tuner = Tuner {
            device: &device,
            layout,
            precision,
            fmad: options.fmad,
            source: problem.source.is_some(),
            energy: problem.energy.is_some(),
            args: &args,
            cur: state.cur(),
            next: state.next(),
        };
        let (step, tuning) = tuner.choose(options.tune)?;
        let norms = Norms::new(&stream, equations, step.blocks())?;
        args.partials = norms.partials(&stream);
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
            graphs: [None, None],
            graph_iterations: options.graph_iterations / 2 * 2,
            tuning,
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

    /// Queues one iteration: interior pass into the next buffer, its walls, the residual sums
    /// if `norms`, then the swap.
    fn iterate(&mut self, norms: bool) -> Result<(), BackendError> {
        let stream = &self.device.stream;
        let next = self.state.next();
        self.step
            .launch(stream, &self.args, &self.state.cur(), &next, norms)?;
        self.boundary.launch(stream, &next, &self.args.grid)?;
        if norms {
            self.reduce.launch(
                stream,
                self.args.partials,
                self.norms.blocks as i64,
                self.norms.sums(stream),
                self.equations as u32,
            )?;
        }
        self.state.swap();
        Ok(())
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
        let captured = (0..self.graph_iterations).try_for_each(|_| self.iterate(false));
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
    device.ensure_free(
        arrays * array + sums,
        &format!(
            "{arrays} arrays of {:.3} GiB: two buffers per variable{source}; residual sums",
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
            self.iterate(false)?;
        }
        self.iterate(true)?;
        let sums = self.norms.read(&self.device.stream)?;
        let mut residuals = Residuals {
            equations: self.equations,
            nodes: self.layout.interior_nodes(),
            ..Default::default()
        };
        residuals.sum_sq[..self.equations].copy_from_slice(&sums);
        Ok(residuals)
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        self.state.download(&self.device.stream)
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        self.state
            .upload(&self.device.stream, fields, &self.boundary, &self.args.grid)
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
