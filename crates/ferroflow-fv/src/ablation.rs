//! Seed 004's ablation: the residual's loops ([`Loops`]) timed step by step from the
//! baseline (scalar, structure of arrays, the mesh's own numbering, stored fluxes) through
//! renumbering, vectorisation, the cell layout, the ways faces reach cells, and prefetching;
//! then the default loops and the reference ones on the mesh's own numbering.
//! Each row times one residual evaluation part by part (the cell loops before the face loop:
//! states, ghosts, gradients; the face loop; the gather) and whole iterations of the
//! explicit steady integrator ([`crate::time::steady`], the four-stage scheme at local steps:
//! four residuals, the first with the time steps, and the updates), which evaluates R
//! through the same loops ([`Solver::evaluate`] with the row's [`Solver::loops`]) on the
//! solver the row set up ([`Solver::new`], or [`Solver::reordered`] for the renumbered
//! rows). The time steps and the iteration's cell loops outside the residuals (stage updates,
//! norm) are timed too.
use crate::bench::flow;
use crate::fast::{Conflicts, Loops, Options};
use crate::gas::Cons;
use crate::layout::Layout;
use crate::residual::Solver;
use crate::time::{Method, Parts, SteadyIteration, FOUR_STAGE};
use ferroflow_mesh::renumber::cell_order;
use ferroflow_mesh::{Mesh, MeshError};
use std::time::Instant;

/// Courant number of the timed integrator iterations (that of the steady tests).
pub const CFL: f64 = 3.0;

/// One row of the ablation.
#[derive(Debug, Clone, Copy)]
pub struct Step {
    /// What the row adds or changes.
    pub label: &'static str,
    /// On the cells renumbered by reverse Cuthill–McKee (faces sorted by cell with them).
    pub renumbered: bool,
    /// The fast loops' options, or `None` for the reference loops of [`Solver::residual`].
    pub options: Option<Options>,
}

/// The rows, each adding to the last ("+") or trying an alternative to it ("instead").
pub fn steps() -> Vec<Step> {
    let base = Options::BASELINE;
    let simd = Options { simd: true, ..base };
    let aos = Options {
        layout: Layout::Aos,
        ..simd
    };
    let transposed = Options {
        transpose: true,
        ..aos
    };
    let step = |label, renumbered, options| Step {
        label,
        renumbered,
        options: Some(options),
    };
    let mut out = vec![
        step("baseline: scalar, SoA, stored fluxes", false, base),
        step("+ RCM renumbering", true, base),
        step("+ AVX2 face and cell loops", true, simd),
        step("+ AoS 64-byte records", true, aos),
        step("+ records transposed in registers", true, transposed),
        step(
            "serial scatter instead of stored fluxes",
            true,
            Options {
                conflicts: Conflicts::Scatter,
                ..transposed
            },
        ),
        step(
            "colouring instead of stored fluxes",
            true,
            Options {
                conflicts: Conflicts::Colour,
                ..transposed
            },
        ),
    ];
    for (label, prefetch) in [
        ("+ prefetch 4 faces ahead", 4),
        ("+ prefetch 16 faces ahead", 16),
        ("+ prefetch 64 faces ahead", 64),
    ] {
        out.push(step(
            label,
            true,
            Options {
                prefetch,
                ..transposed
            },
        ));
    }
    // What a solver made without renumbering runs, and what it ran before the fast loops.
    out.push(step(
        "the default loops without renumbering",
        false,
        Options::DEFAULT,
    ));
    out.push(Step {
        label: "the reference loops (Solver::residual) without renumbering",
        renumbered: false,
        options: None,
    });
    out
}

/// A mesh as given and renumbered, each with the benchmark's solver and flow.
pub struct Meshes {
    /// The mesh's own numbering.
    pub given: (Solver, Vec<Cons>),
    /// Cells renumbered by reverse Cuthill–McKee.
    pub renumbered: (Solver, Vec<Cons>),
    /// The cell graph's bandwidth before and after renumbering.
    pub bandwidth: [usize; 2],
}

impl Meshes {
    /// `mesh` as given and renumbered.
    pub fn new(mesh: &Mesh) -> Result<Meshes, MeshError> {
        let (order, bandwidth) = cell_order(mesh)?;
        Ok(Meshes {
            given: flow(mesh, None)?,
            renumbered: flow(mesh, Some(&order))?,
            bandwidth,
        })
    }

    /// The solver and flow `step` runs on.
    pub fn of(&mut self, step: &Step) -> &mut (Solver, Vec<Cons>) {
        if step.renumbered {
            &mut self.renumbered
        } else {
            &mut self.given
        }
    }
}

/// Seconds of one residual's parts and of the local time steps, each the best of the
/// repetitions, and of one integrator iteration and its cell loops outside the residuals.
#[derive(Debug, Clone, Copy)]
pub struct Times {
    /// The cell loops before the face loop.
    pub prepare: f64,
    /// The face loop.
    pub face: f64,
    /// The gather after it.
    pub gather: f64,
    /// The three in a row: one residual.
    pub residual: f64,
    /// The local time steps of the prepared states (the radii's face loop and each cell's
    /// sum; with the reference loops, [`Solver::time_steps`] with its own states).
    pub steps: f64,
    /// One iteration of [`steady`]: the mean of `repeats` in one run.
    pub iteration: f64,
    /// Of which the stage updates and the residual's norm (the mean per iteration).
    pub updates: f64,
}

impl Times {
    /// The cell loops, before and after the face loop.
    pub fn cells(&self) -> f64 {
        self.prepare + self.gather
    }
}

/// `step` timed on the current rayon pool: its loops' parts and time steps over `repeats`
/// residuals after one untimed one, then `repeats` iterations of [`steady`] in one run after
/// one untimed iteration (which builds the solver's loops; the run's buffers are made
/// before, as a run's are).
pub fn time(meshes: &mut Meshes, step: &Step, repeats: usize) -> Times {
    let repeats = repeats.max(1);
    let (solver, u) = meshes.of(step);
    let mut best = [f64::INFINITY; 5];
    {
        let mut loops = step.options.map(|options| Loops::new(solver, options));
        let mut r = vec![[0.0; 5]; u.len()];
        let mut dt = vec![0.0; u.len()];
        for repeat in 0..=repeats {
            let mut t = [0.0; 4];
            let start = Instant::now();
            match &mut loops {
                Some(loops) => {
                    loops.prepare(solver, u, 0.0);
                    t[0] = start.elapsed().as_secs_f64();
                    loops.face_loop(solver, 0.0, &mut r);
                    t[1] = start.elapsed().as_secs_f64() - t[0];
                    std::hint::black_box(loops.gather(solver, &mut r));
                    t[2] = start.elapsed().as_secs_f64() - t[0] - t[1];
                    let steps = Instant::now();
                    loops.time_steps(solver, CFL, &mut dt);
                    t[3] = steps.elapsed().as_secs_f64();
                }
                None => {
                    solver.prepare(u, 0.0);
                    t[0] = start.elapsed().as_secs_f64();
                    solver.face_loop(0.0);
                    t[1] = start.elapsed().as_secs_f64() - t[0];
                    std::hint::black_box(solver.gather(&mut r));
                    t[2] = start.elapsed().as_secs_f64() - t[0] - t[1];
                    let steps = Instant::now();
                    solver.time_steps(u, 0.0, CFL, &mut dt);
                    t[3] = steps.elapsed().as_secs_f64();
                }
            }
            let residual = t[0] + t[1] + t[2];
            // The first residual is untimed.
            if repeat > 0 {
                for (b, x) in best.iter_mut().zip([t[0], t[1], t[2], residual, t[3]]) {
                    *b = b.min(x);
                }
            }
        }
    }
    solver.loops = step.options;
    let method = Method::Stages {
        cfl: CFL,
        stages: FOUR_STAGE.to_vec(),
    };
    let mut iterations = SteadyIteration::new(method, u.len());
    let mut v = u.clone();
    iterations.run(solver, &mut v, (0.0, 1));
    v.copy_from_slice(u);
    iterations.parts = Parts::default();
    let start = Instant::now();
    let run = iterations.run(solver, &mut v, (0.0, repeats));
    let per = |x: f64| x / run.iterations as f64;
    let parts = iterations.parts;
    Times {
        prepare: best[0],
        face: best[1],
        gather: best[2],
        residual: best[3],
        steps: best[4],
        iteration: per(start.elapsed().as_secs_f64()),
        updates: per(parts.updates + parts.norms),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_mesh::generate::{box_mesh, shuffle, BoxCells};

    #[test]
    fn every_step_runs_and_renumbering_narrows() {
        let mut mesh = box_mesh(BoxCells::Tet6, [6, 6, 6], [1.0; 3]).unwrap();
        shuffle(&mut mesh, 2);
        let mut meshes = Meshes::new(&mesh).unwrap();
        let [before, after] = meshes.bandwidth;
        assert!(after * 5 < before, "{before} -> {after}");
        let steps = steps();
        assert_eq!(steps[0].options, Some(Options::BASELINE));
        let renumbered = steps.iter().filter(|s| s.renumbered).count();
        assert!(!steps[0].renumbered && renumbered + 3 == steps.len());
        assert_eq!(steps.last().unwrap().options, None);
        for step in &steps {
            let t = time(&mut meshes, step, 2);
            assert!(
                t.face > 0.0 && t.residual >= t.face + t.cells() * 0.999,
                "{t:?}"
            );
            assert!(
                t.iteration > t.updates && t.updates > 0.0 && t.steps > 0.0,
                "{t:?}"
            );
            // The iterations ran through the row's loops.
            assert_eq!(meshes.of(step).0.loops, step.options);
        }
    }
}
