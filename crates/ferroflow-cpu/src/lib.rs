//! ferroflow-cpu: the reference backend. The state lives in host memory; each iteration is one
//! fused pass over all interior nodes on a rayon pool owned by the backend, then the boundary
//! fill and a buffer swap.
#![deny(missing_docs)]

mod boundary;
mod denormals;
pub mod formulas;
mod step;

use ferroflow_ac::{BlockBackend, Coefficients, Problem, SideBc};
use ferroflow_core::decomposition::Face;
use ferroflow_core::{Backend, BackendError, Fields, Real, Residuals};
use rayon::prelude::*;

/// CPU backend for one block (a whole grid, or one block of a decomposed one).
pub struct CpuBackend<R: Real> {
    coeffs: Coefficients<R>,
    sides: [SideBc; 6],
    temperature: Option<usize>,
    p_ref: usize,
    source: Option<Fields<R>>,
    cur: Fields<R>,
    next: Fields<R>,
    row_sums: Vec<[f64; step::V]>,
    pool: rayon::ThreadPool,
}

impl<R: Real> CpuBackend<R> {
    /// Sets up the state from `problem.initial` on a pool of `threads` threads (0 = all cores).
    pub fn new(problem: &Problem<R>, threads: usize) -> Result<CpuBackend<R>, BackendError> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .start_handler(|_| denormals::flush_to_zero())
            .build()
            .map_err(|e| BackendError::Failed {
                backend: "cpu",
                message: e.to_string(),
            })?;
        let mut backend = CpuBackend {
            coeffs: Coefficients::new(problem),
            sides: problem.sides,
            temperature: problem.temperature(),
            p_ref: problem.pressure_ref_offset(),
            source: problem.source.clone(),
            cur: problem.initial.clone(),
            next: problem.initial.clone(),
            row_sums: vec![[0.0; step::V]; step::interior_rows(&problem.layout)],
            pool,
        };
        backend.upload(&problem.initial)?;
        Ok(backend)
    }

    /// Number of worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
}

impl<R: Real> Backend for CpuBackend<R> {
    type Real = R;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn advance(&mut self, iterations: usize) -> Result<Residuals, BackendError> {
        let mut res = Residuals::default();
        for _ in 0..iterations {
            res = self.step(self.cur.vars[0][self.p_ref], true)?;
        }
        Ok(res)
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        Ok(self.cur.clone())
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        fields.check_state(&self.cur.layout, self.cur.vars.len(), "cpu")?;
        self.cur.clone_from(fields);
        let (cur, sides, t) = (&mut self.cur, &self.sides, self.temperature);
        self.pool
            .install(|| boundary::fill_boundaries(cur, sides, t));
        // Boundary nodes of both buffers carry the wall data; the pass writes interiors only.
        self.next.clone_from(&self.cur);
        Ok(())
    }
}

impl<R: Real> BlockBackend for CpuBackend<R> {
    fn pressure_at(&mut self, offset: usize) -> Result<R, BackendError> {
        Ok(self.cur.vars[0][offset])
    }

    /// The fused pass computes the residual sums anyway: `norms` changes nothing here.
    fn step(&mut self, p_shift: R, _norms: bool) -> Result<Residuals, BackendError> {
        let (c, cur, next, src, t, sides, sums) = (
            &self.coeffs,
            &self.cur,
            &mut self.next,
            self.source.as_ref(),
            self.temperature,
            &self.sides,
            &mut self.row_sums,
        );
        // Both steps on the pool, whose threads flush subnormals (see `denormals`).
        let res = self.pool.install(|| {
            let r = step::interior_pass(c, cur, next, src, t.is_some(), p_shift, sums);
            boundary::fill_boundaries(next, sides, t);
            r
        });
        std::mem::swap(&mut self.cur, &mut self.next);
        Ok(res)
    }

    fn pack(&mut self, face: &Face, buf: &mut [R]) -> Result<(), BackendError> {
        let rows = face.rows(&self.cur.layout, false);
        let cur = &self.cur;
        let parts = split_rows(buf, &rows);
        self.pool.install(|| {
            parts.into_par_iter().zip(&rows).for_each(|(part, r)| {
                part.copy_from_slice(&cur.vars[r.var][r.offset..r.offset + r.len]);
            })
        });
        Ok(())
    }

    fn unpack(&mut self, face: &Face, buf: &[R]) -> Result<(), BackendError> {
        // Rows of one variable never overlap: unpack variable by variable, rows in parallel.
        let rows = face.rows(&self.cur.layout, true);
        let cur = &mut self.cur;
        self.pool.install(|| {
            for (var, values) in cur.vars.iter_mut().enumerate().take(face.vars) {
                let mine: Vec<_> = rows.iter().filter(|r| r.var == var).collect();
                let mut targets = Vec::with_capacity(mine.len());
                let mut rest: &mut [R] = values;
                let mut base = 0;
                for r in &mine {
                    let (_, tail) = rest.split_at_mut(r.offset - base);
                    let (row, tail) = tail.split_at_mut(r.len);
                    targets.push(row);
                    rest = tail;
                    base = r.offset + r.len;
                }
                targets.into_par_iter().zip(mine).for_each(|(row, r)| {
                    row.copy_from_slice(&buf[r.at..r.at + r.len]);
                });
            }
        });
        Ok(())
    }
}

/// `buf` cut into the runs of `rows` (which tile it in order).
fn split_rows<'a, R>(
    mut buf: &'a mut [R],
    rows: &[ferroflow_core::decomposition::FaceRow],
) -> Vec<&'a mut [R]> {
    rows.iter()
        .map(|r| {
            let (row, rest) = std::mem::take(&mut buf).split_at_mut(r.len);
            buf = rest;
            row
        })
        .collect()
}
