//! The documentation of every case key: one source for `ferroflow cases show` and the key
//! tables of `docs/cases.md`.
use super::Model;

/// Documentation of one case key. The texts are Markdown as in `docs/cases.md` (code in
/// backticks; a `|` is escaped where the tables need it); `ferroflow cases show` prints them
/// as comments without the backticks. The default is the [`Case::default`](super::Case)
/// value, so it is not repeated here.
#[derive(Debug, Clone, Copy)]
pub struct KeyDoc {
    /// Dotted key, `section.name` (`boundary.<patch>.name` for a patch's keys).
    pub key: &'static str,
    /// TOML type of the value (`float`, `array of integers`, ...).
    pub type_name: &'static str,
    /// Unit (`-` if none).
    pub unit: &'static str,
    /// Allowed values.
    pub allowed: &'static str,
    /// What it sets.
    pub meaning: &'static str,
    /// The physical model the key belongs to (`physics` keys); `None`: every model.
    pub model: Option<Model>,
}

pub(crate) const fn key(
    key: &'static str,
    type_name: &'static str,
    unit: &'static str,
    allowed: &'static str,
    meaning: &'static str,
) -> KeyDoc {
    KeyDoc {
        key,
        type_name,
        unit,
        allowed,
        meaning,
        model: None,
    }
}

const fn of_model(model: Model, doc: KeyDoc) -> KeyDoc {
    KeyDoc {
        model: Some(model),
        ..doc
    }
}

impl KeyDoc {
    /// Section and name (`("mesh", "nodes")`, `("boundary", "<patch>.velocity")`).
    pub fn parts(&self) -> (&'static str, &'static str) {
        self.key.split_once('.').expect("keys are dotted")
    }
}

/// [`KEYS`] a section at a time, in file order.
pub fn key_sections() -> impl Iterator<Item = &'static [KeyDoc]> {
    sections(&KEYS)
}

/// `keys` a section at a time, in their order.
pub fn sections(keys: &'static [KeyDoc]) -> impl Iterator<Item = &'static [KeyDoc]> {
    keys.chunk_by(|a, b| a.parts().0 == b.parts().0)
}

const INCOMPRESSIBLE: Model = Model::Incompressible;
const BOUSSINESQ: Model = Model::Boussinesq;

/// Every key of a case file, in file order.
pub const KEYS: [KeyDoc; 51] = [
    key(
        "case.name",
        "string",
        "-",
        "a plain file name (not `.` or `..`; no `/`, `\\`, `:` or control characters)",
        "Name; the default output directory is `ferroflow-out/<name>/`",
    ),
    key(
        "case.description",
        "string",
        "-",
        "text",
        "One line saying what the case is (shown by `ferroflow cases`)",
    ),
    key(
        "case.solver",
        "string",
        "-",
        "`\"structured\"`, `\"finite-element\"`, `\"finite-volume\"`",
        "Which solver the case is for: `structured`, artificial compressibility on the box \
         grid of these tables; `finite-element`, the edge-based finite elements on \
         tetrahedra; `finite-volume`, the compressible cell-centred finite volumes on mixed \
         meshes; the last two have keys of their own (their tables below)",
    ),
    key(
        "mesh.kind",
        "string",
        "-",
        "`\"box\"`",
        "Mesh kind. `box`: the square (2D) or cube (3D) of side `mesh.length` with uniformly \
         spaced nodes, its sides the boundary patches `xmin`, `xmax`, `ymin`, `ymax` (and \
         `zmin`, `zmax` in 3D)",
    ),
    key("mesh.dim", "integer", "-", "2 or 3", "Space dimensions"),
    key(
        "mesh.nodes",
        "array of integers",
        "-",
        "`mesh.dim` values, each >= 5",
        "Nodes per axis, wall nodes included (uniform spacing L/(n-1))",
    ),
    key(
        "mesh.length",
        "float",
        "m",
        "> 0; 1 with Boussinesq nondimensional inputs",
        "Side L of the square or cube; the length of Re = U L / ν and Ra",
    ),
    key(
        "physics.model",
        "string",
        "-",
        "`\"incompressible\"`, `\"boussinesq\"`",
        "Physical model. `incompressible`: Navier–Stokes at constant density (1) given by its \
         Reynolds number. `boussinesq`: with the energy equation and the buoyancy force \
         −β_T (T − T_ref) g⃗, T_ref the mean of the hottest and the coldest wall. Each model \
         takes only its own keys below",
    ),
    of_model(
        INCOMPRESSIBLE,
        key(
            "physics.reynolds",
            "float",
            "-",
            "> 0",
            "Incompressible: Reynolds number U L / ν, U the speed of the fastest wall (also \
             the reference velocity U_ref of the scheme), L = `mesh.length`; it sets ν",
        ),
    ),
    of_model(
        BOUSSINESQ,
        key(
            "physics.inputs",
            "string",
            "-",
            "`\"nondimensional\"`, `\"dimensional\"`",
            "Boussinesq: physics given by `rayleigh` and `prandtl` (units L, ΔT, α/L; wall \
             temperatures in units of ΔT, spanning 1), or by `gravity`, `expansion`, \
             `viscosity` and `prandtl` in SI units with L = `mesh.length` and ΔT the span of \
             the isothermal walls' temperatures",
        ),
    ),
    of_model(
        BOUSSINESQ,
        key(
            "physics.rayleigh",
            "float",
            "-",
            "> 0",
            "Boussinesq, nondimensional inputs: Rayleigh number Ra = |g| β_T ΔT L³ / (ν α)",
        ),
    ),
    of_model(
        BOUSSINESQ,
        key(
            "physics.prandtl",
            "float",
            "-",
            "> 0",
            "Boussinesq: Prandtl number Pr = ν / α (dimensional inputs: α = ν / Pr)",
        ),
    ),
    of_model(
        BOUSSINESQ,
        key(
            "physics.gravity",
            "array of 3 floats",
            "m/s²",
            "finite, not all zero",
            "Boussinesq: gravity vector g⃗ (the z component does nothing in 2D); \
             nondimensional inputs use its direction only",
        ),
    ),
    of_model(
        BOUSSINESQ,
        key(
            "physics.expansion",
            "float",
            "1/K",
            "> 0",
            "Boussinesq, dimensional inputs: thermal expansion coefficient β_T (the defaults, \
             air with L = 5 cm and ΔT = 7.6009 K, give Ra = 1e5)",
        ),
    ),
    of_model(
        BOUSSINESQ,
        key(
            "physics.viscosity",
            "float",
            "m²/s",
            "> 0",
            "Boussinesq, dimensional inputs: kinematic viscosity ν",
        ),
    ),
    key(
        "boundary.<patch>.kind",
        "string",
        "-",
        "`\"wall\"`",
        "Boundary condition of patch `<patch>` (`xmin` … `zmax`). `wall`: no slip, pressure \
         extrapolated from the interior. Without any `[boundary]` table the model's cavity is \
         set up (incompressible: `ymax` moving with u = 1; Boussinesq: `xmin` at +0.5 and \
         `xmax` at −0.5); patches not listed are adiabatic walls at rest. Where walls meet, a \
         moving wall's velocity and an isothermal wall's temperature win",
    ),
    key(
        "boundary.<patch>.velocity",
        "array of 3 floats",
        "m/s",
        "finite, along the wall (the normal component 0; z 0 in 2D)",
        "Wall velocity",
    ),
    key(
        "boundary.<patch>.thermal",
        "string",
        "-",
        "`\"adiabatic\"`, `\"isothermal\"` (Boussinesq only)",
        "Thermal condition: no heat flux, or the wall held at `temperature`",
    ),
    key(
        "boundary.<patch>.temperature",
        "float",
        "K (nondimensional: ΔT)",
        "finite; set for isothermal walls only",
        "Temperature of an isothermal wall",
    ),
    key(
        "numerics.cfl",
        "float",
        "-",
        "0 < cfl <= 2",
        "Courant number of the local pseudo-time step (convective, viscous and cell-Péclet \
         limits together)",
    ),
    key(
        "numerics.kappa",
        "float",
        "-",
        "> 0",
        "Artificial compressibility scaling: β² = max(|u|², κ U_ref²); U_ref is the fastest \
         wall's speed (incompressible), or the free-fall velocity sqrt(|g| β_T ΔT L) \
         (Boussinesq; the built-in cases use κ = 0.1 there)",
    ),
    key(
        "numerics.c4",
        "float",
        "-",
        "0 <= c4 <= 0.25",
        "Coefficient of the fourth-difference pressure dissipation. Unset: 0.02 (seed 000's) \
         with second-order differences, 0.01 with fourth-order ones",
    ),
    key(
        "numerics.convection",
        "string",
        "-",
        "`\"advective\"`, `\"skew-symmetric\"`",
        "Form of the convective terms (momentum and energy), central differences either way: \
         `advective`, u·∇q (seed 000); `skew-symmetric`, the mean of u·∇q and ∇·(u q), whose \
         2D cavity centrelines at Re = 1000 are 1.4–1.6 times closer to the grid-converged \
         ones on 129² and 257² (BENCHMARKS.md). Both second order",
    ),
    key(
        "numerics.differences",
        "string",
        "-",
        "`\"second-order\"`, `\"fourth-order\"`",
        "Order of the central differences of every derivative (convection, diffusion, \
         pressure gradient, divergence): `second-order`, three points (seed 000); \
         `fourth-order`, five points, the ghost velocities (and temperatures at isothermal \
         walls) beyond a wall extrapolated cubically, the pressure dissipation and the wall \
         pressure as in second order: the 2D cavity's centreline profiles at Re = 1000 are \
         2.9x (129²) and 14–18x (257²) closer to the grid-converged ones (BENCHMARKS.md). With \
         `numerics.convection = \"advective\"`; blocks exchange two layers of every \
         variable",
    ),
    key(
        "numerics.tolerance",
        "float",
        "-",
        "0 < tolerance < 1",
        "Converged when every equation's residual (RMS of its pseudo-time derivative), \
         relative to its first iteration's, is below this",
    ),
    key(
        "numerics.max_iterations",
        "integer",
        "iterations",
        ">= 1",
        "Iteration limit; a run that reaches it ends with status `max-iterations` (exit code 0)",
    ),
    key(
        "numerics.check_interval",
        "integer",
        "iterations",
        ">= 1",
        "Iterations between residual checks: progress, convergence, divergence, checkpoints \
         and snapshots happen at checks",
    ),
    key(
        "numerics.method",
        "string",
        "-",
        "`\"auto\"`, `\"explicit\"`, `\"implicit\"`",
        "How each pseudo-time iteration advances the state: `auto`, `implicit` but on a grid \
         cut into blocks on GPUs `explicit` (the faster there; the resolved case says which); \
         `explicit`, one local pseudo-time \
         step (seed 000's scheme); `implicit`, the delta form A ΔQ = R(Q) with the same \
         residual R, relaxed against a frozen first-order approximation A of its Jacobian \
         (seed 003; on the CPU, or relaxed by Jacobi sweeps on a GPU). On a grid cut into \
         blocks each block relaxes its own nodes and takes its neighbours' increments from the \
         halo exchange after every sweep (Jacobi across blocks; on GPUs through the host, \
         slow). Both methods converge to the same answer",
    ),
    key(
        "numerics.relaxation",
        "string",
        "-",
        "`\"auto\"`, `\"sgs\"`, `\"jacobi\"`, `\"red-black\"`, `\"line\"`",
        "Relaxation of the implicit system (method `implicit`): `auto`, the backend's (`sgs` \
         on the CPU, `jacobi` on a GPU); symmetric Gauss–Seidel \
         (lexicographic; one sweep is LU-SGS), Jacobi, red–black Gauss–Seidel, or Gauss–Seidel \
         along x and Jacobi across (the GPU runs `jacobi`). Every order is fixed by the grid: \
         results do not depend on the thread count. Jacobi and red–black need a finite \
         `implicit_cfl` (no pseudo-time term leaves their checkerboard mode undamped)",
    ),
    key(
        "numerics.sweeps",
        "integer",
        "sweeps",
        ">= 1",
        "Relaxation sweeps per iteration (method `implicit`); a symmetric Gauss–Seidel sweep \
         (forward and backward) counts once, a red–black sweep after the first relaxes one \
         colour more. Unset: the relaxation's default, sgs 4, jacobi 64, red-black 4, line 8",
    ),
    key(
        "numerics.implicit_cfl",
        "float",
        "-",
        "> 0, or `inf`",
        "Pseudo-time step of the implicit operator (method `implicit`) as a multiple of the \
         explicit local step; `inf`: no pseudo-time term. Unset: the relaxation's default, sgs \
         `inf`, jacobi 320, red-black 80, line 80",
    ),
    key(
        "numerics.implicit_precision",
        "string",
        "-",
        "`\"f32\"`, `\"f64\"`",
        "Precision of the implicit operator and its relaxation (method `implicit`); the \
         residual and the state keep `backend.precision`, so the converged answer does not \
         depend on it",
    ),
    key(
        "numerics.multigrid",
        "integer",
        "levels",
        ">= 1",
        "Most grid levels of the multigrid cycle (full-approximation scheme), the \
         finest included: each coarser level takes every other node while every axis has an \
         even number of intervals and keeps at least 9 nodes, and run.log says which levels \
         are used. An iteration is then one cycle. 1: one grid. Method `implicit` (the \
         explicit step does not smooth enough), on the CPU or one GPU (every level and \
         transfer on the device). On the CPU the grid may be cut into blocks (`[parallel]`, \
         in one process or over MPI processes): every level is cut into the same blocks, \
         before nodes the coarsest level keeps, and the levels stop where a block would own \
         fewer than 3 nodes along an axis",
    ),
    key(
        "numerics.multigrid_sweeps",
        "array of integers",
        "iterations",
        "`[pre, post, coarsest]`, pre + post >= 1, coarsest >= 1",
        "Iterations of the method on each level before and after its coarse-grid correction, \
         and on the coarsest level",
    ),
    key(
        "numerics.multigrid_cycle",
        "string",
        "-",
        "`\"v\"`, `\"w\"`",
        "Multigrid cycle shape: each coarser level corrected once (V) or twice (W) per visit \
         of the level above. At Re = 1000 V needed 1.7–2.2 times as many cycles as W from \
         257² up (1.2–1.3 times the time), at Re = 100 as many (a W-cycle costs about 1.5 \
         V-cycles on the CPU); W diverged where V converged (bdc2d at Ra = 1e6 on 129²). On \
         a GPU a W-cycle's many visits of the small coarse levels cost launches, not \
         arithmetic: 13 times V's time on the 2049² cavity at Re = 1000",
    ),
    key(
        "numerics.multigrid_fmg",
        "boolean",
        "-",
        "`true`, `false`",
        "Start by full multigrid: the coarsest level's problem solved first, its answer \
         interpolated to the next finer level and improved by one cycle there, up to the \
         finest grid. Not on a restart (its state is kept)",
    ),
    key(
        "backend.kind",
        "string",
        "-",
        "`\"cpu\"`, `\"cuda\"`, `\"auto\"`",
        "Compute backend. `auto` takes a GPU if one is usable, else the CPU, and says which in \
         the log. `cuda` fails (exit code 2) with the reason when no GPU backend is usable; \
         `ferroflow info` tells",
    ),
    key(
        "backend.precision",
        "string",
        "-",
        "`\"f64\"`, `\"f32\"`",
        "Floating-point precision of the state and the arithmetic",
    ),
    key(
        "backend.threads",
        "integer",
        "-",
        ">= 0",
        "CPU threads, 0 = all cores. Results are bitwise the same for any thread count",
    ),
    key(
        "backend.device",
        "integer",
        "-",
        ">= 0",
        "CUDA device ordinal (`ferroflow info` lists the devices)",
    ),
    key(
        "backend.tune",
        "boolean",
        "-",
        "`true`, `false`",
        "Time the candidate CUDA launch shapes for this grid and precision at start and take \
         the fastest; the choice is cached on disk (`FERROFLOW_CUDA_CACHE_DIR`, keyed by \
         device, grid, precision and kernel source), so later runs skip the search. `false` \
         (or `--no-tune`) uses the default shape 32x4x1",
    ),
    key(
        "backend.fmad",
        "boolean",
        "-",
        "`true`, `false`",
        "Let the CUDA compiler fuse multiplies and adds (one rounding instead of two): fewer \
         floating-point instructions, so a faster f64 kernel where arithmetic limits it, but \
         the GPU no longer matches the CPU backend bit for bit (the default `false` does, in \
         f64; with `true` the tests check agreement within 1e-10 after 1000 iterations). \
         `ferroflow bench --fmad` measures it",
    ),
    key(
        "output.checkpoint_interval",
        "integer",
        "iterations",
        ">= 0",
        "Iterations between checkpoints (`checkpoint.ffcp`), taken at the first residual check \
         after each interval; 0 = only at the end and when interrupted",
    ),
    key(
        "output.field_interval",
        "integer",
        "iterations",
        ">= 0",
        "Iterations between field snapshots `fields_<iteration>.vti`, listed with the final \
         `fields.vti` in `fields.pvd`; 0 = final fields only",
    ),
    key(
        "output.compress",
        "boolean",
        "-",
        "`true`, `false`",
        "Compress the arrays of `fields.vti` and the snapshots with zlib, in blocks of 32 KiB \
         (VTK's `vtkZLibDataCompressor`, which ParaView, VisIt and VTK read); `false` writes \
         them as raw binary",
    ),
    key(
        "parallel.blocks",
        "array of integers",
        "-",
        "`[]`, or `mesh.dim` values >= 1 with every block owning >= 3 nodes per axis",
        "Blocks per axis. `[]`: `parallel.count` blocks, cut with the least interface area \
         (ties: more cuts along z, then y, whose faces are contiguous in memory)",
    ),
    key(
        "parallel.count",
        "integer",
        "-",
        ">= 0; under MPI at least the number of processes",
        "Number of blocks when `parallel.blocks` is `[]`; 0 = one block, or under MPI one per \
         process. With `parallel.blocks`, 0 or their product",
    ),
    key(
        "parallel.devices",
        "array of integers",
        "-",
        "GPU ordinals",
        "GPUs the CUDA blocks are spread over, block b on `devices[b % length]`; \
         `[]` = `[backend.device]`, or under MPI each process's blocks on GPU (its number \
         among the processes of its machine) modulo (the GPUs there)",
    ),
    key(
        "parallel.exchange",
        "string",
        "-",
        "`\"peer\"`, `\"host\"`",
        "How halos travel between GPU blocks: device to device (`peer`), or staged through \
         host memory (`host`). Between MPI processes `peer` goes GPU to GPU through memory the \
         processes of one machine share, else by MPI (from GPU memory where it is CUDA-aware); \
         `host` by MPI through pinned host memory",
    ),
    key(
        "parallel.packing",
        "boolean",
        "-",
        "`true`, `false`",
        "GPU blocks: pack faces into contiguous buffers on the device; `false` copies them as \
         strided boxes (faster unless x is cut: BENCHMARKS.md)",
    ),
    key(
        "parallel.overlap",
        "boolean",
        "-",
        "`true`, `false`",
        "Compute the interior nodes of each block while its halos travel",
    ),
];
