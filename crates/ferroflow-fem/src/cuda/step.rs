//! [`CudaFractional`]: the fractional step of [`crate::fractional`] with its whole state on a
//! GPU (kernels/fem_step.cu for the node loops, [`super::cg`] for the pressure solve).
use super::cg::{chunks, launch, per_node, read, Inputs, Reduction, Solve};
use super::spmv::Layout;
use super::{step_build, DeviceReal, SpmvShape, TuneMode, TuneReport, DEFAULT_GRAPH_ITERATIONS};
use crate::cg::Outcome;
use crate::fractional::{Controls, FractionalStep, StepReport};
use ferroflow_core::BackendError;
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr};
use ferroflow_cuda::cudarc::nvrtc::Ptx;
use ferroflow_cuda::{address, Check, Device};
use std::sync::Arc;

/// How the GPU solver runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CudaOptions {
    /// CUDA device ordinal.
    pub device: usize,
    /// How the matrix–vector product's variant is chosen.
    pub tune: TuneMode,
    /// CG iterations per replayed graph (even; the host checks the solve after each).
    pub graph_iterations: usize,
}

impl Default for CudaOptions {
    fn default() -> CudaOptions {
        CudaOptions {
            device: 0,
            tune: TuneMode::Cached,
            graph_iterations: DEFAULT_GRAPH_ITERATIONS,
        }
    }
}

/// `Rows` of kernels/fem.cuh.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct RowsArgs {
    offsets: CUdeviceptr,
    columns: CUdeviceptr,
    terms: CUdeviceptr,
    lumped: CUdeviceptr,
    n: i64,
}

/// `Step` of kernels/fem_step.cu, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct StepArgs<R> {
    rows: RowsArgs,
    h: CUdeviceptr,
    h_min: CUdeviceptr,
    boundary: CUdeviceptr,
    held: CUdeviceptr,
    held_half: CUdeviceptr,
    held_full: CUdeviceptr,
    u: CUdeviceptr,
    p: CUdeviceptr,
    stage: [CUdeviceptr; 2],
    sum: CUdeviceptr,
    xi: CUdeviceptr,
    tau_c: CUdeviceptr,
    tau_p: CUdeviceptr,
    rate: CUdeviceptr,
    grad_p: CUdeviceptr,
    f: CUdeviceptr,
    h_values: CUdeviceptr,
    diagonal: CUdeviceptr,
    scale: CUdeviceptr,
    scaled_diagonal: CUdeviceptr,
    x: CUdeviceptr,
    dp: CUdeviceptr,
    rot: CUdeviceptr,
    dt_node: CUdeviceptr,
    red: Reduction,
    nu: R,
    rho: R,
    dt: R,
    cfl: R,
    dt_max: R,
    c_convection: R,
    c_pressure: R,
    level: i64,
    local: i32,
}

/// `Change` of kernels/fem_step.cu, field for field.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct ChangeArgs<R> {
    u: CUdeviceptr,
    u0: CUdeviceptr,
    p: CUdeviceptr,
    p0: CUdeviceptr,
    dt_node: CUdeviceptr,
    red: Reduction,
    dt: R,
    rho: R,
    n: i64,
    local: i32,
}

// SAFETY: C structs of device addresses and numbers.
unsafe impl<R: DeviceReal> DeviceRepr for StepArgs<R> {}
unsafe impl<R: DeviceReal> DeviceRepr for ChangeArgs<R> {}

/// The step's kernels (kernels/fem_step.cu).
struct Kernels {
    rates: CudaFunction,
    freeze: CudaFunction,
    stage: CudaFunction,
    gradient_p: CudaFunction,
    pressure_system: CudaFunction,
    scaling: CudaFunction,
    total: CudaFunction,
    shift: CudaFunction,
    correct: CudaFunction,
    pressure_update: CudaFunction,
    divergence: CudaFunction,
    time_step: CudaFunction,
    changes: CudaFunction,
}

/// Node arrays of reals per node: their count each (u, p, two stages, the sum, ξ, τ twice, the
/// rates, ∇p, f, the diagonal, scaling, scaled diagonal, x, δp, the rotational term, Δt).
const NODE_ARRAYS: [usize; 18] = [3, 1, 3, 3, 3, 3, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1, 1, 1];

/// The fractional-step solver with its state on a GPU, in precision `R`:
/// [`CudaFractional::step`] gives [`FractionalStep::step`]'s state and report, bit for bit
/// (module comment of [`crate::cuda`]).
pub struct CudaFractional<R: DeviceReal = f64> {
    device: Device,
    kernels: Kernels,
    args: StepArgs<R>,
    controls: Controls,
    tune: TuneMode,
    /// The fixed-velocity nodes, in order: their held values' index.
    fixed: Vec<usize>,
    /// The pattern, for building the product's layouts.
    offsets: Vec<u32>,
    columns: Vec<u32>,
    u: CudaSlice<R>,
    p: CudaSlice<R>,
    /// The state before the last step ([`CudaFractional::changes`]).
    u0: CudaSlice<R>,
    p0: CudaSlice<R>,
    held_half: CudaSlice<R>,
    held_full: CudaSlice<R>,
    totals: CudaSlice<R>,
    /// Memory `args` points to besides the named arrays: arrays of reals (read back by
    /// [`CudaFractional::time_cusparse`]), the pattern and counter, the nodes' flags.
    reals: Vec<CudaSlice<R>>,
    _indices: Vec<CudaSlice<u32>>,
    _flags: Vec<CudaSlice<i32>>,
    solve: Solve<R>,
    n: usize,
    /// Device bytes of the arrays (without a sliced product's own).
    bytes: usize,
}

impl<R: DeviceReal> CudaFractional<R> {
    /// `solver`'s mesh, settings and state on the GPU `options.device`; an error says why
    /// there is none, or what does not fit.
    pub fn new(solver: &FractionalStep<R>, options: &CudaOptions) -> Result<Self, BackendError> {
        let device = Device::open(options.device)?;
        let ops = &solver.ops;
        let (n, nnz) = (ops.nodes(), ops.columns.len());
        if nnz >= u32::MAX as usize {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!("{nnz} directed edges (32-bit entry indices)"),
            });
        }
        // Per entry: terms, column (twice), matrix values (twice); per node the arrays and
        // the state before a step.
        let real = R::BYTES;
        let need = nnz * (16 * real + 4 + 4 + 2 * real)
            + n * real * (NODE_ARRAYS.iter().sum::<usize>() + 4)
            + n * (4 + 4 + 4 + 2 * 3 * real)
            + Solve::<R>::bytes(n);
        device.ensure_free(need, &format!("{n} nodes, {nnz} directed edges"))?;
        let stream = device.stream.clone();
        let module = (device.ctx)
            .load_module(Ptx::from_binary(device.compile(&step_build(R::SCALAR))?))
            .check("loading fem_step")?;
        let f = |name: &str| module.load_function(name).check(name);
        let kernels = Kernels {
            rates: f("fem_rates")?,
            freeze: f("fem_freeze")?,
            stage: f("fem_stage")?,
            gradient_p: f("fem_gradient_p")?,
            pressure_system: f("fem_pressure_system")?,
            scaling: f("fem_scaling")?,
            total: f("fem_total")?,
            shift: f("fem_shift")?,
            correct: f("fem_correct")?,
            pressure_update: f("fem_pressure_update")?,
            divergence: f("fem_divergence")?,
            time_step: f("fem_time_step")?,
            changes: f("fem_changes")?,
        };
        let up = |v: &[R]| stream.clone_htod(v).check("uploading the mesh");
        let zeros = |k: usize| stream.alloc_zeros::<R>(k).check("allocating the state");
        let offsets: Vec<u32> = ops.offsets.iter().map(|&o| o as u32).collect();
        let columns = ops.columns.clone();
        let terms: Vec<R> = ops.terms.iter().flat_map(|t| t.values()).collect();
        let fixed: Vec<usize> = (0..n).filter(|&i| solver.fixed_velocity[i]).collect();
        let mut boundary = vec![-1i32; n];
        for (k, &i) in fixed.iter().enumerate() {
            boundary[i] = k as i32;
        }
        // Rows held at δp = 0: every fixed node's, unless one only sets the level.
        let held: Vec<i32> = (0..n)
            .map(|i| (solver.level.is_none() && solver.fixed_pressure[i]) as i32)
            .collect();
        let u = up(solver.u.as_flattened())?;
        let p = up(&solver.p)?;
        let (u0, p0) = (zeros(3 * n)?, zeros(n)?);
        let held_half = zeros(3 * fixed.len().max(1))?;
        let held_full = zeros(3 * fixed.len().max(1))?;
        let totals = zeros(3)?;
        let csr = Arc::new(Layout::csr(&stream, &offsets, &columns)?);
        let ints = vec![
            stream.clone_htod(&offsets).check("uploading the mesh")?,
            stream.clone_htod(&columns).check("uploading the mesh")?,
        ];
        let signed = vec![
            stream.clone_htod(&boundary).check("uploading the mesh")?,
            stream.clone_htod(&held).check("uploading the mesh")?,
        ];
        let mut reals = vec![
            up(&terms)?,
            up(&ops.lumped)?,
            up(&solver.h)?,
            up(&ops.h_min)?,
            zeros(nnz)?,
            zeros(3 * n.div_ceil(crate::sum::BLOCK))?,
        ];
        // The node arrays after u and p.
        for &k in &NODE_ARRAYS[2..] {
            reals.push(zeros(k * n)?);
        }
        let counter = stream.alloc_zeros::<u32>(1).check("allocating a counter")?;
        let a = |v: &CudaSlice<R>| address(v, &stream);
        let node = |k: usize| a(&reals[6 + k]);
        let red = Reduction {
            partials: a(&reals[5]),
            counter: address(&counter, &stream),
            totals: a(&totals),
        };
        let args = StepArgs {
            rows: RowsArgs {
                offsets: address(&ints[0], &stream),
                columns: address(&ints[1], &stream),
                terms: a(&reals[0]),
                lumped: a(&reals[1]),
                n: n as i64,
            },
            h: a(&reals[2]),
            h_min: a(&reals[3]),
            boundary: address(&signed[0], &stream),
            held: address(&signed[1], &stream),
            held_half: a(&held_half),
            held_full: a(&held_full),
            u: a(&u),
            p: a(&p),
            stage: [node(0), node(1)],
            sum: node(2),
            xi: node(3),
            tau_c: node(4),
            tau_p: node(5),
            rate: node(6),
            grad_p: node(7),
            f: node(8),
            h_values: a(&reals[4]),
            diagonal: node(9),
            scale: node(10),
            scaled_diagonal: node(11),
            x: node(12),
            dp: node(13),
            rot: node(14),
            dt_node: node(15),
            red,
            nu: R::of(solver.fluid.viscosity),
            rho: R::of(solver.fluid.density),
            dt: R::zero(),
            cfl: R::of(solver.controls.cfl),
            dt_max: R::of(solver.controls.dt_max),
            c_convection: R::of(solver.controls.convection_factor),
            c_pressure: R::of(solver.controls.pressure_factor),
            level: solver.level.map_or(-1, |l| l as i64),
            local: solver.controls.local_time_steps as i32,
        };
        let solve = Solve::new(
            &device,
            csr,
            n,
            red.partials,
            red.counter,
            options.graph_iterations,
        )?;
        let mut ints = ints;
        ints.push(counter);
        Ok(CudaFractional {
            kernels,
            args,
            controls: solver.controls,
            tune: options.tune,
            fixed,
            offsets,
            columns,
            u,
            p,
            u0,
            p0,
            held_half,
            held_full,
            totals,
            reals,
            _indices: ints,
            _flags: signed,
            solve,
            n,
            bytes: need,
            device,
        })
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.device.name
    }

    /// How the matrix–vector product was chosen (after the first step).
    pub fn tuning(&self) -> Option<&TuneReport> {
        self.solve.tuning.as_ref()
    }

    /// Seconds per pressure matrix–vector product with the variant in use (after a step):
    /// median of samples of `launches` products.
    pub fn time_spmv(&self, launches: usize) -> Result<f64, BackendError> {
        self.solve.time_product(&self.device, launches)
    }

    /// Seconds per CG iteration (product, fused reduction, update) replayed from the graph on
    /// the last step's pressure matrix, or None if the recurrence broke down while timed.
    /// Leaves the state alone; the next step's solve starts afresh.
    pub fn time_cg_iteration(&mut self, replays: usize) -> Result<Option<f64>, BackendError> {
        self.solve.time_iterations(&self.device, replays)
    }

    /// Device bytes this solver allocated (estimate from its arrays' sizes) and the device's
    /// free and total memory now.
    pub fn memory(&self) -> Result<[usize; 3], BackendError> {
        let (free, total) = self
            .device
            .ctx
            .mem_get_info()
            .check("reading free memory")?;
        Ok([self.bytes, free, total])
    }

    /// The product's variant in use (after the first step).
    pub fn spmv(&self) -> Option<SpmvShape> {
        self.solve.shape()
    }

    /// [`FractionalStep::step`]: advances by `dt` (rounded to `R`) from time `t`;
    /// `boundary(node, time)` is the velocity of a fixed-velocity node (called on the host for
    /// the step's two times). With [`Controls::local_time_steps`] it is
    /// [`FractionalStep::advance`] by each node's stable step ([`CudaFractional::time_steps`]
    /// reads them), `dt` the boundary's.
    pub fn step(
        &mut self,
        dt: f64,
        t: f64,
        boundary: &(dyn Fn(usize, f64) -> [f64; 3] + Sync),
    ) -> Result<StepReport, BackendError> {
        let stream = self.device.stream.clone();
        // The stages' times, t + α Δt (α = 1/2, 1/2, 1), and û's, t + Δt.
        let values = |time: f64| -> Vec<R> {
            (self.fixed.iter())
                .flat_map(|&i| boundary(i, time).map(R::of))
                .collect()
        };
        let (half, full) = (values(t + 0.5 * dt), values(t + dt));
        if !self.fixed.is_empty() {
            (stream.memcpy_htod(&half, &mut self.held_half)).check("uploading boundary values")?;
            (stream.memcpy_htod(&full, &mut self.held_full)).check("uploading boundary values")?;
        }
        self.args.dt = R::of(dt);
        (stream.memcpy_dtod(&self.u, &mut self.u0)).check("keeping the velocity")?;
        (stream.memcpy_dtod(&self.p, &mut self.p0)).check("keeping the pressure")?;
        let (n, k) = (self.n, &self.kernels);
        let go = |f: &CudaFunction, config, extra: Option<i32>, what: &str| {
            launch(&stream, f, config, &self.args, extra, what)
        };
        if self.controls.local_time_steps {
            go(&k.time_step, chunks(n), None, "fem_time_step")?;
        }
        go(&k.rates, chunks(n), None, "fem_rates")?;
        go(&k.freeze, per_node(n), None, "fem_freeze")?;
        for s in 0..4 {
            go(&k.stage, per_node(n), Some(s), "fem_stage")?;
        }
        go(&k.gradient_p, per_node(n), None, "fem_gradient_p")?;
        go(&k.pressure_system, per_node(n), None, "fem_pressure_system")?;
        if self.args.level >= 0 {
            go(&k.total, chunks(n), None, "fem_total")?;
        }
        go(&k.scaling, per_node(n), None, "fem_scaling")?;
        let inputs = Inputs {
            f: self.args.f,
            f_total: if self.args.level >= 0 {
                self.args.red.totals
            } else {
                0
            },
            h: self.args.h_values,
            s: self.args.scale,
            diagonal: self.args.scaled_diagonal,
            x: self.args.x,
        };
        let pressure: Outcome = self.solve.run(
            &self.device,
            inputs,
            self.controls.cg_tolerance,
            self.controls.cg_iterations,
            self.tune,
            &self.offsets,
            &self.columns,
        )?;
        go(&k.shift, per_node(n), None, "fem_shift")?;
        go(&k.correct, per_node(n), None, "fem_correct")?;
        go(&k.pressure_update, per_node(n), None, "fem_pressure_update")?;
        go(&k.divergence, chunks(n), None, "fem_divergence")?;
        let count = R::of(n as f64);
        let [divergence, continuity] = self.read_totals()?.map(|s| (s / count).sqrt().f64());
        Ok(StepReport {
            pressure,
            divergence,
            continuity,
        })
    }

    /// [`FractionalStep::time_step`] of the device's state.
    pub fn time_step(&self) -> Result<f64, BackendError> {
        let stream = &self.device.stream;
        let k = &self.kernels.time_step;
        launch(stream, k, chunks(self.n), &self.args, None, "fem_time_step")?;
        let [smallest] = self.read_totals()?;
        Ok(smallest.f64())
    }

    /// What the last step changed, read without the state: [`FractionalStep::rates`] of the
    /// state before it, bit for bit, and the largest |u| component now, infinite if a value
    /// of the state is not finite.
    pub fn changes(&self) -> Result<[f64; 3], BackendError> {
        let a = &self.args;
        let args = ChangeArgs {
            u: a.u,
            u0: address(&self.u0, &self.device.stream),
            p: a.p,
            p0: address(&self.p0, &self.device.stream),
            dt_node: a.dt_node,
            red: a.red,
            dt: a.dt,
            rho: a.rho,
            n: self.n as i64,
            local: a.local,
        };
        let (stream, k) = (&self.device.stream, &self.kernels.changes);
        launch(stream, k, chunks(self.n), &args, None, "fem_changes")?;
        Ok(self.read_totals::<3>()?.map(|v| v.f64()))
    }

    /// Each node's stability estimate of the last step or [`CudaFractional::time_step`]:
    /// [`FractionalStep::local_time_steps`] of that state.
    pub fn time_steps(&self) -> Result<Vec<R>, BackendError> {
        // The node array 15 (`args`).
        read(
            &self.device.stream,
            &self.reals[6 + 15],
            "reading the time steps",
        )
    }

    /// The first `K` totals of the last reduction.
    fn read_totals<const K: usize>(&self) -> Result<[R; K], BackendError> {
        let v = read(&self.device.stream, &self.totals, "reading sums")?;
        Ok(std::array::from_fn(|k| v[k]))
    }

    /// The velocity and pressure at the nodes (waits for the device).
    pub fn state(&self) -> Result<(Vec<[R; 3]>, Vec<R>), BackendError> {
        let stream = &self.device.stream;
        let u = read(stream, &self.u, "reading the velocity")?;
        let p = read(stream, &self.p, "reading the pressure")?;
        let u = u.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
        Ok((u, p))
    }

    /// Median seconds of cuSPARSE's SpMV on the last step's scaled pressure matrix (whole, in
    /// CSR, in precision `R`), samples of `launches` products, for comparison with
    /// [`CudaFractional::time_spmv`].
    pub fn time_cusparse(&self, launches: usize) -> Result<f64, BackendError> {
        let stream = &self.device.stream;
        let reals = &self.reals;
        let h = read(stream, &reals[4], "reading the pressure matrix")?;
        // The diagonal and the scaling: the node arrays 9 and 10 (`args`).
        let diagonal = read(stream, &reals[6 + 9], "reading the pressure matrix")?;
        let s = read(stream, &reals[6 + 10], "reading the pressure matrix")?;
        super::cusparse::time_spmv(
            &self.device,
            &self.offsets,
            &self.columns,
            &h,
            &diagonal,
            &s,
            launches,
        )
    }
}
