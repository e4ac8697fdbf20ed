//! Time marching: SSP-RK3 (Shu–Osher) with one global step for unsteady flow ([`unsteady`],
//! [`GlobalSteps`]); multistage Runge–Kutta with each cell's own step, or the implicit
//! Newton–Jacobi iteration, for steady flow ([`steady`], [`SteadyIteration`]). Residuals
//! through [`Solver::evaluate`]: the loops of [`Solver::loops`]. Each step or iteration takes
//! its time steps from the states its first residual prepares, and a steady run's history
//! from that residual, R(Uⁿ): nothing is evaluated twice, and the buffers live as long as
//! the run.
use crate::gas::Cons;
use crate::gradients::MIN_CELLS;
use crate::implicit::{self, Implicit, Jacobi};
use crate::residual::Solver;
use rayon::prelude::*;
use std::time::Instant;

/// Stage coefficients of the classical four-stage scheme for steady problems (Jameson).
pub const FOUR_STAGE: [f64; 4] = [0.25, 1.0 / 3.0, 0.5, 1.0];

/// What an unsteady run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsteady {
    /// Time steps taken.
    pub steps: usize,
    /// ∫ Σ_boundary F A dt: what left the domain, by the same stage weights as the state,
    /// so that the totals change by exactly minus this.
    pub outflow: [f64; 5],
}

/// `u` marched from `start` to `end` by SSP-RK3, each step the smallest of the cells' CFL
/// steps (the last one shortened to land on `end`).
pub fn unsteady(s: &mut Solver, u: &mut [Cons], (start, end): (f64, f64), cfl: f64) -> Unsteady {
    let mut march = GlobalSteps::new(u.len(), cfl);
    let mut t = start;
    while t < end {
        t = march.step(s, u, t, end);
    }
    Unsteady {
        steps: march.steps,
        outflow: march.outflow,
    }
}

/// SSP-RK3 (Shu–Osher) steps at the smallest cell's CFL step, with their buffers: each
/// step's time steps come from the states its first stage's residual prepares
/// ([`Solver::evaluate_with_steps`]).
pub struct GlobalSteps {
    cfl: f64,
    r: Vec<Cons>,
    u0: Vec<Cons>,
    dts: Vec<f64>,
    /// Steps taken.
    pub steps: usize,
    /// What left the domain over the steps (see [`Unsteady::outflow`]).
    pub outflow: [f64; 5],
}

impl GlobalSteps {
    /// Steps at Courant number `cfl` of states of `cells` cells.
    pub fn new(cells: usize, cfl: f64) -> GlobalSteps {
        GlobalSteps {
            cfl,
            r: vec![[0.0; 5]; cells],
            u0: vec![[0.0; 5]; cells],
            dts: vec![0.0; cells],
            steps: 0,
            outflow: [0.0; 5],
        }
    }

    /// One step of `u` from time `t` towards `end`: the smallest cell's step, shortened to
    /// land on `end`. Returns the time reached.
    pub fn step(&mut self, s: &mut Solver, u: &mut [Cons], t: f64, end: f64) -> f64 {
        let (r, u0, dts) = (&mut self.r, &mut self.u0, &mut self.dts);
        u0.copy_from_slice(u);
        let mut dt = 0.0;
        // (time of the stage, weight of u0, weight of the stage's Euler step, its share of
        // the step's outflow)
        for (k, (at, keep, share)) in [
            (0.0, 0.0, 1.0 / 6.0),
            (1.0, 0.75, 1.0 / 6.0),
            (0.5, 1.0 / 3.0, 2.0 / 3.0),
        ]
        .into_iter()
        .enumerate()
        {
            let b = if k == 0 {
                let b = s.evaluate_with_steps(u, t, r, Some((self.cfl, dts)));
                dt = dts
                    .iter()
                    .copied()
                    .fold(f64::INFINITY, f64::min)
                    .min(end - t);
                b
            } else {
                s.evaluate(u, t + at * dt, r)
            };
            for v in 0..5 {
                self.outflow[v] += dt * share * b[v];
            }
            let volume = &s.geometry.volume;
            (u.par_iter_mut().with_min_len(MIN_CELLS))
                .zip(&*u0)
                .zip(&*r)
                .zip(volume)
                .for_each(|(((ui, u0), r), volume)| {
                    let step = dt / volume;
                    for v in 0..5 {
                        let euler = ui[v] - step * r[v];
                        ui[v] = keep * u0[v] + (1.0 - keep) * euler;
                    }
                });
        }
        self.steps += 1;
        if end - t <= dt {
            end
        } else {
            t + dt
        }
    }
}

/// What a steady run did.
#[derive(Debug, Clone, PartialEq)]
pub struct Steady {
    /// Iterations taken.
    pub iterations: usize,
    /// RMS of R_ρ/Ω over the cells at the start of each iteration, over the first one's.
    pub history: Vec<f64>,
}

/// `u` marched towards steady state by the multistage scheme of coefficients `stages`
/// (U^(k) = U^0 − α_k Δt_i/Ω_i R(U^(k−1))), each cell at its own CFL step, until the density
/// residual has dropped by `drop` or after `max` iterations.
pub fn steady(
    s: &mut Solver,
    u: &mut [Cons],
    cfl: f64,
    stages: &[f64],
    limits: (f64, usize),
) -> Steady {
    let method = Method::Stages {
        cfl,
        stages: stages.to_vec(),
    };
    SteadyIteration::new(method, u.len()).run(s, u, limits)
}

/// How a steady iteration updates the state.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// The explicit multistage scheme of coefficients `stages`, each cell at its own step of
    /// Courant number `cfl`.
    Stages {
        /// Courant number of the local steps.
        cfl: f64,
        /// α_k of U^(k) = U^0 − α_k Δt_i/Ω_i R(U^(k−1)).
        stages: Vec<f64>,
    },
    /// The implicit Newton–Jacobi iteration ([`crate::implicit`]).
    Implicit(Implicit),
}

/// Seconds spent in the parts of the iterations so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Parts {
    /// Residual evaluations, with the time steps of the first.
    pub residuals: f64,
    /// The stage updates, or the implicit relaxation.
    pub updates: f64,
    /// The RMS norms of the residuals measured.
    pub norms: f64,
}

/// The iterations of a steady scheme with their buffers, in two halves so that a run can
/// look between them: [`SteadyIteration::measure`] evaluates the time steps and the residual
/// R(U^n) of the state an iteration starts from, which is its first stage's (explicit) or its
/// right-hand side (implicit), and returns its RMS; [`SteadyIteration::advance`] takes the
/// iteration from there. A run's history thus costs no residual of its own.
pub struct SteadyIteration {
    update: Update,
    r: Vec<Cons>,
    dts: Vec<f64>,
    /// Whether `r` and `dts` are those of the state `advance` starts from.
    measured: bool,
    /// Where the time went.
    pub parts: Parts,
}

impl SteadyIteration {
    /// Iterations of `method` on states of `cells` cells.
    pub fn new(method: Method, cells: usize) -> SteadyIteration {
        let update = match method {
            Method::Stages { cfl, stages } => Update::Stages {
                cfl,
                stages,
                u0: vec![[0.0; 5]; cells],
            },
            Method::Implicit(how) => Update::Implicit(how, Jacobi::new(cells)),
        };
        SteadyIteration {
            update,
            r: vec![[0.0; 5]; cells],
            dts: vec![0.0; cells],
            measured: false,
            parts: Parts::default(),
        }
    }

    /// The RMS over the cells of each component of R/Ω for `u`, summed in cell order: what
    /// [`residual_rms`] gives, from the residual that the next [`SteadyIteration::advance`]
    /// starts from (`u` unchanged until then).
    pub fn measure(&mut self, s: &mut Solver, u: &[Cons]) -> [f64; 5] {
        let start = Instant::now();
        let (r, dts) = (&mut self.r, &mut self.dts);
        match self.update {
            Update::Stages { cfl, .. } => {
                s.evaluate_with_steps(u, 0.0, r, Some((cfl, dts)));
            }
            Update::Implicit(how, _) => {
                // The implicit blocks read the spectral radii and states this leaves in `s`.
                s.time_steps(u, 0.0, how.cfl, dts);
                s.evaluate(u, 0.0, r);
            }
        }
        let norm = Instant::now();
        self.parts.residuals += (norm - start).as_secs_f64();
        self.measured = true;
        let rms = rms_over_volumes(r, &s.geometry.volume);
        self.parts.norms += norm.elapsed().as_secs_f64();
        rms
    }

    /// One iteration of `u`, from the residual measured last if `u` was (see
    /// [`SteadyIteration::measure`]), else from its own.
    pub fn advance(&mut self, s: &mut Solver, u: &mut [Cons]) {
        if !self.measured {
            self.measure(s, u);
        }
        self.measured = false;
        let start = Instant::now();
        let (r, dts) = (&mut self.r, &self.dts);
        let (stages, u0) = match &mut self.update {
            Update::Stages { stages, u0, .. } => (stages, u0),
            Update::Implicit(how, jacobi) => {
                implicit::relax(s, u, (r, dts), *how, jacobi);
                self.parts.updates += start.elapsed().as_secs_f64();
                return;
            }
        };
        u0.copy_from_slice(u);
        for (k, &alpha) in stages.iter().enumerate() {
            let at = Instant::now();
            if k > 0 {
                s.evaluate(u, 0.0, r);
            }
            let updating = Instant::now();
            let volume = &s.geometry.volume;
            (u.par_iter_mut().with_min_len(MIN_CELLS))
                .zip(&*u0)
                .zip(&*r)
                .zip(dts)
                .zip(volume)
                .for_each(|((((u, u0), r), dt), volume)| {
                    let step = alpha * dt / volume;
                    for v in 0..5 {
                        u[v] = u0[v] - step * r[v];
                    }
                });
            self.parts.residuals += (updating - at).as_secs_f64();
            self.parts.updates += updating.elapsed().as_secs_f64();
        }
    }

    /// `u` iterated until the RMS of R_ρ/Ω has dropped by `drop` from the first iteration's
    /// or after `max` iterations.
    pub fn run(&mut self, s: &mut Solver, u: &mut [Cons], (drop, max): (f64, usize)) -> Steady {
        let mut out = Steady {
            iterations: 0,
            history: Vec::new(),
        };
        let mut first = None;
        while out.iterations < max {
            let rms = self.measure(s, u)[0];
            let first = *first.get_or_insert(rms);
            out.history.push(rms / first);
            if rms <= drop * first {
                break;
            }
            self.advance(s, u);
            out.iterations += 1;
        }
        out
    }
}

/// A [`Method`] with the buffers its update needs.
enum Update {
    /// The explicit stages, with the state the iteration starts from.
    Stages {
        cfl: f64,
        stages: Vec<f64>,
        u0: Vec<Cons>,
    },
    /// The implicit iteration, with its blocks.
    Implicit(Implicit, Jacobi),
}

/// The RMS over the cells of each component of `r` over the cells' `volume`, summed in cell
/// order (so the same on any thread count).
fn rms_over_volumes(r: &[Cons], volume: &[f64]) -> [f64; 5] {
    let mut sum = [0.0; 5];
    for (r, v) in r.iter().zip(volume) {
        (0..5).for_each(|k| sum[k] += (r[k] / v).powi(2));
    }
    sum.map(|x| (x / r.len() as f64).sqrt())
}

/// The RMS over the cells of each component of R/Ω for the state `u` (`r` its scratch). A
/// measure, not a step: by the reference loops ([`Solver::residual`]), which leave the
/// solver's states and gradients prepared for what is read from them (surface stresses,
/// [`crate::viscous::face_flux`]); bitwise what the integrators evaluate, with the default
/// loops.
pub fn residual_rms(s: &mut Solver, u: &[Cons], r: &mut [Cons]) -> [f64; 5] {
    s.residual(u, 0.0, r);
    rms_over_volumes(r, &s.geometry.volume)
}

/// `iterate(s, u, batch)` repeated until `done` holds for the [`residual_rms`] checked
/// before each batch; the iterations taken, or None once `max` have not sufficed. The solver
/// is left prepared for the last state. For a stopping rule that the steady iterations' own,
/// a drop from the first density residual, cannot state: one for a residual that starts near
/// zero (an impulsive start puts it at a wall, in the momentum) or for every component.
pub fn in_batches(
    s: &mut Solver,
    u: &mut [Cons],
    (batch, max): (usize, usize),
    mut iterate: impl FnMut(&mut Solver, &mut [Cons], usize),
    mut done: impl FnMut([f64; 5]) -> bool,
) -> Option<usize> {
    let mut r = vec![[0.0; 5]; u.len()];
    let mut taken = 0;
    loop {
        if done(residual_rms(s, u, &mut r)) {
            return Some(taken);
        }
        if taken >= max {
            return None;
        }
        iterate(s, u, batch);
        taken += batch;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::{channel, Boundary};
    use crate::flux::Limiter;
    use crate::gas::{Gas, Prim};
    use ferroflow_mesh::generate::{box_mesh, jitter, BoxCells, SIDES};

    /// A shock tube on 2,400 tetrahedra (several rayon tasks per loop), 0.02 of time.
    fn shock_tube() -> Vec<Cons> {
        let mesh = box_mesh(BoxCells::Tet6, [100, 2, 2], [1.0, 0.02, 0.02]).unwrap();
        let walls = SIDES.map(|s| (s, Boundary::SlipWall));
        let mut s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &walls).unwrap();
        let mut u = s.sample(|x| match x[0] < 0.5 {
            true => [1.0, 0.0, 0.0, 0.0, 1.0],
            false => [0.125, 0.0, 0.0, 0.0, 0.1],
        });
        unsteady(&mut s, &mut u, (0.0, 0.02), 1.8);
        u
    }

    #[test]
    fn one_and_three_threads_give_the_same_bits() {
        let pool = |n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        };
        let one = pool(1).install(shock_tube);
        let three = pool(3).install(shock_tube);
        let bits = |u: &[Cons]| -> Vec<u64> { u.iter().flatten().map(|x| x.to_bits()).collect() };
        assert_eq!(bits(&one), bits(&three));
        // The shock has moved: the test compares a flow, not the initial state.
        assert!(one.iter().any(|u| u[1].abs() > 0.1));
    }

    /// What a run's history reports before each iteration, measured from the residual the
    /// iteration starts from, is bitwise [`residual_rms`] of that state (the reference
    /// loops), for both steady methods; the iterations continue from it as `steady` does.
    #[test]
    fn the_measure_is_the_reference_rms_of_the_state_each_iteration_starts_from() {
        let mesh = box_mesh(BoxCells::Tet6, [8, 4, 2], [2.0, 1.0, 0.5]).unwrap();
        let p = 1.0 / 1.05f64.powf(3.5);
        let mut s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &channel(p)).unwrap();
        let start = s.sample(|x| [1.0, 0.3 + 0.1 * x[0], 0.05 * x[1], 0.0, p]);
        let methods = [
            Method::Stages {
                cfl: 2.0,
                stages: FOUR_STAGE.to_vec(),
            },
            Method::Implicit(Implicit {
                cfl: 50.0,
                sweeps: 4,
            }),
        ];
        for method in methods {
            let mut u = start.clone();
            let mut iteration = SteadyIteration::new(method.clone(), u.len());
            let mut r = vec![[0.0; 5]; u.len()];
            for _ in 0..3 {
                let measured = iteration.measure(&mut s, &u);
                assert_eq!(measured, residual_rms(&mut s, &u, &mut r), "{method:?}");
                iteration.advance(&mut s, &mut u);
            }
            let mut again = start.clone();
            SteadyIteration::new(method.clone(), u.len()).run(&mut s, &mut again, (0.0, 3));
            assert!(u == again, "{method:?}");
            assert!(u != start);
        }
    }

    /// A straight channel between an inflow of totals (p0, T0) and an outflow at p0 / 1.186
    /// settles to the uniform flow at Mach 0.5 (p0/p = (1 + 0.2 M²)^3.5).
    #[test]
    fn a_channel_between_inflow_and_outflow_settles_at_its_mach_number() {
        let mesh = box_mesh(BoxCells::Hex, [12, 4, 1], [3.0, 1.0, 0.25]).unwrap();
        let p = 1.0 / 1.05f64.powf(3.5);
        let mut s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &channel(p)).unwrap();
        let mut u = s.sample(|_| [1.0, 0.0, 0.0, 0.0, p]);
        let run = steady(&mut s, &mut u, 3.0, &FOUR_STAGE, (1e-10, 20_000));
        assert!(run.iterations < 20_000, "{:?}", run.history.last());
        for u in &u {
            let w = s.gas.prim(u);
            let mach = w[1] / s.gas.sound(&w);
            assert!(
                (mach - 0.5).abs() < 1e-6 && (w[4] - p).abs() < 1e-6,
                "{w:?}"
            );
        }
    }

    #[test]
    fn local_steps_converge_a_disturbed_free_stream() {
        const FREE: Prim = [1.0, 0.5, 0.2, 0.0, 1.0 / 1.4];
        let mut mesh = box_mesh(BoxCells::Prism, [8, 8, 2], [1.0, 1.0, 0.25]).unwrap();
        jitter(&mut mesh, 0.2, 9).unwrap();
        let far = SIDES.map(|s| (s, Boundary::FarField(FREE)));
        let mut s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &far).unwrap();
        let mut u = s.sample(|x| {
            let bump = 0.1 * (-20.0 * ((x[0] - 0.5).powi(2) + (x[1] - 0.5).powi(2))).exp();
            [FREE[0] + bump, FREE[1], FREE[2], 0.0, FREE[4] + bump]
        });
        let run = steady(&mut s, &mut u, 3.0, &FOUR_STAGE, (1e-10, 2000));
        assert!(run.iterations < 2000, "{:?}", run.history.last());
        for u in &u {
            let w = s.gas.prim(u);
            assert!((0..5).all(|v| (w[v] - FREE[v]).abs() < 1e-8), "{w:?}");
        }
    }
}
