//! What every backend's implicit relaxation (seed 003) starts from: the operator's per-run
//! constants in the implicit precision, and the order in which the pressure gauge's sums are
//! added, so that a GPU sums in parallel and still rounds exactly as the CPU.
use crate::{Problem, Relax, Relaxation};
use ferroflow_core::decomposition::Face;
use ferroflow_core::{BackendError, Real, Residuals};

/// A block's sums for the pressure gauge over its interior nodes: the continuity residual
/// and the explicit step's weight 1 / Δτ. Added over the blocks of a grid, they give the
/// uniform pressure mode projected off the continuity residual (`gauge`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct GaugeSums {
    /// Σ R_p.
    pub resid: f64,
    /// Σ 1 / Δτ.
    pub weight: f64,
}

impl GaugeSums {
    /// Adds another block's sums.
    pub fn add(&mut self, other: GaugeSums) {
        self.resid += other.resid;
        self.weight += other.weight;
    }

    /// The multiple of 1 / Δτ subtracted from R_p.
    pub fn gauge(&self) -> f64 {
        self.resid / self.weight
    }
}

/// The error of a block of the explicit scheme asked for its implicit phases (a driver's
/// mistake: it asks only blocks of a problem that wants the implicit method).
pub fn explicit_block(backend: &'static str) -> BackendError {
    BackendError::Failed {
        backend,
        message: "the implicit phases asked of a block of the explicit scheme".into(),
    }
}

/// The implicit iteration of one block, phase by phase: a driver of blocks runs the phases
/// of every block in turn, and adds the gauge's sums and exchanges the increments' halos
/// between them (see `Decomposed`).
pub trait ImplicitBlock<R> {
    /// Sweeps per iteration.
    fn sweeps(&self) -> usize;

    /// R(Q) and the frozen operator, increments zeroed; the gauge's sums.
    fn residual(&mut self) -> Result<GaugeSums, BackendError>;

    /// Projects the continuity residual with the whole grid's gauge.
    fn project(&mut self, gauge: f64) -> Result<(), BackendError>;

    /// The residual sums of the state the iteration started from (continuity projected).
    fn residuals(&mut self) -> Result<Residuals, BackendError>;

    /// Sweep number `sweep` of the relaxation.
    fn sweep(&mut self, sweep: usize) -> Result<(), BackendError>;

    /// Packs the increments `face` sends into `buf`.
    fn pack_increments(&mut self, face: &Face, buf: &mut [R]) -> Result<(), BackendError>;

    /// Writes `buf` into the increments' halo `face` receives.
    fn unpack_increments(&mut self, face: &Face, buf: &[R]) -> Result<(), BackendError>;

    /// Pressure plus its increment at memory offset `offset` (the reference node).
    fn reference_after(&mut self, offset: usize) -> Result<R, BackendError>;

    /// Adds the increments, less `shift` in pressure, and fills the walls.
    fn update(&mut self, shift: R) -> Result<(), BackendError>;
}

/// Per-run constants of the implicit operator A in the implicit precision `S`, computed in
/// f64 and rounded once. `#[repr(C)]`: the CUDA kernels receive it by value as their
/// `ImplCoeffs` struct.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ImplicitCoefficients<S> {
    /// 1 / h per axis.
    pub inv_h: [S; 3],
    /// 1 / 2h per axis.
    pub inv_2h: [S; 3],
    /// ν / h² per axis.
    pub nu_h2: [S; 3],
    /// α / h² per axis.
    pub alpha_h2: [S; 3],
    /// 1 / (2 h ρ): the pressure gradient's coupling.
    pub inv_2h_rho: [S; 3],
    /// 2 ν Σ 1 / h².
    pub visc_diag: S,
    /// 2 α Σ 1 / h².
    pub therm_diag: S,
    /// 1 / cfl_imp: turns the explicit local step's 1 / Δτ into 1 / Δτ_imp (0: infinite).
    pub inv_cfl_imp: S,
    /// −β_T g⃗ per axis.
    pub buoyancy: [S; 3],
    /// σ / (2ν Σ 1/h²) of the pressure row's split radius ([`Self::pressure_radius`]);
    /// infinite where the pressure row keeps λ.
    pub split_scale: S,
    /// θ of the pressure row's split radius; 1 where it keeps λ.
    pub split_floor: S,
}

/// σ and θ of the pressure row's split radius: cycles of the 2D cavity at Re = 100 (65² to
/// 1025², symmetric Gauss–Seidel) were fewest with σ = 6 of 4, 6, 8; λ_p / λ near 0.06
/// diverged (1025²), θ = 0.15 did not.
const SPLIT_SIGMA: f64 = 6.0;
const SPLIT_FLOOR: f64 = 0.15;

impl<S: Real> ImplicitCoefficients<S> {
    /// The constants of `problem` relaxed as `imp` says.
    pub fn new<R: Real>(problem: &Problem<R>, imp: &Relax) -> ImplicitCoefficients<S> {
        let h = problem.spacing;
        let dim = problem.layout.dim;
        let nu = problem.physics.viscosity;
        let alpha = problem.energy.map_or(0.0, |e| e.diffusivity);
        let sum_h2: f64 = h[..dim].iter().map(|h| 1.0 / (h * h)).sum();
        let rho = problem.physics.density;
        let split = matches!(imp.relaxation, Relaxation::Sgs | Relaxation::Jacobi);
        ImplicitCoefficients {
            inv_h: h.map(|h| S::of(1.0 / h)),
            inv_2h: h.map(|h| S::of(0.5 / h)),
            nu_h2: h.map(|h| S::of(nu / (h * h))),
            alpha_h2: h.map(|h| S::of(alpha / (h * h))),
            inv_2h_rho: h.map(|h| S::of(0.5 / (h * rho))),
            visc_diag: S::of(2.0 * nu * sum_h2),
            therm_diag: S::of(2.0 * alpha * sum_h2),
            inv_cfl_imp: S::of(1.0 / imp.cfl),
            buoyancy: problem
                .energy
                .map_or([S::zero(); 3], |e| e.buoyancy.map(S::of)),
            split_scale: S::of(match split {
                true => SPLIT_SIGMA / (2.0 * nu * sum_h2),
                false => f64::INFINITY,
            }),
            split_floor: S::of(if split { SPLIT_FLOOR } else { 1.0 }),
        }
    }

    /// The pressure row's split radius λ_p ≤ λ along an axis of spacing 1 / `inv_h` where the
    /// radius is `lam` (see `cpu::implicit`): `min(λ, σ β² / (h · 2ν Σ 1/h²))`, at least θ λ,
    /// for symmetric Gauss–Seidel and Jacobi; λ itself for the other relaxations.
    #[inline(always)]
    pub fn pressure_radius(&self, lam: S, beta2: S, inv_h: S) -> S {
        lam.min(self.split_scale * beta2 * inv_h)
            .max(self.split_floor * lam)
    }
}

/// Lanes of a [`LaneSum`]: a GPU warp.
pub const LANES: usize = 32;

/// A sum of a sequence in a fixed order that a warp of [`LANES`] threads reproduces: lane
/// l adds items l, l + 32, l + 64, … in turn, then the lanes are added pairwise in a tree
/// (lane l takes lane l + s for s = 16, 8, 4, 2, 1, as `__shfl_down_sync` does). The gauge of
/// the pressure mode is such a sum over each row's nodes, then over the rows.
#[derive(Debug, Clone, Copy)]
pub struct LaneSum([f64; LANES]);

impl Default for LaneSum {
    fn default() -> LaneSum {
        LaneSum([0.0; LANES])
    }
}

impl LaneSum {
    /// Adds item `index` of the sequence (items arrive in increasing order).
    #[inline(always)]
    pub fn add(&mut self, index: usize, x: f64) {
        self.0[index % LANES] += x;
    }

    /// The sum.
    pub fn total(mut self) -> f64 {
        let mut s = LANES / 2;
        while s > 0 {
            for l in 0..s {
                self.0[l] += self.0[l + s];
            }
            s /= 2;
        }
        self.0[0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Implicit, Relaxation};

    #[test]
    fn backends_fill_in_what_a_case_leaves_unset() {
        let auto = Implicit::default();
        let cpu = auto.on(false);
        assert_eq!((cpu.relaxation, cpu.sweeps), (Relaxation::Sgs, 4));
        assert!(cpu.cfl.is_infinite());
        let gpu = auto.on(true);
        assert_eq!(
            (gpu.relaxation, gpu.sweeps, gpu.cfl),
            (Relaxation::Jacobi, 64, 320.0)
        );
        // What a case sets stays, on both.
        let set = Implicit {
            relaxation: Some(Relaxation::Line),
            sweeps: Some(3),
            ..Implicit::default()
        };
        for gpu in [false, true] {
            let r = set.on(gpu);
            assert_eq!((r.relaxation, r.sweeps, r.cfl), (Relaxation::Line, 3, 80.0));
        }
    }

    #[test]
    fn lane_sums_add_in_lanes_then_a_tree() {
        let xs: Vec<f64> = (0..100).map(|i| 1.0 / (i as f64 + 1.0)).collect();
        let mut s = LaneSum::default();
        for (i, x) in xs.iter().enumerate() {
            s.add(i, *x);
        }
        let mut lanes = [0.0; LANES];
        for (i, x) in xs.iter().enumerate() {
            lanes[i % LANES] += x;
        }
        let tree = |a: &[f64]| -> f64 {
            fn go(a: &[f64]) -> f64 {
                // Lane l + s joins lane l: halves added elementwise, recursively.
                if a.len() == 1 {
                    return a[0];
                }
                let h = a.len() / 2;
                let b: Vec<f64> = (0..h).map(|l| a[l] + a[l + h]).collect();
                go(&b)
            }
            go(a)
        };
        assert_eq!(s.total().to_bits(), tree(&lanes).to_bits());
        assert!((s.total() - xs.iter().sum::<f64>()).abs() < 1e-13);
    }
}
