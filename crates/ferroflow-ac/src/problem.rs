use ferroflow_core::{Fields, Layout, ProblemError, Real, MIN_NODES};
use rayon::prelude::*;
use std::sync::Arc;

/// Fluid properties.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Physics {
    /// Kinematic viscosity ν (m²/s).
    pub viscosity: f64,
    /// Density ρ (kg/m³).
    pub density: f64,
}

/// Parameters of the artificial-compressibility pseudo-time scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Numerics {
    /// Courant number of the local pseudo-time step (convective and viscous limits together).
    pub cfl: f64,
    /// Artificial compressibility scaling κ: β² = max(|u|², κ U_ref²).
    pub kappa: f64,
    /// Reference velocity U_ref (m/s).
    pub u_ref: f64,
    /// Coefficient C4 of the fourth-difference pressure dissipation.
    pub c4: f64,
    /// Form of the convective terms.
    pub convection: Convection,
    /// Order of the central differences.
    pub differences: Differences,
    /// How each pseudo-time iteration advances the state.
    pub method: Method,
    /// Multigrid: one iteration is then a cycle over the levels (see [`crate::multigrid`]).
    pub multigrid: Multigrid,
}

/// Form of the convective terms `u·∇q` (momentum and energy), by central differences; every
/// form is second order and they agree as the grid is refined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Convection {
    /// `u_d ∂q/∂x_d` (seed 000).
    Advective,
    /// The mean of the advective form and the divergence form `∂(u_d q)/∂x_d`: the 2D cavity's
    /// centreline profiles are 1.4–1.6 times closer to the grid-converged ones at Re = 1000 on
    /// 129² and 257² (BENCHMARKS.md).
    SkewSymmetric,
}

impl Convection {
    /// Weight of the divergence form (the rest is the advective form's).
    pub fn divergence_weight(self) -> f64 {
        match self {
            Convection::Advective => 0.0,
            Convection::SkewSymmetric => 0.5,
        }
    }
}

/// Order of the central differences of every first and second derivative (convection,
/// diffusion, pressure gradient, divergence); the pressure dissipation and the walls' closures
/// are the same in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Differences {
    /// Three-point differences (seed 000).
    Second,
    /// Five-point differences, the ghost velocities and temperatures beyond a wall extrapolated
    /// cubically: the 2D cavity's centreline profiles at Re = 1000 are 2.9x (129²) and 14–18x
    /// (257²) closer to the grid-converged ones (BENCHMARKS.md). Not with skew-symmetric
    /// convection.
    Fourth,
}

/// How often a multigrid cycle visits each coarser level per visit of the finer one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CycleShape {
    /// Once.
    V,
    /// Twice.
    W,
}

impl CycleShape {
    /// Visits of the next coarser level per visit of a level.
    pub fn visits(self) -> usize {
        match self {
            CycleShape::V => 1,
            CycleShape::W => 2,
        }
    }
}

/// The multigrid cycle ([`crate::multigrid::Fas`]) over at most `levels` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Multigrid {
    /// Most levels, the finest included: 1 is one grid (no multigrid).
    pub levels: usize,
    /// V- or W-cycle.
    pub shape: CycleShape,
    /// A full-multigrid start: the coarsest level's problem converged first, its answer
    /// interpolated to the next finer level and improved by one cycle there, and so on up.
    pub fmg: bool,
    /// Iterations on each level before its coarse-grid correction.
    pub pre: usize,
    /// Iterations on each level after it.
    pub post: usize,
    /// Iterations on the coarsest level.
    pub coarsest: usize,
}

impl Default for Multigrid {
    /// One grid; once levels are asked for, V(1, 1) cycles with 8 iterations on the coarsest
    /// level after a full-multigrid start. W-cycles are faster on the Re = 1000 cavity (V needs
    /// 1.7–2.2 times the cycles, 1.2–1.3 times the time) but diverged where V converges (the
    /// buoyancy-driven cavity at Ra = 1e6 on 129²), so V is the default (BENCHMARKS.md).
    fn default() -> Multigrid {
        Multigrid {
            levels: 1,
            shape: CycleShape::V,
            fmg: true,
            pre: 1,
            post: 1,
            coarsest: 8,
        }
    }
}

/// How a pseudo-time iteration advances the state.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Method {
    /// One explicit step of the local pseudo-time step per iteration (the scheme of seed 000).
    Explicit,
    /// Delta form A ΔQ = R(Q): the residual of the explicit scheme, relaxed against a frozen
    /// first-order approximation A of its Jacobian (seed 003).
    Implicit(Implicit),
}

/// Settings of the implicit relaxation as a case asks for them: what it leaves unset (`None`)
/// the backend decides ([`Implicit::on`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Implicit {
    /// How A ΔQ = R is relaxed; unset: symmetric Gauss–Seidel on a CPU, Jacobi on a GPU.
    pub relaxation: Option<Relaxation>,
    /// Sweeps per iteration (a symmetric sweep counts once); unset: the relaxation's default.
    pub sweeps: Option<usize>,
    /// CFL number of the pseudo-time term I / Δτ_imp of A, as a multiple of the explicit local
    /// step: Δτ_imp = cfl × Δτ. Infinite: no pseudo-time term (Newton-like). Unset: the
    /// relaxation's default.
    pub cfl: Option<f64>,
    /// Precision of the operator and the relaxation (the residual and the state keep theirs).
    pub single: bool,
}

/// The implicit relaxation a backend runs: [`Implicit`] with everything decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Relax {
    /// How A ΔQ = R is relaxed.
    pub relaxation: Relaxation,
    /// Sweeps per iteration.
    pub sweeps: usize,
    /// Δτ_imp / Δτ (infinite: no pseudo-time term).
    pub cfl: f64,
    /// Operator and relaxation in f32.
    pub single: bool,
}

impl Implicit {
    /// The relaxation a CPU (`gpu` false) or a GPU runs for these settings.
    pub fn on(&self, gpu: bool) -> Relax {
        let relaxation = self.relaxation.unwrap_or(if gpu {
            Relaxation::Jacobi
        } else {
            Relaxation::Sgs
        });
        let (sweeps, cfl) = relaxation.defaults();
        Relax {
            relaxation,
            sweeps: self.sweeps.unwrap_or(sweeps),
            cfl: self.cfl.unwrap_or(cfl),
            single: self.single,
        }
    }
}

/// Relaxations of the implicit system. Each visits the nodes in an order fixed by the grid,
/// so results do not depend on the thread count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relaxation {
    /// Symmetric Gauss–Seidel in lexicographic order: a forward and a backward sweep (one
    /// symmetric sweep is LU-SGS).
    Sgs,
    /// Jacobi: every node from the previous sweep's values.
    Jacobi,
    /// Red–black Gauss–Seidel: nodes of even i + j + k, then odd (reversed on every other sweep).
    RedBlack,
    /// Gauss–Seidel along x, Jacobi across (direction reversed on every other sweep).
    Line,
}

impl Relaxation {
    /// Sweeps and implicit CFL number where a case does not set them: the fastest measured on
    /// the 2D cavity at Re = 1000 (BENCHMARKS.md; Jacobi and red–black need a finite CFL
    /// number, line relaxation one and 8 sweeps: at infinity they diverged or stalled).
    pub fn defaults(self) -> (usize, f64) {
        match self {
            Relaxation::Sgs => (4, f64::INFINITY),
            Relaxation::Jacobi => (64, 320.0),
            Relaxation::RedBlack => (4, 80.0),
            Relaxation::Line => (8, 80.0),
        }
    }
}

impl Default for Numerics {
    /// The built-in cases' settings: CFL 0.8, κ = 1, U_ref = 1, C4 = 0.02, explicit.
    fn default() -> Numerics {
        Numerics {
            cfl: 0.8,
            kappa: 1.0,
            u_ref: 1.0,
            c4: 0.02,
            convection: Convection::Advective,
            differences: Differences::Second,
            method: Method::Explicit,
            multigrid: Multigrid::default(),
        }
    }
}

/// Boundary condition of one side.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SideBc {
    /// No-slip wall. The wall velocity is the velocity held at the side's boundary nodes in the
    /// initial state (a moving lid, or exact values for manufactured solutions); pressure at
    /// the wall and in the ghosts comes from quadratic extrapolation of the interior. With the
    /// energy equation the wall is isothermal: T is held at its boundary-node values too.
    Wall,
    /// No-slip wall without heat flux: as [`SideBc::Wall`], but T at the wall node comes from
    /// the second-order one-sided zero-gradient extrapolation (4 T₁ − T₂) / 3 and its ghosts
    /// mirror the interior (T₋ₗ = Tₗ). Without the energy equation it is a [`SideBc::Wall`].
    AdiabaticWall,
    /// A block interface of a decomposed grid: the boundary node and ghosts are a halo,
    /// filled from the neighbouring block (see [`ferroflow_core::decomposition`]).
    Interface,
}

/// The energy equation ∂T/∂τ + u·∇T = α∇²T and its Boussinesq coupling: the momentum
/// equations gain the source −β_T (T − T_ref) g⃗.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Energy {
    /// Thermal diffusivity α (m²/s).
    pub diffusivity: f64,
    /// −β_T g⃗ per axis (m/s²/K): the momentum source is this times (T − T_ref).
    pub buoyancy: [f64; 3],
    /// Reference temperature T_ref of the Boussinesq approximation.
    pub t_ref: f64,
}

/// The initial state of a problem as a rule: the values of every variable at a node of the
/// whole grid, by its global index. A problem cut into blocks keeps it, so that each block
/// evaluates its own nodes and no process needs the whole grid's values
/// ([`Problem::initial_value`], [`crate::blocks::block_problem`]).
#[derive(Clone)]
pub struct InitialRule(pub Arc<NodeValuesFn>);

/// Writes the values of every variable at a node, by its global index, into the slice.
pub type NodeValuesFn = dyn Fn([usize; 3], &mut [f64]) + Send + Sync;

impl std::fmt::Debug for InitialRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("InitialRule")
    }
}

impl InitialRule {
    /// `vars` variables on `layout`, whose local node 0 is node `origin` of a grid of `n` nodes
    /// per axis: the rule's values at the grid's nodes, zero in the ghost layer around it (as
    /// the whole grid's fields hold them).
    pub fn fields<R: Real>(
        &self,
        layout: Layout,
        origin: [usize; 3],
        n: [usize; 3],
        vars: usize,
    ) -> Fields<R> {
        let mut f = Fields::zeros(layout, vars);
        let g = layout.ghost.map(|g| g as isize);
        let plane = layout.stride[2];
        // Plane by plane in parallel: every variable's part of each plane.
        let mut planes: Vec<Vec<&mut [R]>> = Vec::new();
        for var in &mut f.vars {
            for (p, values) in var.chunks_mut(plane).enumerate() {
                if planes.len() <= p {
                    planes.push(Vec::new());
                }
                planes[p].push(values);
            }
        }
        planes
            .into_par_iter()
            .enumerate()
            .for_each(|(p, mut vars)| {
                let k = p as isize - g[2];
                let mut values = vec![0.0; vars.len()];
                for j in -g[1]..layout.n[1] as isize + g[1] {
                    for i in -g[0]..layout.n[0] as isize + g[0] {
                        let local = [i, j, k];
                        let global: [isize; 3] =
                            std::array::from_fn(|a| origin[a] as isize + local[a]);
                        if (0..3).any(|a| global[a] < 0 || global[a] >= n[a] as isize) {
                            continue;
                        }
                        (self.0)(global.map(|x| x as usize), &mut values);
                        let o = layout.index(i, j, k) - p * plane;
                        // Zeros are there already: pages left unwritten stay out of memory.
                        for (var, v) in vars.iter_mut().zip(&values) {
                            if v.to_bits() != 0 {
                                var[o] = R::of(*v);
                            }
                        }
                    }
                }
            });
        f
    }
}

/// Everything a backend needs to iterate one block.
#[derive(Debug, Clone)]
pub struct Problem<R: Real> {
    /// Grid layout (2D or 3D, nodes per axis).
    pub layout: Layout,
    /// Node spacing per axis (m); unused axes hold 1.
    pub spacing: [f64; 3],
    /// Fluid properties.
    pub physics: Physics,
    /// Scheme parameters.
    pub numerics: Numerics,
    /// Boundary condition per side (index = `Side as usize`).
    pub sides: [SideBc; 6],
    /// Node whose pressure is the reference (p = 0 there).
    pub pressure_ref: [usize; 3],
    /// Initial state; its boundary-node velocities are the Dirichlet data of the walls. Without
    /// values (zeros never written) where `rule` gives them instead.
    pub initial: Fields<R>,
    /// The rule `initial` comes from, when there is one.
    pub rule: Option<InitialRule>,
    /// Source term per equation (manufactured solutions), if any.
    pub source: Option<Fields<R>>,
    /// The energy equation, if solved: temperature is then the variable after the velocity.
    pub energy: Option<Energy>,
}

impl<R: Real> Problem<R> {
    /// How far the differences of the variables other than p reach: the halo they need from a
    /// neighbouring block (`ferroflow_core::decomposition::halo_width`).
    pub fn halo_reach(&self) -> usize {
        match self.numerics.differences {
            Differences::Second => 1,
            Differences::Fourth => 2,
        }
    }

    /// Checks parameters and builds the problem; the reference node is the grid centre.
    pub fn new(
        layout: Layout,
        lengths: [f64; 3],
        physics: Physics,
        numerics: Numerics,
        initial: Fields<R>,
    ) -> Result<Problem<R>, ProblemError> {
        if !(2..=3).contains(&layout.dim) {
            return Err(ProblemError::Dimension(layout.dim));
        }
        for d in 0..layout.dim {
            if layout.n[d] < MIN_NODES {
                return Err(ProblemError::GridTooSmall {
                    axis: d,
                    nodes: layout.n[d],
                    min: MIN_NODES,
                });
            }
            ProblemError::positive("grid.length", lengths[d])?;
        }
        ProblemError::positive("physics.viscosity", physics.viscosity)?;
        ProblemError::positive("physics.density", physics.density)?;
        if !(numerics.cfl > 0.0 && numerics.cfl <= 2.0) {
            return Err(ProblemError::OutOfRange {
                name: "numerics.cfl",
                value: numerics.cfl,
                allowed: "0 < cfl <= 2",
            });
        }
        ProblemError::positive("numerics.kappa", numerics.kappa)?;
        ProblemError::positive("numerics.u_ref", numerics.u_ref)?;
        if !(0.0..=0.25).contains(&numerics.c4) {
            return Err(ProblemError::OutOfRange {
                name: "numerics.c4",
                value: numerics.c4,
                allowed: "0 <= c4 <= 0.25",
            });
        }
        if numerics.differences == Differences::Fourth
            && numerics.convection == Convection::SkewSymmetric
        {
            return Err(ProblemError::key(
                "numerics.differences",
                "\"fourth-order\" takes numerics.convection = \"advective\"",
            ));
        }
        let mg = numerics.multigrid;
        if mg.levels == 0 || mg.coarsest == 0 || mg.pre + mg.post == 0 {
            return Err(ProblemError::OutOfRange {
                name: "numerics.multigrid",
                value: mg.levels.min(mg.coarsest).min(mg.pre + mg.post) as f64,
                allowed: "levels >= 1, coarsest iterations >= 1 and pre + post iterations >= 1",
            });
        }
        if let Method::Implicit(imp) = numerics.method {
            if let Some(cfl) = imp.cfl.filter(|c| c.is_nan() || *c <= 0.0) {
                return Err(ProblemError::OutOfRange {
                    name: "numerics.implicit_cfl",
                    value: cfl,
                    allowed: "> 0 (inf: no pseudo-time term)",
                });
            }
            if imp.sweeps == Some(0) {
                return Err(ProblemError::OutOfRange {
                    name: "numerics.sweeps",
                    value: 0.0,
                    allowed: ">= 1",
                });
            }
        }
        if initial.layout != layout {
            return Err(ProblemError::Shape {
                what: "initial state",
                got: initial.layout.len,
                expected: layout.len,
            });
        }
        let mut spacing = [1.0; 3];
        for d in 0..layout.dim {
            spacing[d] = lengths[d] / (layout.n[d] - 1) as f64;
        }
        Ok(Problem {
            layout,
            spacing,
            physics,
            numerics,
            sides: [SideBc::Wall; 6],
            pressure_ref: layout.n.map(|n| n / 2),
            initial,
            rule: None,
            source: None,
            energy: None,
        })
    }

    /// Adds the energy equation; `initial` must hold T after the velocity components, and its
    /// boundary-node values are the temperatures of the isothermal walls.
    pub fn with_energy(mut self, energy: Energy) -> Result<Problem<R>, ProblemError> {
        ProblemError::positive("physics.diffusivity", energy.diffusivity)?;
        for x in energy.buoyancy.into_iter().chain([energy.t_ref]) {
            if !x.is_finite() {
                return Err(ProblemError::OutOfRange {
                    name: "physics.gravity",
                    value: x,
                    allowed: "finite values",
                });
            }
        }
        self.energy = Some(energy);
        if self.initial.vars.len() != self.equations() {
            return Err(ProblemError::Shape {
                what: "initial state",
                got: self.initial.vars.len() * self.layout.len,
                expected: self.equations() * self.layout.len,
            });
        }
        Ok(self)
    }

    /// Adds a source term per equation (same layout and variable count as the state).
    pub fn with_source(mut self, source: Fields<R>) -> Result<Problem<R>, ProblemError> {
        if source.layout != self.layout || source.vars.len() != self.equations() {
            return Err(ProblemError::Shape {
                what: "source",
                got: source.vars.len() * source.layout.len,
                expected: self.equations() * self.layout.len,
            });
        }
        self.source = Some(source);
        Ok(self)
    }

    /// Number of equations (= variables): continuity, one momentum equation per axis, and
    /// energy if solved.
    pub fn equations(&self) -> usize {
        1 + self.layout.dim + self.energy.is_some() as usize
    }

    /// Index of the temperature variable, if the energy equation is solved.
    pub fn temperature(&self) -> Option<usize> {
        self.energy.map(|_| 1 + self.layout.dim)
    }

    /// Names of the variables, in storage order.
    pub fn variable_names(&self) -> &'static [&'static str] {
        match (self.layout.dim, self.energy.is_some()) {
            (2, false) => &["p", "u", "v"],
            (2, true) => &["p", "u", "v", "T"],
            (_, false) => &["p", "u", "v", "w"],
            (_, true) => &["p", "u", "v", "w", "T"],
        }
    }

    /// The initial value of variable `var` at node `node`: from the rule where there is one.
    pub fn initial_value(&self, var: usize, node: [usize; 3]) -> f64 {
        match &self.rule {
            Some(rule) => {
                let mut values = vec![0.0; self.equations()];
                (rule.0)(node, &mut values);
                values[var]
            }
            None => {
                let [i, j, k] = node;
                self.initial.at(var, i, j, k).f64()
            }
        }
    }

    /// Coordinates of node `(i, j, k)`.
    pub fn coordinates(&self, i: usize, j: usize, k: usize) -> [f64; 3] {
        let h = self.spacing;
        [i as f64 * h[0], j as f64 * h[1], k as f64 * h[2]]
    }

    /// Memory offset of the pressure reference node.
    pub fn pressure_ref_offset(&self) -> usize {
        let [i, j, k] = self.pressure_ref.map(|x| x as isize);
        self.layout.index(i, j, k)
    }

    /// Shifts pressure so that it is zero at the reference node. Backends keep pressure
    /// shifted by the previous iteration's reference value (a constant, which the scheme
    /// cannot see), so this exact shift is applied to results only.
    pub fn reference_pressure(&self, fields: &mut Fields<R>) {
        let p = &mut fields.vars[0];
        let p_ref = p[self.pressure_ref_offset()];
        p.iter_mut().for_each(|x| *x = *x - p_ref);
    }
}
