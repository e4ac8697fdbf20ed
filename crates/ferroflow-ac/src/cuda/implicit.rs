//! The implicit relaxation on the device (kernels/ac_implicit.cu): its arrays, and one
//! iteration queued on the stream without host round trips (so CUDA graphs capture it like the
//! explicit pass). Jacobi sweeps only: the relaxation whose nodes are all independent. Each
//! kernel takes one parameter struct, mirrored here by the `#[repr(C)]` struct of the same
//! name (tests/mirror.rs checks the fields).
use super::launch::{GridArgs, HaloKernel, Vars};
use super::programs::{Program, Variant};
use super::state::{bytes, Arrays, Norms};
use crate::implicit::ImplicitCoefficients;
use crate::Coefficients;
use crate::{Problem, Relax, Relaxation, SideBc};
use ferroflow_core::{BackendError, Layout, Real};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use ferroflow_cuda::Scalar;
use ferroflow_cuda::{address, Check, Device};
use std::sync::Arc;

/// Thread-block shape of the per-node kernels (`IMPLICIT_X`, `IMPLICIT_Y` in ac_implicit.cu).
const BLOCK: (u32, u32) = (32, 8);
/// Threads per block of the flat kernels.
const FLAT: u32 = 256;
/// Frozen operator arrays per node (`FROZEN`).
const FROZEN: usize = 10;
/// Thread-block width of `implicit_jacobi_twice` (`FUSED_X`; its height `FUSED_Y` is 16 with
/// the operator in f32, 8 in f64) and the planes a 3D block marches (`FUSED_PLANES`).
const FUSED_X: u32 = 32;
const FUSED_PLANES: usize = 16;

/// `$body` with `$op` bound to the operator's constants in their precision (a parameter struct
/// holding them is generic over it).
macro_rules! with_op {
    ($which:expr, $op:ident => $body:expr) => {
        match $which {
            Op::F32($op) => $body,
            Op::F64($op) => $body,
        }
    };
}

/// The operator's constants in either precision (`ImplCoeffs` in ac_implicit.cu).
#[derive(Clone, Copy)]
enum Op {
    F32(ImplicitCoefficients<f32>),
    F64(ImplicitCoefficients<f64>),
}

/// The frozen operator's arrays (`Frozen` in ac_implicit.cu).
#[repr(C)]
#[derive(Clone, Copy)]
struct FrozenArgs {
    v: [CUdeviceptr; FROZEN],
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ResidualParams<R, S> {
    c: Coefficients<R>,
    op: ImplicitCoefficients<S>,
    g: GridArgs,
    cur: Vars,
    src: Vars,
    sides: i32,
    resid_p: CUdeviceptr,
    inv_dt: CUdeviceptr,
    rhs: Vars,
    frozen: FrozenArgs,
    delta: Vars,
    partials: CUdeviceptr,
    out: Vars,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RowsParams {
    g: GridArgs,
    resid_p: CUdeviceptr,
    inv_dt: CUdeviceptr,
    rows: CUdeviceptr,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct GaugeParams {
    rows: CUdeviceptr,
    count: i64,
    gauge: CUdeviceptr,
    sums: CUdeviceptr,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct ProjectParams {
    g: GridArgs,
    resid_p: CUdeviceptr,
    inv_dt: CUdeviceptr,
    gauge: CUdeviceptr,
    rhs_p: CUdeviceptr,
    partials: CUdeviceptr,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct SweepParams<S> {
    op: ImplicitCoefficients<S>,
    g: GridArgs,
    sides: i32,
    rhs: Vars,
    frozen: FrozenArgs,
    old: Vars,
    out: Vars,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct UpdateParams {
    len: i64,
    vars: i32,
    cur: Vars,
    next: Vars,
    delta: Vars,
    p_ref: i64,
    given: CUdeviceptr,
}

// SAFETY (each): a C struct of f32 or f64 values (R and S are f32 or f64 only:
// `Scalar::of`), integers and device pointers, the kernel's struct of the same name.
unsafe impl<R: Real, S: Real> DeviceRepr for ResidualParams<R, S> {}
unsafe impl DeviceRepr for RowsParams {}
unsafe impl DeviceRepr for GaugeParams {}
unsafe impl DeviceRepr for ProjectParams {}
unsafe impl<S: Real> DeviceRepr for SweepParams<S> {}
unsafe impl DeviceRepr for UpdateParams {}

/// The kernels and arrays of one block's implicit relaxation.
pub(crate) struct Relaxer {
    residual: CudaFunction,
    rows: CudaFunction,
    gauge_sum: CudaFunction,
    project: CudaFunction,
    jacobi: CudaFunction,
    jacobi_twice: CudaFunction,
    update: CudaFunction,
    op: Op,
    sweeps: usize,
    /// Walls per side (bits 0–5) and adiabatic walls (bits 6–11).
    sides: i32,
    layout: Layout,
    equations: usize,
    p_ref: i64,
    /// Continuity residual and 1 / Δτ in the state's precision, one sum pair per row, and the
    /// gauge.
    resid_p: CudaSlice<u8>,
    inv_dt: CudaSlice<u8>,
    row_sums: CudaSlice<f64>,
    gauge: CudaSlice<u8>,
    /// Σ R_p and Σ 1 / Δτ, the gauge's sums.
    sums: CudaSlice<f64>,
    /// Right-hand side, frozen operator (two sets of five arrays) and the two increment
    /// buffers, in the operator's precision.
    rhs: Arrays,
    frozen: [Arrays; 2],
    delta: [Arrays; 2],
    /// Blocks of the per-node kernels, whose residual partial sums [`Norms`] adds up.
    grid: (u32, u32, u32),
    /// Launch of `implicit_jacobi_twice`.
    twice: LaunchConfig,
    /// `halo_box` in the implicit precision, for a block with interfaces.
    pub(crate) halo: Option<HaloKernel>,
    /// The increment buffer the last sweep wrote.
    pub(crate) latest: usize,
}

/// The relaxation a GPU can run, or why not.
pub(crate) fn jacobi_only(imp: &Relax) -> Result<(), BackendError> {
    match imp.relaxation {
        Relaxation::Jacobi => Ok(()),
        other => Err(BackendError::NotSuitable {
            backend: "cuda",
            what: format!(
                "numerics.relaxation = \"{}\" (the GPU relaxes with \"jacobi\"; the CPU has \
                 the others)",
                match other {
                    Relaxation::Sgs => "sgs",
                    Relaxation::RedBlack => "red-black",
                    Relaxation::Line => "line",
                    Relaxation::Jacobi => "jacobi",
                }
            ),
        }),
    }
}

impl Relaxer {
    /// Device arrays the relaxation adds, in bytes, for `problem`'s layout.
    pub fn bytes<R: Real>(problem: &Problem<R>, imp: &Relax) -> usize {
        let s = if imp.single { 4 } else { 8 };
        let eq = problem.equations();
        problem.layout.len * (2 * std::mem::size_of::<R>() + s * (3 * eq + FROZEN))
    }

    /// Compiles the kernels and allocates the arrays of `problem`'s implicit relaxation.
    pub fn new<R: Real>(
        device: &Device,
        problem: &Problem<R>,
        imp: &Relax,
        precision: Scalar,
        fmad: bool,
    ) -> Result<Relaxer, BackendError> {
        let layout = problem.layout;
        let implicit = if imp.single { Scalar::F32 } else { Scalar::F64 };
        let program = Program::AcImplicit {
            dim: layout.dim,
            variant: Variant::of(problem),
            implicit,
        };
        let cubin = device.compile(&program.build(precision, fmad))?;
        let load = |name| device.load(cubin.clone(), name);
        let stream = &device.stream;
        let mut sides = 0;
        for (s, bc) in problem.sides.iter().enumerate() {
            if *bc != SideBc::Interface {
                sides |= 1 << s;
            }
            if *bc == SideBc::AdiabaticWall && problem.energy.is_some() {
                sides |= 1 << (6 + s);
            }
        }
        let eq = problem.equations();
        let real = layout.len * std::mem::size_of::<R>();
        let imp_bytes = layout.len * implicit.bytes();
        let rows = (layout.n[1] - 2) * if layout.dim == 3 { layout.n[2] - 2 } else { 1 };
        let zeros = |bytes: usize| -> Result<CudaSlice<u8>, BackendError> {
            stream
                .alloc_zeros::<u8>(bytes)
                .check("allocating the implicit relaxation's arrays")
        };
        let planes = if layout.dim == 3 { layout.n[2] - 2 } else { 1 };
        if planes > 65535 {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!(
                    "the implicit relaxation on {} planes (65535 at most)",
                    planes
                ),
            });
        }
        let grid = (
            ((layout.n[0] - 2) as u32).div_ceil(BLOCK.0),
            ((layout.n[1] - 2) as u32).div_ceil(BLOCK.1),
            planes as u32,
        );
        let fused_y = if imp.single { 16 } else { 8 };
        let twice = LaunchConfig {
            grid_dim: (
                ((layout.n[0] - 2) as u32).div_ceil(FUSED_X - 2),
                ((layout.n[1] - 2) as u32).div_ceil(fused_y - 2),
                planes.div_ceil(if layout.dim == 3 { FUSED_PLANES } else { 1 }) as u32,
            ),
            block_dim: (FUSED_X, fused_y, 1),
            shared_mem_bytes: 0,
        };
        let halo = match problem.sides.contains(&SideBc::Interface) {
            true => {
                let cubin = device.compile(&Program::Boundary.build(implicit, fmad))?;
                Some(HaloKernel {
                    function: device.load(cubin, "halo_box")?,
                })
            }
            false => None,
        };
        Ok(Relaxer {
            residual: load("implicit_residual")?,
            rows: load("implicit_rows")?,
            gauge_sum: load("implicit_gauge")?,
            project: load("implicit_project")?,
            jacobi: load("implicit_jacobi")?,
            jacobi_twice: load("implicit_jacobi_twice")?,
            update: load("implicit_update")?,
            op: if imp.single {
                Op::F32(ImplicitCoefficients::new(problem, imp))
            } else {
                Op::F64(ImplicitCoefficients::new(problem, imp))
            },
            sweeps: imp.sweeps,
            sides,
            layout,
            equations: eq,
            p_ref: problem.pressure_ref_offset() as i64,
            resid_p: zeros(real)?,
            inv_dt: zeros(real)?,
            row_sums: stream
                .alloc_zeros::<f64>(2 * rows)
                .check("allocating the implicit relaxation's arrays")?,
            gauge: zeros(std::mem::size_of::<R>())?,
            sums: stream
                .alloc_zeros::<f64>(2)
                .check("allocating the implicit relaxation's arrays")?,
            rhs: Arrays::new(stream, eq, imp_bytes)?,
            frozen: [
                Arrays::new(stream, FROZEN / 2, imp_bytes)?,
                Arrays::new(stream, FROZEN / 2, imp_bytes)?,
            ],
            delta: [
                Arrays::new(stream, eq, imp_bytes)?,
                Arrays::new(stream, eq, imp_bytes)?,
            ],
            grid,
            twice,
            halo,
            latest: 0,
        })
    }

    /// Sweeps per iteration.
    pub fn sweeps(&self) -> usize {
        self.sweeps
    }

    /// Precision of the operator and the increments.
    pub fn scalar(&self) -> Scalar {
        match self.op {
            Op::F32(_) => Scalar::F32,
            Op::F64(_) => Scalar::F64,
        }
    }

    /// The increment buffer `from`'s arrays.
    pub fn increments(&self, from: usize) -> &Vars {
        &self.delta[from].vars
    }

    /// Zeroes increment buffer 0, halos included (the residual kernel zeroes its interior
    /// only): the first sweep of a block with interfaces reads it.
    pub fn zero_increments(&mut self, stream: &Arc<CudaStream>) -> Result<(), BackendError> {
        self.delta[0].zero(stream)
    }

    /// The gauge's two sums of the last residual queued (waits for it).
    pub fn read_sums(&self, stream: &Arc<CudaStream>) -> Result<[f64; 2], BackendError> {
        let sums = stream
            .clone_dtoh(&self.sums)
            .check("copying the gauge's sums to the host")?;
        stream.synchronize().check("summing the gauge")?;
        Ok([sums[0], sums[1]])
    }

    /// Sets the gauge the projection uses.
    pub fn set_gauge<R: Real>(
        &mut self,
        stream: &Arc<CudaStream>,
        gauge: R,
    ) -> Result<(), BackendError> {
        stream
            .memcpy_htod(bytes(&[gauge]), &mut self.gauge)
            .check("copying the gauge to the device")
    }

    /// The pressure increment of buffer `from` at `offset`, in f64 (waits for the work
    /// queued before).
    pub fn increment_at(
        &self,
        stream: &Arc<CudaStream>,
        from: usize,
        offset: usize,
    ) -> Result<f64, BackendError> {
        let b = self.delta[from].element(stream, 0, offset, self.scalar().bytes())?;
        Ok(values_of(&b, self.scalar())[0])
    }

    /// Device addresses of the continuity residual, the weights 1 / Δτ and the gauge of the
    /// last residual queued.
    pub fn residual_addresses(&self, stream: &Arc<CudaStream>) -> [CUdeviceptr; 3] {
        [&self.resid_p, &self.inv_dt, &self.gauge].map(|s| address(s, stream))
    }

    /// Residual partial sums per equation: one per block of the per-node kernels.
    pub fn blocks(&self) -> usize {
        let (x, y, z) = self.grid;
        x as usize * y as usize * z as usize
    }

    /// Queues one iteration from the state `cur` into `next` (interior and ghosts; the walls
    /// are left to `fill_walls`), with the residual partial sums into `norms`.
    #[allow(clippy::too_many_arguments)]
    pub fn queue<R: Real>(
        &self,
        stream: &Arc<CudaStream>,
        coeffs: &Coefficients<R>,
        grid: &GridArgs,
        cur: &Vars,
        next: &Vars,
        src: &Vars,
        norms: &Norms,
    ) -> Result<(), BackendError> {
        self.queue_residual(stream, coeffs, grid, cur, src, norms, &Vars::default())?;
        self.queue_project(stream, grid, norms)?;
        // Two sweeps per launch while two are left, from one buffer into the other.
        let (mut from, mut left) = (0, self.sweeps);
        while left > 0 {
            let done = left.min(2);
            self.queue_sweeps(stream, grid, from, done)?;
            from = 1 - from;
            left -= done;
        }
        self.queue_update(stream, cur, next, from, 0)
    }

    /// Queues R(Q) and the frozen operator (increments zeroed in the interior), the rows'
    /// sums for the gauge, and the gauge with its two sums; R of every equation but
    /// continuity also into `out` where its pointers are not null.
    #[allow(clippy::too_many_arguments)]
    pub fn queue_residual<R: Real>(
        &self,
        stream: &Arc<CudaStream>,
        coeffs: &Coefficients<R>,
        grid: &GridArgs,
        cur: &Vars,
        src: &Vars,
        norms: &Norms,
        out: &Vars,
    ) -> Result<(), BackendError> {
        let ptr = |s: &CudaSlice<u8>| address(s, stream);
        let (resid_p, inv_dt, gauge) = (ptr(&self.resid_p), ptr(&self.inv_dt), ptr(&self.gauge));
        let row_sums = address(&self.row_sums, stream);
        let sums = address(&self.sums, stream);
        let partials = norms.partials(stream);
        with_op!(
            self.op,
            op => launch(
                stream,
                &self.residual,
                ResidualParams {
                    c: *coeffs,
                    op,
                    g: *grid,
                    cur: *cur,
                    src: *src,
                    sides: self.sides,
                    resid_p,
                    inv_dt,
                    rhs: self.rhs.vars,
                    frozen: self.frozen_args(),
                    delta: self.delta[0].vars,
                    partials,
                    out: *out,
                },
                self.per_node(),
                "implicit_residual",
            )
        )?;

        let rows = self.row_sums.len() / 2;
        let params = RowsParams {
            g: *grid,
            resid_p,
            inv_dt,
            rows: row_sums,
        };
        let warps = FLAT as usize / 32;
        let config = flat(rows.div_ceil(warps) * FLAT as usize);
        launch(stream, &self.rows, params, config, "implicit_rows")?;

        let params = GaugeParams {
            rows: row_sums,
            count: rows as i64,
            gauge,
            sums,
        };
        let one_warp = LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (32, 1, 1),
            shared_mem_bytes: 0,
        };
        launch(stream, &self.gauge_sum, params, one_warp, "implicit_gauge")
    }

    /// Queues the continuity residual's projection with the gauge on the device.
    pub fn queue_project(
        &self,
        stream: &Arc<CudaStream>,
        grid: &GridArgs,
        norms: &Norms,
    ) -> Result<(), BackendError> {
        let ptr = |s: &CudaSlice<u8>| address(s, stream);
        let (resid_p, inv_dt, gauge) = (ptr(&self.resid_p), ptr(&self.inv_dt), ptr(&self.gauge));
        let params = ProjectParams {
            g: *grid,
            resid_p,
            inv_dt,
            gauge,
            rhs_p: self.rhs.vars.v[0],
            partials: norms.partials(stream),
        };
        launch(
            stream,
            &self.project,
            params,
            self.per_node(),
            "implicit_project",
        )
    }

    /// Queues `count` (1 or 2) Jacobi sweeps from increment buffer `from` into the other.
    pub fn queue_sweeps(
        &self,
        stream: &Arc<CudaStream>,
        grid: &GridArgs,
        from: usize,
        count: usize,
    ) -> Result<(), BackendError> {
        let (function, config) = match count {
            2 => (&self.jacobi_twice, self.twice),
            _ => (&self.jacobi, self.per_node()),
        };
        with_op!(
            self.op,
            op => launch(
                stream,
                function,
                SweepParams {
                    op,
                    g: *grid,
                    sides: self.sides,
                    rhs: self.rhs.vars,
                    frozen: self.frozen_args(),
                    old: self.delta[from].vars,
                    out: self.delta[1 - from].vars,
                },
                config,
                "implicit_jacobi",
            )
        )
    }

    /// Queues Q + ΔQ (increment buffer `from`) into `next`, pressure shifted by the value at
    /// device address `given` (0: by the reference node's own).
    pub fn queue_update(
        &self,
        stream: &Arc<CudaStream>,
        cur: &Vars,
        next: &Vars,
        from: usize,
        given: CUdeviceptr,
    ) -> Result<(), BackendError> {
        let params = UpdateParams {
            len: self.layout.len as i64,
            vars: self.equations as i32,
            cur: *cur,
            next: *next,
            delta: self.delta[from].vars,
            p_ref: self.p_ref,
            given,
        };
        let config = flat(self.layout.len);
        launch(stream, &self.update, params, config, "implicit_update")
    }

    /// The per-node kernels' launch.
    fn per_node(&self) -> LaunchConfig {
        LaunchConfig {
            grid_dim: self.grid,
            block_dim: (BLOCK.0, BLOCK.1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Both sets of frozen operator arrays as one kernel argument.
    fn frozen_args(&self) -> FrozenArgs {
        let [f0, f1] = &self.frozen;
        let mut frozen = FrozenArgs { v: [0; FROZEN] };
        frozen.v[..5].copy_from_slice(&f0.vars.v);
        frozen.v[5..].copy_from_slice(&f1.vars.v);
        frozen
    }
}

/// Values of precision `scalar` from their bytes, in f64.
pub(crate) fn values_of(b: &[u8], scalar: Scalar) -> Vec<f64> {
    let chunks = b.chunks_exact(scalar.bytes());
    match scalar {
        Scalar::F32 => chunks
            .map(|c| f32::from_ne_bytes(c.try_into().expect("4 bytes")) as f64)
            .collect(),
        Scalar::F64 => chunks
            .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    }
}

/// The bytes of `values` rounded to precision `scalar`.
pub(crate) fn bytes_of(values: impl Iterator<Item = f64>, scalar: Scalar) -> Vec<u8> {
    let mut b = Vec::new();
    for v in values {
        match scalar {
            Scalar::F32 => b.extend_from_slice(&(v as f32).to_ne_bytes()),
            Scalar::F64 => b.extend_from_slice(&v.to_ne_bytes()),
        }
    }
    b
}

/// Launches `function` with its parameter struct.
pub(crate) fn launch<P: DeviceRepr>(
    stream: &CudaStream,
    function: &CudaFunction,
    params: P,
    config: LaunchConfig,
    name: &str,
) -> Result<(), BackendError> {
    let mut launch = stream.launch_builder(function);
    launch.arg(&params);
    // SAFETY (every launch here): `params` is the kernel's parameter struct; every array holds
    // the layout's nodes and ghosts, the stencils reach two nodes past the interior, and
    // `partials` holds equations × blocks values.
    unsafe { launch.launch(config) }.check(&format!("launching {name}"))?;
    Ok(())
}

/// A flat launch over `n` elements.
pub(crate) fn flat(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(FLAT), 1, 1),
        block_dim: (FLAT, 1, 1),
        shared_mem_bytes: 0,
    }
}
