//! The fractional-step solver of seed 001 (spec Part I.2) on the edge operators: per time step
//!
//! 1. momentum by the classical four-stage Runge–Kutta method, pressure p^n, the stabilisation
//!    parameters τ and the convection's projection ξ frozen at u^n: the velocity û;
//! 2. the pressure increment δp from H δp = f by [`crate::cg`];
//! 3. u^(n+1) = û − (Δt/ρ) M⁻¹ Σ_J ∇_IJ (δp_J − δp_I), p^(n+1) = p^n + δp + ν Δt M⁻¹ K δp
//!    (the rotational term, below).
//!
//! Momentum, per node I (lumped mass M_II, convecting velocity a = the stage's own u):
//! M_II du_I/dt = − Σ_J (a_I·∇_IJ)(u_J − u_I) − ρ⁻¹ Σ_J ∇_IJ (p_J − p_I) − ν Σ_J L_IJ (u_J − u_I)
//! − τ_I [Σ_J (a_Iᵀ L^d_IJ a_I)(u_J − u_I) + Σ_J (a_I·∇_IJ)(ξ_J − ξ_I)], the last bracket the
//! split orthogonal-subscale stabilisation ∫ τ (a·∇N_I)(a·∇u − ξ), ξ_I = M_II⁻¹ Σ_J
//! (a_I·∇_IJ)(a_J − a_I) the projection of the convective term (sums over J ≠ I).
//!
//! Continuity, stabilised the same way, D u + τ (K p − W ξ_p) = 0 with (D u)_I = Σ_J
//! ∇_IJ·(u_J − u_I) = ∫ N_I ∇·u, (K p)_I = Σ_J L_IJ (p_J − p_I) = ∫ ∇N_I·∇p, (W ξ)_I = Σ_J (G_IJ·ξ_J
//! − ∇_IJ·ξ_I) = ∫ ∇N_I·ξ exactly (the seed kernel's volume form) and ξ_p = M⁻¹ Σ_J ∇_IJ (p_J −
//! p_I) the pressure gradient's projection, at n + 1 with u^(n+1) from step 3 and −D M⁻¹ G
//! replaced by K, gives (derived here; the seed's paper and code disagree on the signs and on
//! θ, spec I.2) H δp = f with the symmetric positive semidefinite H_IJ = (Δt/ρ + τ_IJ) L_IJ,
//! H_II = −Σ_J H_IJ, f = −D û − τ (K p^n − W ξ_p^n), τ_IJ = (τ_I + τ_J) / 2 in K and W. W keeps
//! the boundary integral ∮ N_I ξ·n that the shorter Σ_J G_IJ·(ξ_J − ξ_I) drops: without it the
//! stabilisation weakly imposes ∂p/∂n = 0 at walls, and Σ_I f_I ≠ 0.
//!
//! Nodes of fixed pressure keep δp = 0 (the seed's penalty on the diagonal). A single such node
//! only sets the pressure's level: H δp = f is then the singular Neumann problem on every
//! node, solved with f less its mean (the mass defect of the boundary velocity spread over the
//! nodes rather than sourced at that node, which put a growing spike into the Ethier–Steinman
//! pressure: L2 error 6.0 on 16³ instead of 0.43), and δp shifted to zero there.
//!
//! The rotational term: the continuous rotational form p^(n+1) = p^n + δp − ρν ∇·û takes the
//! divergence the pressure equation removes. Its discrete twin is the stabilised continuity
//! residual of û at p^(n+1), D û + τ (K p^(n+1) − W ξ_p^n) = −(Δt/ρ) K δp by the pressure
//! equation, so the update adds ν Δt M⁻¹ K δp. It vanishes with δp, so a steady state is a
//! fixed point: δp = 0 gives û = u^n with the momentum residual zero and f = 0, the stabilised
//! continuity; p^(n+1) = p^n forces (I + ν Δt M⁻¹ K) δp = 0, δp = 0. (The earlier − ν M⁻¹ D û
//! does not vanish there, D u = −τ (K p − W ξ_p) ≠ 0: a δp ≠ 0 balanced it, with a momentum
//! residual ∝ Δt, and the steady profiles on 6³ moved by 4.8e-4 from Δt = 0.01 to 0.004.)
//!
//! τ takes the seed code's form: 1 / (2|u_I|/h_I + c/Δt_avg + 4ν/h_I²), c = 1 for pressure and
//! 0.01 for convection, h_I = M_II^(1/3), Δt_avg = min_I 1 / (2|u_I|/h_I + 4ν/h_I²).
//!
//! Local time steps ([`Controls::local_time_steps`], for steady states only; the seed steps
//! every node by the smallest stable Δt): each node takes its own stability estimate Δt_I, in
//! the momentum's M⁻¹ as Δt_I M_II⁻¹, in H and the rotational term's K as Δt_IJ = (Δt_I +
//! Δt_J) / 2 per edge (K_Δt), in the correction as Δt_I. τ does not depend on Δt, so the
//! steady state, the fixed point above, is the same as with one Δt; only the way to it is
//! not time-accurate.
//!
//! Precision: the state, the operators, every formula and sum run in the working precision
//! `R` (f64 or f32); the controls, the fluid and the time are f64, rounded to `R` where a
//! formula takes them; reports widen to f64.
use crate::cg::{self, Matrix, Outcome};
use crate::edges::{EdgeOperators, EdgeTerms};
use crate::sum::{sums, MIN_ROWS};
use ferroflow_core::Real;
use ferroflow_mesh::{Mesh, MeshError};
use rayon::prelude::*;

fn dot<R: Real>(a: [R; 3], b: [R; 3]) -> R {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn norm<R: Real>(a: [R; 3]) -> R {
    dot(a, a).sqrt()
}

/// The fluid.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fluid {
    /// Kinematic viscosity ν.
    pub viscosity: f64,
    /// Density ρ.
    pub density: f64,
}

/// The solver's settings (the seed's values by default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Controls {
    /// Safety factor of the time step estimate.
    pub cfl: f64,
    /// Largest time step.
    pub dt_max: f64,
    /// c of the pressure's τ.
    pub pressure_factor: f64,
    /// c of the convection's τ.
    pub convection_factor: f64,
    /// Relative tolerance of the pressure solve.
    pub cg_tolerance: f64,
    /// Most iterations of the pressure solve.
    pub cg_iterations: usize,
    /// [`FractionalStep::march`] steps each node by its own stable time step, no more than
    /// `dt_max` (steady states only: see the module's comment).
    pub local_time_steps: bool,
}

impl Default for Controls {
    fn default() -> Controls {
        Controls {
            cfl: 0.9,
            dt_max: 0.01,
            pressure_factor: 1.0,
            convection_factor: 0.01,
            cg_tolerance: 1e-10,
            cg_iterations: 2000,
            local_time_steps: false,
        }
    }
}

/// What one time step did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepReport {
    /// The pressure solve.
    pub pressure: Outcome,
    /// RMS over the nodes of M_II⁻¹ Σ_J ∇_IJ·(u_J − u_I) after the step (the discrete
    /// divergence).
    pub divergence: f64,
    /// RMS over the nodes not held of M_II⁻¹ (f − H δp)_I: the residual of the stabilised
    /// continuity equation the projection imposes (its divergence with −D M⁻¹ G replaced by
    /// K, and the pressure stabilisation), which the pressure solve's tolerance controls; the
    /// divergence above also holds that approximation's difference, which only the mesh
    /// controls.
    pub continuity: f64,
}

/// How a march toward a steady state ended ([`FractionalStep::march`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct March {
    /// Time steps taken.
    pub steps: usize,
    /// Time reached (with local time steps: by the smallest).
    pub time: f64,
    /// Largest |u^(n+1) − u^n| / Δt of the last step (Δt the node's own).
    pub rate: f64,
    /// Largest |p^(n+1) − p^n| / (ρ Δt) of the last step.
    pub pressure_rate: f64,
    /// Whether both rates fell below the tolerance.
    pub steady: bool,
    /// Mean CG iterations per step.
    pub cg_iterations: f64,
}

/// What a step's momentum stages take from u^n ([`FractionalStep::freeze`]).
pub struct Frozen<R: Real = f64> {
    /// τ of convection per node.
    tau: Vec<R>,
    /// The convection's projection ξ per node.
    xi: Vec<[R; 3]>,
}

/// The solver's state on one mesh, in the working precision `R`.
pub struct FractionalStep<R: Real = f64> {
    pub(crate) ops: EdgeOperators<R>,
    pub(crate) fluid: Fluid,
    pub(crate) controls: Controls,
    /// h_I = M_II^(1/3).
    pub(crate) h: Vec<R>,
    pub(crate) fixed_velocity: Vec<bool>,
    pub(crate) fixed_pressure: Vec<bool>,
    /// The node of fixed pressure when there is only one: it sets the level.
    pub(crate) level: Option<usize>,
    /// The pressure matrix, refilled every step (the node graph's pattern).
    matrix: Matrix<R>,
    /// Velocity at the nodes.
    pub u: Vec<[R; 3]>,
    /// Pressure at the nodes.
    pub p: Vec<R>,
}

/// Σ over row I of `f(J, terms)` for three components.
fn gather3<R: Real>(
    cols: &[u32],
    terms: &[EdgeTerms<R>],
    mut f: impl FnMut(usize, &EdgeTerms<R>) -> [R; 3],
) -> [R; 3] {
    let mut s = [R::zero(); 3];
    for (j, t) in cols.iter().zip(terms) {
        let v = f(*j as usize, t);
        for a in 0..3 {
            s[a] = s[a] + v[a];
        }
    }
    s
}

impl<R: Real> FractionalStep<R> {
    /// The solver on a tetrahedral `mesh`, velocity held at the nodes `fixed_velocity` marks
    /// and pressure at those of `fixed_pressure` (at least one, or the pressure has no
    /// level; only one: it sets the level, see the module's comment), from the state `u`, `p`.
    pub fn new(
        mesh: &Mesh,
        fluid: Fluid,
        controls: Controls,
        fixed_velocity: Vec<bool>,
        fixed_pressure: Vec<bool>,
        u: Vec<[R; 3]>,
        p: Vec<R>,
    ) -> Result<FractionalStep<R>, MeshError> {
        let ops = EdgeOperators::<R>::new(mesh)?;
        let n = ops.nodes();
        if [fixed_velocity.len(), fixed_pressure.len(), u.len(), p.len()] != [n; 4] {
            return Err(MeshError::Invalid(format!(
                "the fixed nodes and the state need one entry per node ({n})"
            )));
        }
        if !fixed_pressure.contains(&true) {
            return Err(MeshError::Invalid(
                "no node of fixed pressure: the pressure level would be free".into(),
            ));
        }
        let matrix = Matrix {
            offsets: ops.offsets.clone(),
            columns: ops.columns.clone(),
            values: vec![R::zero(); ops.columns.len()],
            diagonal: vec![R::zero(); n],
        };
        let mut fixed_nodes = (0..n).filter(|&i| fixed_pressure[i]);
        let level = match (fixed_nodes.next(), fixed_nodes.next()) {
            (Some(i), None) => Some(i),
            _ => None,
        };
        Ok(FractionalStep {
            h: ops.lumped.iter().map(|m| m.cbrt()).collect(),
            ops,
            fluid,
            controls,
            fixed_velocity,
            fixed_pressure,
            level,
            matrix,
            u,
            p,
        })
    }

    /// The edge operators.
    pub fn operators(&self) -> &EdgeOperators<R> {
        &self.ops
    }

    /// The time step of the stability estimate: min_I of [`FractionalStep::local_time_steps`].
    pub fn time_step(&self) -> f64 {
        (self.local_time_steps().into_iter())
            .fold(R::infinity(), R::min)
            .f64()
    }

    /// Each node's stability estimate, CFL / (2|u|/h_min + 4ν/h_min²), |u| the larger of |u_I|
    /// and |u_I − u_J| over the neighbours, at most `dt_max`.
    pub fn local_time_steps(&self) -> Vec<R> {
        let nu = R::of(self.fluid.viscosity);
        let (cfl, dt_max) = (R::of(self.controls.cfl), R::of(self.controls.dt_max));
        let (two, four) = (R::of(2.0), R::of(4.0));
        (0..self.ops.nodes())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| {
                let (cols, _) = self.ops.row(i);
                let speed = (cols.iter())
                    .map(|&j| norm(sub(self.u[j as usize], self.u[i])))
                    .fold(norm(self.u[i]), R::max);
                let h = self.ops.h_min[i];
                let dt = cfl / (two * speed / h + four * nu / (h * h));
                dt.min(dt_max)
            })
            .collect()
    }

    /// τ at every node for the factor `c` (see the module's comment).
    fn tau(&self, c: f64) -> Vec<R> {
        let (nu, c) = (R::of(self.fluid.viscosity), R::of(c));
        let (two, four) = (R::of(2.0), R::of(4.0));
        let rate =
            |i: usize| two * norm(self.u[i]) / self.h[i] + four * nu / (self.h[i] * self.h[i]);
        let fastest = (0..self.ops.nodes())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(rate)
            .reduce(R::zero, R::max);
        (0..self.ops.nodes())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| R::one() / (rate(i) + c * fastest))
            .collect()
    }

    /// Advances the state by `dt` (rounded to `R`) from time `t`; `boundary(node, time)` is
    /// the velocity of a fixed-velocity node.
    pub fn step(
        &mut self,
        dt: f64,
        t: f64,
        boundary: &(dyn Fn(usize, f64) -> [f64; 3] + Sync),
    ) -> StepReport {
        self.advance(&vec![R::of(dt); self.ops.nodes()], dt, t, boundary)
    }

    /// [`FractionalStep::step`] by `dt[I]` at node I (local time steps, see the module's
    /// comment); the boundary is taken at times from `t` to `t + dt_boundary`.
    pub fn advance(
        &mut self,
        dt: &[R],
        dt_boundary: f64,
        t: f64,
        boundary: &(dyn Fn(usize, f64) -> [f64; 3] + Sync),
    ) -> StepReport {
        let n = self.ops.nodes();
        let frozen = self.freeze();
        let u0 = self.u.clone();
        // Classical Runge–Kutta: stage velocities at t + α Δt, weights β.
        const ALPHA: [f64; 3] = [0.5, 0.5, 1.0];
        const BETA: [f64; 4] = [1.0 / 6.0, 1.0 / 3.0, 1.0 / 3.0, 1.0 / 6.0];
        let (alpha, beta) = (ALPHA.map(R::of), BETA.map(R::of));
        let mut stage = u0.clone();
        let mut sum = u0.clone();
        for s in 0..4 {
            let r = self.momentum(&frozen, &stage);
            for i in 0..n {
                let m = dt[i] / self.ops.lumped[i];
                for c in 0..3 {
                    sum[i][c] = sum[i][c] + beta[s] * m * r[i][c];
                    if s < 3 {
                        stage[i][c] = u0[i][c] + alpha[s] * m * r[i][c];
                    }
                }
            }
            if s < 3 {
                self.hold(&mut stage, t + ALPHA[s] * dt_boundary, boundary);
            }
        }
        let mut u_hat = sum;
        self.hold(&mut u_hat, t + dt_boundary, boundary);
        let (pressure, continuity) = self.pressure(dt, &mut u_hat);
        // Fixed nodes hold their values at t + Δt: the correction skips them.
        self.u = u_hat;
        let divergence = self.divergence_rms();
        StepReport {
            pressure,
            divergence,
            continuity,
        }
    }

    /// What a step freezes at u^n for its four stages: τ of convection and the convection's
    /// projection ξ.
    pub fn freeze(&self) -> Frozen<R> {
        let ops = &self.ops;
        let u = &self.u;
        let xi = (0..ops.nodes())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| {
                let (cols, terms) = ops.row(i);
                let a = u[i];
                let s = gather3(cols, terms, |j, e| {
                    let c = dot(a, e.ni_dnj);
                    sub(u[j], a).map(|d| c * d)
                });
                s.map(|v| v / ops.lumped[i])
            })
            .collect();
        Frozen {
            tau: self.tau(self.controls.convection_factor),
            xi,
        }
    }

    /// The momentum's right-hand side M du/dt at the stage velocity `u` with p^n (the module's
    /// comment): one pass over the directed edges.
    pub fn momentum(&self, frozen: &Frozen<R>, u: &[[R; 3]]) -> Vec<[R; 3]> {
        let ops = &self.ops;
        let (nu, rho) = (R::of(self.fluid.viscosity), R::of(self.fluid.density));
        let (p, xi, tau) = (&self.p, &frozen.xi, &frozen.tau);
        (0..ops.nodes())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| {
                let (cols, terms) = ops.row(i);
                let a = u[i];
                gather3(cols, terms, |j, e| {
                    let du = sub(u[j], a);
                    let conv = dot(a, e.ni_dnj);
                    let low = quadratic(&e.laplacian, a);
                    let dxi = sub(xi[j], xi[i]);
                    let dp = (p[j] - p[i]) / rho;
                    let visc = nu * e.laplacian_trace();
                    std::array::from_fn(|c| {
                        -(conv + visc + tau[i] * low) * du[c]
                            - dp * e.ni_dnj[c]
                            - tau[i] * conv * dxi[c]
                    })
                })
            })
            .collect()
    }

    /// The pressure matrix H of the last step.
    pub fn pressure_matrix(&self) -> &Matrix<R> {
        &self.matrix
    }

    /// Steps of the stability estimate's size (one for all nodes, or each node's own with
    /// [`Controls::local_time_steps`]) from time 0 until the largest |u^(n+1) − u^n| / Δt and
    /// |p^(n+1) − p^n| / (ρ Δt) of a step fall below `tolerance` or the time reaches `end`.
    pub fn march(
        &mut self,
        tolerance: f64,
        end: f64,
        boundary: &(dyn Fn(usize, f64) -> [f64; 3] + Sync),
    ) -> March {
        let (mut time, mut steps, mut cg) = (0.0, 0, 0);
        let (mut rate, mut pressure_rate) = (f64::INFINITY, f64::INFINITY);
        while rate.max(pressure_rate) >= tolerance && time < end {
            let mut dt = self.local_time_steps();
            let smallest = dt.iter().copied().fold(R::infinity(), R::min);
            if !self.controls.local_time_steps {
                dt.iter_mut().for_each(|d| *d = smallest);
            }
            let (u, p) = (self.u.clone(), self.p.clone());
            let report = self.advance(&dt, smallest.f64(), time, boundary);
            (rate, pressure_rate) = self.rates(&u, &p, &dt);
            time += smallest.f64();
            steps += 1;
            cg += report.pressure.iterations;
        }
        March {
            steps,
            time,
            rate,
            pressure_rate,
            steady: rate.max(pressure_rate) < tolerance,
            cg_iterations: cg as f64 / steps.max(1) as f64,
        }
    }

    /// The largest |u − `u`| / Δt and |p − `p`| / (ρ Δt) over the nodes, Δt = `dt[I]` at
    /// node I: how fast a step from the state `u`, `p` changed it.
    pub fn rates(&self, u: &[[R; 3]], p: &[R], dt: &[R]) -> (f64, f64) {
        let rho = R::of(self.fluid.density);
        let rate = (0..u.len())
            .map(|i| {
                let change = (0..3).map(|c| (self.u[i][c] - u[i][c]).abs());
                change.fold(R::zero(), R::max) / dt[i]
            })
            .fold(R::zero(), R::max);
        let pressure_rate = (0..p.len())
            .map(|i| (self.p[i] - p[i]).abs() / (rho * dt[i]))
            .fold(R::zero(), R::max);
        (rate.f64(), pressure_rate.f64())
    }

    /// Sets the fixed-velocity nodes of `u` to their values at `time`.
    fn hold(
        &self,
        u: &mut [[R; 3]],
        time: f64,
        boundary: &(dyn Fn(usize, f64) -> [f64; 3] + Sync),
    ) {
        u.par_iter_mut()
            .with_min_len(MIN_ROWS)
            .enumerate()
            .filter(|(i, _)| self.fixed_velocity[*i])
            .for_each(|(i, v)| *v = boundary(i, time).map(R::of));
    }

    /// Steps 2 and 3: the pressure increment from û and p^n, then the corrected velocity (in
    /// `u_hat`) and pressure; the solve's outcome and [`StepReport::continuity`].
    fn pressure(&mut self, dt: &[R], u_hat: &mut [[R; 3]]) -> (Outcome, f64) {
        let n = self.ops.nodes();
        let tau_p = self.tau(self.controls.pressure_factor);
        let ops = &self.ops;
        let rho = R::of(self.fluid.density);
        let (zero, half) = (R::zero(), R::of(0.5));
        let p = &self.p;
        let grad_p: Vec<[R; 3]> = ops
            .gradient(p)
            .into_iter()
            .zip(&ops.lumped)
            .map(|(g, m)| g.map(|c| c / *m))
            .collect();
        // Rows held at δp = 0: every fixed node's, unless one only sets the level.
        let held: &[bool] = match self.level {
            Some(_) => &vec![false; n],
            None => &self.fixed_pressure,
        };
        let mut f: Vec<R> = (0..n)
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| {
                if held[i] {
                    return zero;
                }
                let (cols, terms) = ops.row(i);
                let mut s = zero;
                for (j, e) in cols.iter().zip(terms) {
                    let j = *j as usize;
                    let tau = half * (tau_p[i] + tau_p[j]);
                    s = s - dot(e.ni_dnj, sub(u_hat[j], u_hat[i]));
                    s = s - tau * e.laplacian_trace() * (p[j] - p[i]);
                    s = s + tau * (dot(e.dni_nj, grad_p[j]) - dot(e.ni_dnj, grad_p[i]));
                }
                s
            })
            .collect();
        let count = R::of(n as f64);
        if self.level.is_some() {
            let [total] = sums(n, |i| [f[i]]);
            f.iter_mut().for_each(|v| *v = *v - total / count);
        }
        // H_IJ = (Δt_IJ/ρ + τ_IJ) L_IJ, H_II = −Σ_J H_IJ; held rows: the penalty.
        let m = &mut self.matrix;
        for i in 0..n {
            let (lo, hi) = (ops.offsets[i], ops.offsets[i + 1]);
            let mut diagonal = zero;
            for e in lo..hi {
                let j = ops.columns[e] as usize;
                let h = (half * (dt[i] + dt[j]) / rho + half * (tau_p[i] + tau_p[j]))
                    * ops.terms[e].laplacian_trace();
                m.values[e] = h;
                diagonal = diagonal - h;
            }
            m.diagonal[i] = if held[i] { R::of(PENALTY) } else { diagonal };
        }
        let mut dp = vec![zero; n];
        let outcome = cg::solve(
            m,
            &f,
            &mut dp,
            self.controls.cg_tolerance,
            self.controls.cg_iterations,
        );
        if let Some(r) = self.level {
            let at = dp[r];
            dp.iter_mut().for_each(|v| *v = *v - at);
        }
        let mut h_dp = vec![zero; n];
        m.scaled_product(&vec![R::one(); n], &dp, &mut h_dp);
        let [r2] = sums(n, |i| match held[i] {
            true => [zero],
            false => [((f[i] - h_dp[i]) / ops.lumped[i]).powi(2)],
        });
        let continuity = (r2 / count).sqrt().f64();
        let correction = ops.gradient(&dp);
        // ν M⁻¹ K_Δt δp.
        let nu = R::of(self.fluid.viscosity);
        let rotational: Vec<R> = (0..n)
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| {
                let (cols, terms) = ops.row(i);
                // From −0, as Rust's float `Sum` (the GPU's kernel starts there too).
                let s = (cols.iter().zip(terms))
                    .map(|(&j, e)| {
                        let j = j as usize;
                        half * (dt[i] + dt[j]) * e.laplacian_trace() * (dp[j] - dp[i])
                    })
                    .fold(R::neg_zero(), |s, v| s + v);
                nu * s / ops.lumped[i]
            })
            .collect();
        for i in 0..n {
            if !self.fixed_velocity[i] {
                let k = dt[i] / (rho * ops.lumped[i]);
                for c in 0..3 {
                    u_hat[i][c] = u_hat[i][c] - k * correction[i][c];
                }
            }
        }
        // The level's node keeps its pressure, fixed ones theirs.
        let at_level = self.level.map_or(zero, |r| rotational[r]);
        for i in (0..n).filter(|&i| !held[i]) {
            self.p[i] = self.p[i] + (dp[i] + rotational[i] - at_level);
        }
        (outcome, continuity)
    }

    fn divergence_rms(&self) -> f64 {
        let d = self.ops.divergence(&self.u);
        let [s] = sums(d.len(), |i| {
            let v = d[i] / self.ops.lumped[i];
            [v * v]
        });
        (s / R::of(d.len() as f64)).sqrt().f64()
    }
}

/// The penalty on the diagonal of a fixed-pressure row (the seed's 10²⁰).
pub(crate) const PENALTY: f64 = 1e20;

fn sub<R: Real>(a: [R; 3], b: [R; 3]) -> [R; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// aᵀ L a for a row-major 3 × 3 L.
fn quadratic<R: Real>(l: &[R; 9], a: [R; 3]) -> R {
    let mut s = R::zero();
    for r in 0..3 {
        for c in 0..3 {
            s = s + a[r] * l[3 * r + c] * a[c];
        }
    }
    s
}
