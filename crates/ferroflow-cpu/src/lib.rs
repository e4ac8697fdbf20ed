//! ferroflow-cpu: the reference backend. The state lives in host memory; each iteration is one
//! fused pass over all interior nodes on a rayon pool owned by the backend, then the boundary
//! fill and a buffer swap.
#![deny(missing_docs)]

mod boundary;
mod denormals;
pub mod formulas;
mod step;

use ferroflow_core::{
    Backend, BackendError, Coefficients, Fields, Problem, Real, Residuals, SideBc, MAX_EQUATIONS,
};

/// CPU backend for one block.
pub struct CpuBackend<R: Real> {
    coeffs: Coefficients<R>,
    sides: [SideBc; 6],
    temperature: Option<usize>,
    p_ref: usize,
    source: Option<Fields<R>>,
    cur: Fields<R>,
    next: Fields<R>,
    row_sums: Vec<[f64; MAX_EQUATIONS]>,
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
            row_sums: vec![[0.0; MAX_EQUATIONS]; step::interior_rows(&problem.layout)],
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
            let p_shift = self.cur.vars[0][self.p_ref];
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
            res = self.pool.install(|| {
                let r = step::interior_pass(c, cur, next, src, t.is_some(), p_shift, sums);
                boundary::fill_boundaries(next, sides, t);
                r
            });
            std::mem::swap(&mut self.cur, &mut self.next);
        }
        Ok(res)
    }

    fn download(&mut self) -> Result<Fields<R>, BackendError> {
        Ok(self.cur.clone())
    }

    fn upload(&mut self, fields: &Fields<R>) -> Result<(), BackendError> {
        if fields.layout != self.cur.layout || fields.vars.len() != self.cur.vars.len() {
            return Err(BackendError::Failed {
                backend: "cpu",
                message: "uploaded state does not match the problem's grid".into(),
            });
        }
        self.cur.clone_from(fields);
        let (cur, sides, t) = (&mut self.cur, &self.sides, self.temperature);
        self.pool
            .install(|| boundary::fill_boundaries(cur, sides, t));
        // Boundary nodes of both buffers carry the wall data; the pass writes interiors only.
        self.next.clone_from(&self.cur);
        Ok(())
    }
}
