//! The host side of each kernel: launch shapes, `#[repr(C)]` mirrors of the structs of
//! kernels/grid.cuh, and one type per kernel that knows its launch configuration and fills its
//! one parameter struct (`StepParams`, `WallParams`, `HaloParams`: each the kernel's struct of
//! the same name, field for field, which tests/mirror.rs checks).
use crate::{Coefficients, Problem, SideBc};
use ferroflow_core::{BackendError, Layout, Real, Side};
use ferroflow_cuda::cudarc::driver::sys::CUdeviceptr;
use ferroflow_cuda::cudarc::driver::{
    CudaFunction, CudaStream, DeviceRepr, LaunchConfig, PushKernelArg,
};
use ferroflow_cuda::Check;
use serde::{Deserialize, Serialize};
use std::fmt;

/// Threads per block of `fill_walls` (any size works; it only sets the grid).
const BOUNDARY_THREADS: u32 = 128;

/// Thread-block shape of `ac_step`, and how many consecutive nodes along the last axis (j in
/// 2D, k in 3D) one thread updates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LaunchShape {
    /// Threads per block along x, y, z (z is 1 in 2D).
    pub block: [u32; 3],
    /// Consecutive nodes per thread along the last axis, which the thread marches up keeping
    /// the values along it in registers (`MARCH` in ac_step.cu). Caches written before 2D
    /// threads marched call it `k_per_thread`.
    #[serde(alias = "k_per_thread")]
    pub march: u32,
    /// The block keeps the k-plane it is at in shared memory (`TILE` in ac_step.cu; 3D, one
    /// node deep along z).
    #[serde(default)]
    pub tile: bool,
    /// Thread blocks each SM must be able to hold at once (`MIN_BLOCKS` in ac_step.cu, the
    /// second bound of `__launch_bounds__`): the compiler caps the registers per thread to fit
    /// them, trading spills for warps that hide latency. 0: no cap.
    #[serde(default)]
    pub min_blocks: u32,
}

impl LaunchShape {
    /// A shape of `block` threads, each updating `march` nodes along the last axis.
    pub const fn new(block: [u32; 3], march: u32) -> LaunchShape {
        LaunchShape {
            block,
            march,
            tile: false,
            min_blocks: 0,
        }
    }

    /// This shape with at least `min_blocks` blocks per SM.
    pub const fn with_min_blocks(self, min_blocks: u32) -> LaunchShape {
        LaunchShape { min_blocks, ..self }
    }

    /// A 3D shape of `block` threads in a plane, marching `march` planes up k with the plane
    /// in shared memory.
    pub const fn tiled(block: [u32; 2], march: u32) -> LaunchShape {
        LaunchShape {
            block: [block[0], block[1], 1],
            march,
            tile: true,
            min_blocks: 0,
        }
    }

    /// Threads per block.
    pub fn threads(&self) -> u32 {
        self.block.iter().product()
    }

    /// Blocks per axis covering the interior nodes of `layout`.
    pub(crate) fn grid(&self, layout: &Layout) -> Result<(u32, u32, u32), BackendError> {
        self.grid_for(&NodeBox::interior(layout), layout)
    }

    /// Blocks per axis covering the box `region` of `layout`.
    pub(crate) fn grid_for(
        &self,
        region: &NodeBox,
        layout: &Layout,
    ) -> Result<(u32, u32, u32), BackendError> {
        let mut per_block = self.block;
        per_block[layout.dim - 1] *= self.march;
        let blocks = [0, 1, 2].map(|d| {
            let nodes = (region.hi[d] - region.lo[d]).max(0) as usize;
            nodes.div_ceil(per_block[d] as usize)
        });
        // CUDA's limits on grid dimensions.
        if blocks[0] > i32::MAX as usize || blocks[1] > 65535 || blocks[2] > 65535 {
            return Err(BackendError::NotSuitable {
                backend: "cuda",
                what: format!(
                    "a {:?}-node grid with launch shape {self} ({blocks:?} blocks)",
                    layout.n
                ),
            });
        }
        Ok((blocks[0] as u32, blocks[1] as u32, blocks[2] as u32))
    }
}

/// A box of nodes `[lo, hi)` per axis (`Region` in ac_step.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct NodeBox {
    pub lo: [i64; 3],
    pub hi: [i64; 3],
}

impl NodeBox {
    /// The core's box of nodes (a face's halo or send layers).
    pub fn of(r: &ferroflow_core::decomposition::Region) -> NodeBox {
        NodeBox {
            lo: r.map(|(lo, _)| lo as i64),
            hi: r.map(|(_, hi)| hi as i64),
        }
    }

    /// Every interior node of `layout` (an inactive axis spans its single node).
    pub fn interior(layout: &Layout) -> NodeBox {
        let mut r = NodeBox {
            lo: [0; 3],
            hi: [1; 3],
        };
        for d in 0..layout.dim {
            r.lo[d] = 1;
            r.hi[d] = layout.n[d] as i64 - 1;
        }
        r
    }

    /// Whether the box holds no node.
    pub fn is_empty(&self) -> bool {
        (0..3).any(|d| self.hi[d] <= self.lo[d])
    }
}

// SAFETY: a C struct of integers.
unsafe impl DeviceRepr for NodeBox {}

impl fmt::Display for LaunchShape {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let [x, y, z] = self.block;
        write!(f, "{x}x{y}x{z}")?;
        if self.march > 1 {
            write!(f, " m{}", self.march)?;
        }
        if self.tile {
            write!(f, " tile")?;
        }
        if self.min_blocks > 0 {
            write!(f, " b{}", self.min_blocks)?;
        }
        Ok(())
    }
}

/// A block's layout as the kernels see it (`Grid` in prelude.cuh).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct GridArgs {
    n: [i64; 3],
    stride: [i64; 3],
    origin: i64,
}

impl GridArgs {
    pub fn new<R: Real>(problem: &Problem<R>) -> GridArgs {
        let l = problem.layout;
        GridArgs {
            n: l.n.map(|x| x as i64),
            stride: l.stride.map(|x| x as i64),
            origin: l.index(0, 0, 0) as i64,
        }
    }
}

// SAFETY: a C struct of integers.
unsafe impl DeviceRepr for GridArgs {}

/// Most variables of a state (p, u, v, w, T).
pub(crate) const MAX_VARS: usize = 5;

/// Device pointers to the variables of one state (`Vars` in prelude.cuh); unused ones are 0.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Vars {
    pub v: [CUdeviceptr; MAX_VARS],
}

// SAFETY: a C struct of device pointers.
unsafe impl DeviceRepr for Vars {}

/// The arguments of `ac_step` that stay the same for a whole run.
pub(crate) struct StepArgs<R> {
    /// Per-run constants of the update (`Coeffs` in ac_residual.cuh).
    pub coeffs: Coefficients<R>,
    pub grid: GridArgs,
    pub src: Vars,
    /// Per-block residual sums, `equations × blocks` f64 (0 while tuning: norms are off).
    pub partials: CUdeviceptr,
    /// The x walls a launch over all interior nodes fills itself where the shape allows
    /// (`x_walls` in ac_step.cu; `BoundaryKernel::x_walls`).
    pub x_walls: i32,
}

/// The parameters of `ac_step` (`StepParams` in ac_step.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct StepParams<R> {
    c: Coefficients<R>,
    g: GridArgs,
    cur: Vars,
    next: Vars,
    src: Vars,
    r: NodeBox,
    shift: CUdeviceptr,
    partials: CUdeviceptr,
    norms: i32,
    x_walls: i32,
}

// SAFETY: a C struct of `R` (f32 or f64 only: `Scalar::of`), integers and device pointers.
unsafe impl<R: Real> DeviceRepr for StepParams<R> {}

/// One `ac_step` entry point compiled for one launch shape, for one layout.
pub(crate) struct StepKernel {
    function: CudaFunction,
    pub shape: LaunchShape,
    layout: Layout,
    /// The grid over all interior nodes.
    grid: (u32, u32, u32),
    /// The x walls this shape can fill in a launch over all interior nodes (bits of
    /// `x_walls`).
    x_walls: i32,
}

impl StepKernel {
    pub fn new(
        function: CudaFunction,
        shape: LaunchShape,
        layout: &Layout,
    ) -> Result<StepKernel, BackendError> {
        Ok(StepKernel {
            function,
            shape,
            layout: *layout,
            grid: shape.grid(layout)?,
            x_walls: x_walls_within_warps(&shape, layout),
        })
    }

    /// Thread blocks of a launch over all interior nodes (= partial sums per equation).
    pub fn blocks(&self) -> usize {
        let (x, y, z) = self.grid;
        x as usize * y as usize * z as usize
    }

    /// One fused pass from `cur` into `next` over `region` (None: every interior node), with
    /// the pressure shift read from device address `shift`; with `norms` (whole grid only),
    /// per-block residual sums too. Returns the x walls of `next` it filled (bits of
    /// `x_walls`, for `BoundaryKernel::launch` to skip): over all interior nodes, those of
    /// `args.x_walls` that this shape can fill.
    #[allow(clippy::too_many_arguments)]
    pub fn launch<R: Real>(
        &self,
        stream: &CudaStream,
        args: &StepArgs<R>,
        cur: &Vars,
        next: &Vars,
        region: Option<&NodeBox>,
        shift: CUdeviceptr,
        norms: bool,
    ) -> Result<i32, BackendError> {
        let interior = NodeBox::interior(&self.layout);
        let (region, grid_dim, x_walls) = match region {
            Some(r) => (*r, self.shape.grid_for(r, &self.layout)?, 0),
            None => (interior, self.grid, fusable(args.x_walls, self.x_walls)),
        };
        debug_assert!(!norms || region == interior);
        let b = self.shape.block;
        let config = LaunchConfig {
            grid_dim,
            block_dim: (b[0], b[1], b[2]),
            shared_mem_bytes: 0,
        };
        let params = StepParams {
            c: args.coeffs,
            g: args.grid,
            cur: *cur,
            next: *next,
            src: args.src,
            r: region,
            shift,
            partials: args.partials,
            norms: norms as i32,
            x_walls,
        };
        let mut launch = stream.launch_builder(&self.function);
        launch.arg(&params);
        // SAFETY: the parameters are ac_step's; the region lies within the interior nodes, whose stencils stay inside the arrays (two ghost layers);
        // `shift` is a device address of one value; `partials` holds equations × blocks
        // values when norms are on; the x walls and their ghosts lie inside the arrays.
        unsafe { launch.launch(config) }.check("launching ac_step")?;
        Ok(x_walls)
    }
}

/// The x walls (bits of `x_walls`) a tiled `shape` fills, those whose three nodes inside share
/// a warp: the low wall's are the first lanes of the first blocks' warps; the last interior
/// node must be lane 2 or later of its warp. Other shapes fill none.
fn x_walls_within_warps(shape: &LaunchShape, layout: &Layout) -> i32 {
    let last = (layout.n[0] - 3) % shape.block[0] as usize;
    if !shape.tile {
        0
    } else if last % 32 >= 2 {
        1 | 2 | 4 | 8
    } else {
        1 | 4
    }
}

/// The walls of `wanted` (bits 0, 1: low, high side; 2, 3: T adiabatic there) that a kernel
/// able to fill `able` fills: a side's T bit goes with its wall bit.
fn fusable(wanted: i32, able: i32) -> i32 {
    let sides = wanted & able & 3;
    sides | (wanted & (sides << 2))
}

/// One `fill_walls` launch: the wall sides of one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WallFill {
    axis: i32,
    /// Bit 0: the low side is a wall; bit 1: the high side.
    walls: i32,
    /// The same bits for adiabatic walls (T extrapolated with zero gradient).
    adiabatic: i32,
    /// First index and count along the tangential axes (`WallFace::tangential`).
    lo: [i64; 2],
    count: [i64; 2],
}

/// The launches equivalent to ferroflow-cpu's `fill_boundaries`: axes in x, y, z order, over
/// the face nodes of `Layout::wall_face`.
pub(crate) fn wall_fills(layout: &Layout, sides: &[SideBc; 6]) -> Vec<WallFill> {
    let mut fills = Vec::new();
    for a in 0..layout.dim {
        let (mut walls, mut adiabatic) = (0, 0);
        for high in 0..2 {
            match sides[2 * a + high] {
                SideBc::Wall => walls |= 1 << high,
                SideBc::AdiabaticWall => {
                    walls |= 1 << high;
                    adiabatic |= 1 << high;
                }
                // A halo: filled by the exchange with the neighbouring block.
                SideBc::Interface => {}
            }
        }
        if walls == 0 {
            continue;
        }
        // Both sides of an axis share the ranges.
        let face = layout.wall_face(Side::ALL[2 * a]);
        let [r1, r2] = face.ranges.map(|(lo, hi)| (lo as i64, (hi - lo) as i64));
        fills.push(WallFill {
            axis: a as i32,
            walls,
            adiabatic,
            lo: [r1.0, r2.0],
            count: [r1.1, r2.1],
        });
    }
    fills
}

/// The parameters of `fill_walls` (`WallParams` in boundary.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct WallParams {
    p: CUdeviceptr,
    t: CUdeviceptr,
    u: [CUdeviceptr; 3],
    cubic_t: i32,
    g: GridArgs,
    axis: i32,
    walls: i32,
    adiabatic: i32,
    lo1: i64,
    count1: i64,
    lo2: i64,
    count2: i64,
}

// SAFETY: a C struct of device pointers and integers.
unsafe impl DeviceRepr for WallParams {}

/// `fill_walls` with the launches of one problem.
pub(crate) struct BoundaryKernel {
    function: CudaFunction,
    fills: Vec<WallFill>,
    /// Index of T, if the energy equation is solved.
    temperature: Option<usize>,
    /// Fourth-order differences: the ghosts of the velocity (and of T at isothermal walls)
    /// are extrapolated too.
    fourth: bool,
    /// Velocity components.
    dim: usize,
}

impl BoundaryKernel {
    pub fn new<R: Real>(function: CudaFunction, problem: &Problem<R>) -> BoundaryKernel {
        BoundaryKernel {
            function,
            fills: wall_fills(&problem.layout, &problem.sides),
            temperature: problem.temperature(),
            fourth: problem.numerics.differences == crate::Differences::Fourth,
            dim: problem.layout.dim,
        }
    }

    /// The x walls of this problem (`x_walls` bits in ac_step.cu: walls, adiabatic walls
    /// shifted by 2), which the interior pass may fill instead (not with fourth-order
    /// differences, whose velocity ghosts it does not fill).
    pub fn x_walls(&self) -> i32 {
        if self.fourth {
            return 0;
        }
        self.fills
            .iter()
            .find(|f| f.axis == 0)
            .map_or(0, |f| f.walls | f.adiabatic << 2)
    }

    /// Fills the wall nodes and ghosts of the state `vars` (pressure, T at adiabatic walls,
    /// with fourth-order differences the velocity ghosts and T's at isothermal walls), one
    /// launch per axis (stream order keeps x before y before z), except the x walls in `done`
    /// (bits of `x_walls`: the interior pass filled them).
    pub fn launch(
        &self,
        stream: &CudaStream,
        vars: &Vars,
        grid: &GridArgs,
        done: i32,
    ) -> Result<(), BackendError> {
        let t: CUdeviceptr = self.temperature.map_or(0, |t| vars.v[t]);
        let u: [CUdeviceptr; 3] = std::array::from_fn(|d| {
            if self.fourth && d < self.dim {
                vars.v[1 + d]
            } else {
                0
            }
        });
        for fill in &self.fills {
            let walls = if fill.axis == 0 {
                fill.walls & !done
            } else {
                fill.walls
            };
            if walls == 0 {
                continue;
            }
            let faces = (fill.count[0] * fill.count[1]) as u32;
            let config = LaunchConfig {
                grid_dim: (faces.div_ceil(BOUNDARY_THREADS), 2, 1),
                block_dim: (BOUNDARY_THREADS, 1, 1),
                shared_mem_bytes: 0,
            };
            let params = WallParams {
                p: vars.v[0],
                t,
                u,
                cubic_t: self.fourth as i32,
                g: *grid,
                axis: fill.axis,
                walls,
                adiabatic: fill.adiabatic,
                lo1: fill.lo[0],
                count1: fill.count[0],
                lo2: fill.lo[1],
                count2: fill.count[1],
            };
            let mut launch = stream.launch_builder(&self.function);
            launch.arg(&params);
            // SAFETY: the parameters are fill_walls'; the face ranges and the three layers
            // beyond each wall node lie inside the arrays; `t` is null or T's array, `u` null
            // or the velocity's arrays.
            unsafe { launch.launch(config) }.check("launching fill_walls")?;
        }
        Ok(())
    }
}

/// The parameters of `halo_box` (`HaloParams` in boundary.cu).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HaloParams {
    array: CUdeviceptr,
    buf: CUdeviceptr,
    g: GridArgs,
    lo0: i64,
    lo1: i64,
    lo2: i64,
    c0: i64,
    c1: i64,
    c2: i64,
    unpack: i32,
}

// SAFETY: a C struct of device pointers and integers.
unsafe impl DeviceRepr for HaloParams {}

/// `halo_box`: packs the faces of a decomposed grid's blocks into buffers and back.
pub(crate) struct HaloKernel {
    pub function: CudaFunction,
}

impl HaloKernel {
    /// Copies the box `region` of the array at `array` into the packed buffer at `buf`, or
    /// back with `unpack`.
    pub fn launch(
        &self,
        stream: &CudaStream,
        array: CUdeviceptr,
        buf: CUdeviceptr,
        grid: &GridArgs,
        region: &NodeBox,
        unpack: bool,
    ) -> Result<(), BackendError> {
        let count = [0, 1, 2].map(|d| region.hi[d] - region.lo[d]);
        let nodes = (count[0] * count[1] * count[2]) as u32;
        let config = LaunchConfig {
            grid_dim: (nodes.div_ceil(BOUNDARY_THREADS), 1, 1),
            block_dim: (BOUNDARY_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        let params = HaloParams {
            array,
            buf,
            g: *grid,
            lo0: region.lo[0],
            lo1: region.lo[1],
            lo2: region.lo[2],
            c0: count[0],
            c1: count[1],
            c2: count[2],
            unpack: unpack as i32,
        };
        let mut launch = stream.launch_builder(&self.function);
        launch.arg(&params);
        // SAFETY: the parameters are halo_box's; the box lies
        // inside the array's nodes and ghosts, and `buf` holds at least its node count.
        unsafe { launch.launch(config) }.check("launching halo_box")?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_cover_the_interior() {
        let l = Layout::new(3, [35, 29, 23]);
        let s = LaunchShape::new([32, 4, 1], 2);
        assert_eq!(s.grid(&l).unwrap(), (2, 7, 11));
        assert_eq!(s.to_string(), "32x4x1 m2");
        let flat = Layout::new(2, [67, 53, 0]);
        assert_eq!(
            LaunchShape::new([64, 2, 1], 1).grid(&flat).unwrap(),
            (2, 26, 1)
        );
        // In 2D a thread marches along j.
        assert_eq!(
            LaunchShape::new([64, 2, 1], 4).grid(&flat).unwrap(),
            (2, 7, 1)
        );
    }

    #[test]
    fn argument_structs_have_the_c_layout() {
        assert_eq!(std::mem::size_of::<GridArgs>(), 7 * 8);
        assert_eq!(std::mem::size_of::<NodeBox>(), 6 * 8);
        assert_eq!(std::mem::size_of::<Vars>(), 5 * 8);
        assert_eq!(std::mem::size_of::<Coefficients<f32>>(), 24 * 4);
        assert_eq!(std::mem::size_of::<Coefficients<f64>>(), 24 * 8);
        // Three ints, then 8-byte integers: padded after the third int, as in C.
        assert_eq!(
            std::mem::size_of::<WallParams>(),
            2 * 8 + 3 * 8 + 8 + 7 * 8 + 16 + 4 * 8
        );
        assert_eq!(
            std::mem::size_of::<StepParams<f64>>(),
            24 * 8 + 7 * 8 + 3 * 5 * 8 + 6 * 8 + 2 * 8 + 2 * 4
        );
    }

    /// Runs the fills on the host the way fill_walls indexes them (T is variable `t`; with
    /// `fourth`, the velocity ghosts and T's at isothermal walls cubically).
    fn emulate_fill_walls(
        fields: &mut ferroflow_core::Fields<f64>,
        sides: &[SideBc; 6],
        t: usize,
        fourth: bool,
    ) {
        let l = fields.layout;
        for fill in wall_fills(&l, sides) {
            let a = fill.axis as usize;
            for side in 0..2 {
                if (fill.walls >> side) & 1 == 0 {
                    continue;
                }
                for f in 0..fill.count[0] * fill.count[1] {
                    let mut ijk = [0i64; 3];
                    ijk[a] = if side == 1 { l.n[a] as i64 - 1 } else { 0 };
                    let [t1, t2] = l.wall_face(Side::ALL[2 * a]).tangential;
                    ijk[t1] = fill.lo[0] + f % fill.count[0];
                    ijk[t2] = fill.lo[1] + f / fill.count[0];
                    let o = l.index(ijk[0] as isize, ijk[1] as isize, ijk[2] as isize) as i64;
                    let inward = if side == 1 { -1 } else { 1 } * l.stride[a] as i64;
                    let p = &mut fields.vars[0];
                    for layer in 0..=ferroflow_core::GHOST as i64 {
                        let w = o - layer * inward;
                        let at = |k: i64| p[(w + k * inward) as usize];
                        p[w as usize] = 3.0 * (at(1) - at(2)) + at(3);
                    }
                    let mirrored = (fill.adiabatic >> side) & 1 == 1;
                    if mirrored {
                        let t = &mut fields.vars[t];
                        let at = |k: i64| t[(o + k * inward) as usize];
                        t[o as usize] = (4.0 * at(1) - at(2)) / 3.0;
                        for layer in 1..=ferroflow_core::GHOST as i64 {
                            t[(o - layer * inward) as usize] = t[(o + layer * inward) as usize];
                        }
                    }
                    let cubic = (1..fields.vars.len()).filter(|&v| fourth && !(mirrored && v == t));
                    for v in cubic {
                        let q = &mut fields.vars[v];
                        for layer in 1..=ferroflow_core::GHOST as i64 {
                            let w = o - layer * inward;
                            let at = |k: i64| q[(w + k * inward) as usize];
                            q[w as usize] = 4.0 * (at(1) + at(3)) - 6.0 * at(2) - at(4);
                        }
                    }
                }
            }
        }
    }

    /// A box with walls on every side, or (`heated`) with the energy equation and adiabatic
    /// walls across y, filled with values that differ at every node, with differences of
    /// fourth order or second.
    fn walled_box(dim: usize, n: [usize; 3], heated: bool, fourth: bool) -> crate::Problem<f64> {
        let layout = Layout::new(dim, n);
        let vars = 1 + dim + heated as usize;
        let mut initial = ferroflow_core::Fields::zeros(layout, vars);
        let mut x = 0.3f64;
        for v in initial.vars.iter_mut() {
            for value in v.iter_mut() {
                x = (x * 3.7 + 0.11).fract();
                *value = x - 0.5;
            }
        }
        let numerics = crate::Numerics {
            cfl: 0.5,
            differences: if fourth {
                crate::Differences::Fourth
            } else {
                crate::Differences::Second
            },
            ..crate::Numerics::default()
        };
        let physics = crate::Physics {
            viscosity: 0.01,
            density: 1.0,
        };
        let problem = crate::Problem::new(layout, [1.0; 3], physics, numerics, initial).unwrap();
        if !heated {
            return problem;
        }
        let energy = crate::Energy {
            diffusivity: 0.01,
            buoyancy: [0.0, -1.0, 0.0],
            t_ref: 0.0,
        };
        let mut problem = problem.with_energy(energy).unwrap();
        problem.sides[2] = SideBc::AdiabaticWall;
        problem.sides[3] = SideBc::AdiabaticWall;
        problem
    }

    #[test]
    fn wall_fills_reproduce_the_cpu_boundaries_bitwise() {
        use ferroflow_core::Backend;
        for (dim, n) in [(2, [9, 7, 1]), (3, [7, 6, 8])] {
            for (heated, fourth) in [(false, false), (true, false), (false, true), (true, true)] {
                let problem = walled_box(dim, n, heated, fourth);
                let mut cpu = crate::cpu::CpuBackend::new(&problem, 1).unwrap();
                let expected = cpu.download().unwrap();
                let mut ours = problem.initial.clone();
                emulate_fill_walls(&mut ours, &problem.sides, 1 + dim, fourth);
                assert!(
                    ours == expected,
                    "{dim}D wall fill (heated {heated}, fourth {fourth}) differs from the CPU"
                );
            }
        }
    }

    #[test]
    fn x_walls_are_fused_where_their_nodes_share_a_warp() {
        let l = |n0| Layout::new(3, [n0, 9, 9]);
        let s = |x| LaunchShape::tiled([x, 4], 16);
        assert_eq!(
            x_walls_within_warps(&LaunchShape::new([32, 4, 1], 1), &l(37)),
            0
        );
        // Last interior node i = n0 - 2, at offset n0 - 3 from the first.
        assert_eq!(x_walls_within_warps(&s(32), &l(37)), 15);
        assert_eq!(x_walls_within_warps(&s(32), &l(36)), 5);
        assert_eq!(x_walls_within_warps(&s(32), &l(35)), 5);
        assert_eq!(x_walls_within_warps(&s(16), &l(21)), 15);
        assert_eq!(x_walls_within_warps(&s(64), &l(36)), 5);
        assert_eq!(x_walls_within_warps(&s(64), &l(37)), 15);
        assert_eq!(fusable(1 | 2 | 8, 15), 1 | 2 | 8);
        assert_eq!(fusable(1 | 2 | 4 | 8, 5), 1 | 4);
        assert_eq!(fusable(2 | 8, 5), 0);
    }

    #[test]
    fn wall_fills_follow_the_cpu_ranges() {
        let l = Layout::new(3, [6, 7, 8]);
        let f = wall_fills(&l, &[SideBc::Wall; 6]);
        // x: y and z span their interior; y: x with ghosts, z interior; z: x and y with ghosts.
        assert_eq!(f[0].lo, [1, 1]);
        assert_eq!(f[0].count, [5, 6]);
        assert_eq!(f[1].lo, [-2, 1]);
        assert_eq!(f[1].count, [10, 6]);
        assert_eq!(f[2].lo, [-2, -2]);
        assert_eq!(f[2].count, [10, 11]);
        let f2 = wall_fills(&Layout::new(2, [6, 7, 0]), &[SideBc::Wall; 6]);
        assert_eq!(f2.len(), 2);
        assert_eq!((f2[0].lo, f2[0].count), ([1, 0], [5, 1]));
        assert_eq!((f2[1].lo, f2[1].count), ([-2, 0], [10, 1]));
    }
}
