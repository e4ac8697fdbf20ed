//! The pressure solve on the device (kernels/fem_cg.cu): the vectors, the solve's state, the
//! chosen matrix–vector product and the CUDA graph of a batch of iterations.
use super::spmv::{Layout, SpmvArgs, SpmvKernel, SpmvShape, SpmvTuning};
use super::{cg_build, DeviceReal, TuneMode, TuneReport};
use crate::cg::Outcome;
use crate::sum::{BLOCK, LANES};
use ferroflow_core::BackendError;
use ferroflow_cuda::cudarc::driver::sys::{
    CUdeviceptr, CUgraphInstantiate_flags, CUstreamCaptureMode,
};
use ferroflow_cuda::cudarc::driver::{
    CudaFunction, CudaGraph, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use ferroflow_cuda::cudarc::nvrtc::Ptx;
use ferroflow_cuda::{address, median, tune, Check, Device, Timer};
use std::sync::Arc;

/// Iterations per replayed graph unless told otherwise: the host looks at the solve after each
/// replay, so a solve runs at most this many empty iterations past its end.
pub const DEFAULT_GRAPH_ITERATIONS: usize = 32;

/// The solve's scalars on the device (`CgState` in kernels/fem_cg.cu, field for field): values
/// of the working precision, widened to f64.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CgState {
    /// (S b, S b).
    pub bb: f64,
    /// (r, r) of the last iteration.
    pub rr: f64,
    /// (r, A r) of the last iteration.
    pub rw: f64,
    /// sqrt(rr / bb).
    pub relative_residual: f64,
    /// γ of the last update.
    pub gamma: f64,
    /// ρ of the last update.
    pub rho: f64,
    /// γ, rr, ρ of the update before (the recurrence's).
    pub gamma_prev: f64,
    /// See `gamma_prev`.
    pub rr_prev: f64,
    /// See `gamma_prev`.
    pub rho_prev: f64,
    /// Relative tolerance.
    pub tolerance: f64,
    /// Updates done.
    pub iterations: i64,
    /// Most updates.
    pub max_iterations: i64,
    /// 0 running, 1 converged, 2 stopped.
    pub status: i64,
}

const RUNNING: i64 = 0;
const CONVERGED: i64 = 1;

impl CgState {
    fn to_bytes(self) -> Vec<u8> {
        // SAFETY: a repr(C) struct of 8-byte numbers, no padding.
        unsafe {
            std::slice::from_raw_parts((&self as *const CgState).cast::<u8>(), size_of::<Self>())
        }
        .to_vec()
    }

    fn from_bytes(b: &[u8]) -> CgState {
        assert_eq!(b.len(), size_of::<CgState>());
        // SAFETY: as long as the struct; every bit pattern is a valid CgState.
        unsafe { std::ptr::read_unaligned(b.as_ptr().cast()) }
    }
}

/// `Reduction` of kernels/fem.cuh.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reduction {
    pub(crate) partials: CUdeviceptr,
    pub(crate) counter: CUdeviceptr,
    pub(crate) totals: CUdeviceptr,
}

/// `Cg` of kernels/fem_cg.cu.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct CgArgs {
    state: CUdeviceptr,
    f: CUdeviceptr,
    f_total: CUdeviceptr,
    s: CUdeviceptr,
    sb: CUdeviceptr,
    y: [CUdeviceptr; 2],
    r: [CUdeviceptr; 2],
    w: CUdeviceptr,
    x: CUdeviceptr,
    red: Reduction,
    n: i64,
}

// SAFETY: C structs of device addresses and integers.
unsafe impl DeviceRepr for CgArgs {}
unsafe impl DeviceRepr for Reduction {}

pub(crate) use ferroflow_cuda::grid;

/// Launch of a reduction: [`LANES`] threads per [`BLOCK`] items.
pub(crate) fn chunks(n: usize) -> LaunchConfig {
    grid(n.div_ceil(BLOCK) * LANES, LANES as u32)
}

/// Launch of one thread per node, 128 per block.
pub(crate) fn per_node(n: usize) -> LaunchConfig {
    grid(n, 128)
}

/// Queues `f(args[, extra])`.
pub(crate) fn launch<A: DeviceRepr>(
    stream: &CudaStream,
    f: &CudaFunction,
    config: LaunchConfig,
    args: &A,
    extra: Option<i32>,
    what: &str,
) -> Result<(), BackendError> {
    let extra_value = extra.unwrap_or(0);
    let mut l = stream.launch_builder(f);
    l.arg(args);
    if extra.is_some() {
        l.arg(&extra_value);
    }
    // SAFETY: every caller passes its kernel's argument struct (and int), whose arrays hold
    // what the kernel indexes.
    unsafe { l.launch(config) }.check(what)?;
    Ok(())
}

fn not_yet() -> BackendError {
    BackendError::Failed {
        backend: "cuda",
        message: "no pressure solve yet: take a step first".into(),
    }
}

/// A copy of `v` on the host, after the work queued before.
pub(crate) fn read<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    v: &CudaSlice<T>,
    what: &str,
) -> Result<Vec<T>, BackendError> {
    let host = stream.clone_dtoh(v).check(what)?;
    stream.synchronize().check(what)?;
    Ok(host)
}

/// The device's pressure solve: vectors, state, product and graph.
pub(crate) struct Solve<R: DeviceReal> {
    stream: Arc<CudaStream>,
    setup: CudaFunction,
    start: CudaFunction,
    dots: CudaFunction,
    update: CudaFunction,
    finish: CudaFunction,
    state: CudaSlice<u8>,
    /// The memory `args` points to: S b, y, r (two each), w; the sums.
    _vectors: [CudaSlice<R>; 6],
    _totals: CudaSlice<R>,
    args: CgArgs,
    csr: Arc<Layout<R>>,
    spmv: Option<(SpmvKernel<R>, SpmvArgs)>,
    pub(crate) tuning: Option<TuneReport>,
    graph: Option<CudaGraph>,
    graph_iterations: usize,
    n: usize,
}

/// What a solve reads, in the step's arrays.
pub(crate) struct Inputs {
    pub(crate) f: CUdeviceptr,
    /// Σ f when its mean is to leave f, else 0.
    pub(crate) f_total: CUdeviceptr,
    pub(crate) h: CUdeviceptr,
    pub(crate) s: CUdeviceptr,
    pub(crate) diagonal: CUdeviceptr,
    pub(crate) x: CUdeviceptr,
}

impl<R: DeviceReal> Solve<R> {
    /// Vectors for `n` rows of the CSR `csr`; partial sums in `partials` (`counter` at 0).
    pub(crate) fn new(
        device: &Device,
        csr: Arc<Layout<R>>,
        n: usize,
        partials: CUdeviceptr,
        counter: CUdeviceptr,
        graph_iterations: usize,
    ) -> Result<Solve<R>, BackendError> {
        let stream = device.stream.clone();
        let module = (device.ctx)
            .load_module(Ptx::from_binary(device.compile(&cg_build(R::SCALAR))?))
            .check("loading fem_cg")?;
        let f = |name: &str| module.load_function(name).check(name);
        let zeros = || stream.alloc_zeros::<R>(n).check("allocating CG vectors");
        let vectors = [zeros()?, zeros()?, zeros()?, zeros()?, zeros()?, zeros()?];
        let totals = stream.alloc_zeros::<R>(2).check("allocating CG sums")?;
        let state = stream
            .alloc_zeros::<u8>(size_of::<CgState>())
            .check("allocating the CG state")?;
        let a = |v: &CudaSlice<R>| address(v, &stream);
        let args = CgArgs {
            state: address(&state, &stream),
            f: 0,
            f_total: 0,
            s: 0,
            sb: a(&vectors[0]),
            y: [a(&vectors[1]), a(&vectors[2])],
            r: [a(&vectors[3]), a(&vectors[4])],
            w: a(&vectors[5]),
            x: 0,
            red: Reduction {
                partials,
                counter,
                totals: a(&totals),
            },
            n: n as i64,
        };
        Ok(Solve {
            setup: f("cg_setup")?,
            start: f("cg_start")?,
            dots: f("cg_dots")?,
            update: f("cg_update")?,
            finish: f("cg_finish")?,
            stream,
            state,
            _vectors: vectors,
            _totals: totals,
            args,
            csr,
            spmv: None,
            tuning: None,
            graph: None,
            graph_iterations: graph_iterations.max(2) / 2 * 2,
            n,
        })
    }

    /// Solves H x = f as [`crate::cg::solve`] does from x = 0, with the matrix `inputs.h` (CSR
    /// order), its scaling and scaled diagonal; the first solve chooses the product (`tune`,
    /// on `offsets`, `columns`, the host's copy of the pattern).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run(
        &mut self,
        device: &Device,
        inputs: Inputs,
        tolerance: f64,
        max_iterations: usize,
        tune_mode: TuneMode,
        offsets: &[u32],
        columns: &[u32],
    ) -> Result<Outcome, BackendError> {
        let stream = self.stream.clone();
        self.args.f = inputs.f;
        self.args.f_total = inputs.f_total;
        self.args.s = inputs.s;
        self.args.x = inputs.x;
        let state = CgState {
            tolerance,
            max_iterations: max_iterations as i64,
            ..CgState::default()
        };
        stream
            .memcpy_htod(&state.to_bytes(), &mut self.state)
            .check("starting a solve")?;
        let n = self.n;
        launch(
            &stream,
            &self.setup,
            chunks(n),
            &self.args,
            None,
            "cg_setup",
        )?;
        if self.spmv.is_none() {
            let tuning = SpmvTuning {
                device,
                csr: self.csr.clone(),
                offsets,
                columns,
                h: inputs.h,
                s: inputs.s,
                diagonal: inputs.diagonal,
                x: self.args.sb,
                w: self.args.w,
            };
            let (kernel, report) = tune(device, &tuning, tune_mode)?;
            let status = self.args.state + std::mem::offset_of!(CgState, status) as u64;
            let args = kernel.args(&stream, inputs.diagonal, inputs.s, status);
            self.spmv = Some((kernel, args));
            self.tuning = Some(report);
        }
        let Some((spmv, spmv_args)) = &self.spmv else {
            unreachable!("chosen above")
        };
        spmv.scale(&stream, spmv_args, inputs.h)?;
        spmv.launch(&stream, spmv_args, self.args.y[0], self.args.w)?;
        launch(
            &stream,
            &self.start,
            per_node(n),
            &self.args,
            None,
            "cg_start",
        )?;
        loop {
            self.replay()?;
            let st = self.state()?;
            if st.status != RUNNING {
                launch(
                    &stream,
                    &self.finish,
                    per_node(n),
                    &self.args,
                    None,
                    "cg_finish",
                )?;
                return Ok(Outcome {
                    iterations: st.iterations as usize,
                    relative_residual: st.relative_residual,
                    converged: st.status == CONVERGED,
                });
            }
        }
    }

    /// The solve's state (waits for the stream).
    pub(crate) fn state(&self) -> Result<CgState, BackendError> {
        let bytes = read(&self.stream, &self.state, "reading the CG state")?;
        Ok(CgState::from_bytes(&bytes))
    }

    /// Median seconds of one product w = S A S x, x = S b of the last solve (no status: it
    /// runs even after the solve ended), `launches` per sample, 7 samples.
    pub(crate) fn time_product(
        &self,
        device: &Device,
        launches: usize,
    ) -> Result<f64, BackendError> {
        let Some((spmv, spmv_args)) = &self.spmv else {
            return Err(not_yet());
        };
        let mut args = *spmv_args;
        args.status = 0;
        let timer = Timer::new(device)?;
        let sample = || {
            timer.seconds(&self.stream, || {
                (0..launches)
                    .try_for_each(|_| spmv.launch(&self.stream, &args, self.args.sb, self.args.w))
            })
        };
        sample()?;
        let times = (0..7).map(|_| sample()).collect::<Result<Vec<f64>, _>>()?;
        Ok(median(times) / launches as f64)
    }

    /// Seconds per CG iteration replayed from the graph, the last solve's vectors iterated on
    /// with its end undone (tolerance −1, no limit), `replays` graphs per sample, 5 samples;
    /// None if the recurrence broke down meanwhile (an iteration stopped it, so the timing
    /// holds empty ones). The next solve starts afresh.
    pub(crate) fn time_iterations(
        &mut self,
        device: &Device,
        replays: usize,
    ) -> Result<Option<f64>, BackendError> {
        let mut st = self.state()?;
        st.status = RUNNING;
        st.tolerance = -1.0;
        st.max_iterations = i64::MAX;
        // Graphs start at even parity.
        st.iterations &= !1;
        let stream = self.stream.clone();
        (stream.memcpy_htod(&st.to_bytes(), &mut self.state)).check("restarting a solve")?;
        let timer = Timer::new(device)?;
        self.replay()?;
        let mut times = Vec::new();
        for _ in 0..5 {
            let t = timer.seconds(&stream, || (0..replays).try_for_each(|_| self.replay()))?;
            times.push(t / (replays * self.graph_iterations) as f64);
        }
        Ok((self.state()?.status == RUNNING).then(|| median(times)))
    }

    /// The chosen product's variant.
    pub(crate) fn shape(&self) -> Option<SpmvShape> {
        self.spmv.as_ref().map(|(k, _)| k.shape)
    }

    /// Queues one iteration from the vectors of `parity`.
    fn iteration(&self, parity: usize) -> Result<(), BackendError> {
        let Some((spmv, spmv_args)) = &self.spmv else {
            unreachable!("the product is chosen before iterating")
        };
        let s = &self.stream;
        spmv.launch(s, spmv_args, self.args.r[parity], self.args.w)?;
        let p = Some(parity as i32);
        launch(s, &self.dots, chunks(self.n), &self.args, p, "cg_dots")?;
        launch(
            s,
            &self.update,
            per_node(self.n),
            &self.args,
            p,
            "cg_update",
        )
    }

    /// Runs `graph_iterations` iterations from the graph (captured on first use).
    fn replay(&mut self) -> Result<(), BackendError> {
        if self.graph.is_none() {
            let stream = self.stream.clone();
            stream
                .begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
                .check("starting a graph capture")?;
            let captured = (0..self.graph_iterations).try_for_each(|j| self.iteration(j % 2));
            // End the capture even after a failed launch, or the stream stays capturing.
            let graph = stream
                .end_capture(CUgraphInstantiate_flags(0))
                .check("capturing the CG graph");
            captured?;
            self.graph = graph?;
        }
        match &self.graph {
            Some(g) => g.launch().check("launching the CG graph"),
            None => Err(BackendError::Failed {
                backend: "cuda",
                message: "the CG graph capture recorded nothing".into(),
            }),
        }
    }

    /// Device bytes of its vectors.
    pub(crate) fn bytes(n: usize) -> usize {
        6 * R::BYTES * n
    }
}
