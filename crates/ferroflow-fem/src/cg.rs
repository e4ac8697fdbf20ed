//! Conjugate gradients for the pressure equation (seed 001, spec Part I.2): a symmetric
//! matrix on the node graph's pattern ([`Matrix`]) scaled by its diagonal (D^-1/2 A D^-1/2,
//! Jacobi preconditioning in symmetric form), solved in the three-term recurrence form (Saad,
//! Iterative Methods, algorithm 6.18) whose one reduction per iteration gives both (r, r)
//! and (r, A r): on a GPU one fused reduction, one matrix–vector product and one fused update
//! of x and r per iteration. Sums run in a fixed order ([`crate::sum`]), everything in the
//! working precision `R`.
use crate::sum::{sums, MIN_ROWS};
use ferroflow_core::Real;
use rayon::prelude::*;

/// A symmetric matrix on a graph's rows: off-diagonal `values` at `columns`, row I's in
/// `offsets[I]..offsets[I + 1]`, and its `diagonal`.
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix<R: Real = f64> {
    /// Where each row's entries start (one more than rows).
    pub offsets: Vec<usize>,
    /// Column of each entry.
    pub columns: Vec<u32>,
    /// Off-diagonal values.
    pub values: Vec<R>,
    /// Diagonal values (positive).
    pub diagonal: Vec<R>,
}

impl<R: Real> Matrix<R> {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.diagonal.len()
    }

    /// (S A S x)_I with S = `scale` (a diagonal), for every row: `out` (the solver's
    /// matrix–vector product).
    pub fn scaled_product(&self, scale: &[R], x: &[R], out: &mut [R]) {
        out.par_iter_mut()
            .with_min_len(MIN_ROWS)
            .enumerate()
            .for_each(|(i, o)| {
                let r = self.offsets[i]..self.offsets[i + 1];
                let mut s = self.diagonal[i] * scale[i] * x[i];
                for (j, a) in self.columns[r.clone()].iter().zip(&self.values[r]) {
                    s = s + *a * scale[*j as usize] * x[*j as usize];
                }
                *o = scale[i] * s;
            });
    }
}

/// How a solve ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Iterations (matrix–vector products) done.
    pub iterations: usize,
    /// |r| / |b| of the scaled system at the end (computed in the working precision).
    pub relative_residual: f64,
    /// Whether it reached the tolerance.
    pub converged: bool,
}

/// The smallest relative tolerance a solve in precision `R` is asked for: 32 ε (3.8e-6 in
/// f32, 7.1e-15 in f64). The recurrence's residual drifts from the true one by round-off of
/// order ε times the matrix's condition; a tolerance below a few ε would be met, if at all,
/// only by that drift, so cases refuse it rather than stall or pretend.
pub fn finest_tolerance<R: Real>() -> f64 {
    32.0 * R::epsilon().f64()
}

/// Solves A x = b from the `x` given, until |r| / |b| of the scaled system falls below
/// `tolerance` (rounded to `R`) or after `max_iterations`.
pub fn solve<R: Real>(
    a: &Matrix<R>,
    b: &[R],
    x: &mut [R],
    tolerance: f64,
    max_iterations: usize,
) -> Outcome {
    let n = a.rows();
    assert!(b.len() == n && x.len() == n, "one value per row");
    let (zero, one, tolerance) = (R::zero(), R::one(), R::of(tolerance));
    let scale: Vec<R> = a.diagonal.iter().map(|d| one / d.sqrt()).collect();
    // y = S⁻¹ x solves (S A S) y = S b.
    let mut y: Vec<R> = x.iter().zip(&scale).map(|(x, s)| *x / *s).collect();
    let sb: Vec<R> = b.iter().zip(&scale).map(|(b, s)| *b * *s).collect();
    let [bb] = sums(n, |i| [sb[i] * sb[i]]);
    let mut w = vec![zero; n];
    a.scaled_product(&scale, &y, &mut w);
    let mut r: Vec<R> = sb.iter().zip(&w).map(|(b, w)| *b - *w).collect();
    let (mut y_prev, mut r_prev) = (y.clone(), r.clone());
    let (mut gamma_prev, mut rr_prev, mut rho_prev) = (zero, zero, one);
    let mut outcome = Outcome {
        iterations: 0,
        relative_residual: 0.0,
        converged: bb == zero,
    };
    if bb == zero {
        x.iter_mut().for_each(|x| *x = zero);
        return outcome;
    }
    loop {
        a.scaled_product(&scale, &r, &mut w);
        let [rr, rw] = sums(n, |i| [r[i] * r[i], r[i] * w[i]]);
        let relative = (rr / bb).sqrt();
        outcome.relative_residual = relative.f64();
        if relative < tolerance {
            outcome.converged = true;
            break;
        }
        if outcome.iterations == max_iterations || rw <= zero || !rw.is_finite() {
            break;
        }
        let gamma = rr / rw;
        let rho = match outcome.iterations {
            0 => one,
            _ => one / (one - gamma / gamma_prev * rr / rr_prev / rho_prev),
        };
        // x_{j+1} = ρ (x_j + γ r_j) + (1 − ρ) x_{j−1}, and r likewise with −γ A r_j; the
        // older vectors take the new values, so that the current ones become the older.
        y_prev
            .par_iter_mut()
            .zip(r_prev.par_iter_mut())
            .zip(y.par_iter().zip(r.par_iter()).zip(w.par_iter()))
            .with_min_len(MIN_ROWS)
            .for_each(|((yp, rp), ((y, r), w))| {
                *yp = rho * (*y + gamma * *r) + (one - rho) * *yp;
                *rp = rho * (*r - gamma * *w) + (one - rho) * *rp;
            });
        std::mem::swap(&mut y, &mut y_prev);
        std::mem::swap(&mut r, &mut r_prev);
        (gamma_prev, rr_prev, rho_prev) = (gamma, rr, rho);
        outcome.iterations += 1;
    }
    for ((x, y), s) in x.iter_mut().zip(&y).zip(&scale) {
        *x = *y * *s;
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edges::EdgeOperators;
    use ferroflow_mesh::generate::{box_mesh, jitter, BoxCells};

    /// The stiffness matrix K_IJ = ∫ ∇N_I · ∇N_J of a jittered box, its boundary nodes held
    /// by a penalty on the diagonal (the seed's fixed-pressure rows), and which they are.
    fn stiffness() -> (Matrix, Vec<bool>, Vec<[f64; 3]>) {
        let mut m = box_mesh(BoxCells::Tet6, [6, 5, 4], [1.0; 3]).unwrap();
        jitter(&mut m, 0.15, 2).unwrap();
        let ops = EdgeOperators::new(&m).unwrap();
        let mut fixed = vec![false; m.nodes.len()];
        for (_, nodes) in m.faces.iter() {
            nodes.iter().for_each(|&n| fixed[n as usize] = true);
        }
        let values: Vec<f64> = ops.terms.iter().map(|t| t.laplacian_trace()).collect();
        let diagonal = (0..ops.nodes())
            .map(|i| match fixed[i] {
                true => PENALTY,
                false => -values[ops.offsets[i]..ops.offsets[i + 1]]
                    .iter()
                    .sum::<f64>(),
            })
            .collect();
        let a = Matrix {
            offsets: ops.offsets,
            columns: ops.columns,
            values,
            diagonal,
        };
        (a, fixed, m.nodes)
    }

    const PENALTY: f64 = 1e20;

    #[test]
    fn a_discrete_harmonic_field_is_the_linear_one() {
        // Fixed nodes hold zero (an increment, as the pressure step's); the linear field's
        // boundary values enter the other rows' right-hand side.
        let (a, fixed, x) = stiffness();
        let exact: Vec<f64> = x
            .iter()
            .map(|x| 1.0 + x[0] - 2.0 * x[1] + 0.5 * x[2])
            .collect();
        let b: Vec<f64> = (0..a.rows())
            .map(|i| match fixed[i] {
                true => 0.0,
                false => -(a.offsets[i]..a.offsets[i + 1])
                    .filter(|&e| fixed[a.columns[e] as usize])
                    .map(|e| a.values[e] * exact[a.columns[e] as usize])
                    .sum::<f64>(),
            })
            .collect();
        let mut p = vec![0.0; a.rows()];
        let out = solve(&a, &b, &mut p, 1e-12, 1000);
        assert!(out.converged, "{out:?}");
        assert!(out.iterations > 5 && out.iterations < 200, "{out:?}");
        for i in (0..a.rows()).filter(|&i| !fixed[i]) {
            assert!(
                (p[i] - exact[i]).abs() < 1e-10,
                "{} against {}",
                p[i],
                exact[i]
            );
        }
    }

    #[test]
    fn solves_have_the_same_bits_on_any_thread_count_and_stop_where_told() {
        let (a, _, x) = stiffness();
        let b: Vec<f64> = x.iter().map(|x| (3.0 * x[0]).sin() * x[1]).collect();
        let run = |threads: usize, tolerance: f64, most: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut p = vec![0.0; a.rows()];
            let out = pool.install(|| solve(&a, &b, &mut p, tolerance, most));
            (p, out)
        };
        let (one, out) = run(1, 1e-10, 1000);
        let (three, _) = run(3, 1e-10, 1000);
        assert_eq!(
            one.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            three.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        assert!(out.converged && out.relative_residual < 1e-10);
        let (_, short) = run(2, 1e-10, 3);
        // f32: the same matrix rounded, to the finest tolerance f32 is asked for.
        let single = Matrix {
            offsets: a.offsets.clone(),
            columns: a.columns.clone(),
            values: a.values.iter().map(|&v| v as f32).collect(),
            diagonal: a.diagonal.iter().map(|&v| v as f32).collect(),
        };
        let b32: Vec<f32> = b.iter().map(|&v| v as f32).collect();
        let mut p32 = vec![0.0f32; a.rows()];
        let tolerance = finest_tolerance::<f32>();
        let out32 = solve(&single, &b32, &mut p32, tolerance, 1000);
        assert!(
            out32.converged && out32.iterations < 2 * out.iterations,
            "{out32:?}"
        );
        for (s, d) in p32.iter().zip(&one) {
            assert!(
                (*s as f64 - d).abs() < 1e-4 * (1.0 + d.abs()),
                "{s} against {d}"
            );
        }
        assert_eq!((short.iterations, short.converged), (3, false));
        // Nothing to solve: zero, at once.
        let mut p = vec![1.0; a.rows()];
        let none = solve(&a, &vec![0.0; a.rows()], &mut p, 1e-10, 10);
        assert!(none.converged && none.iterations == 0);
        assert!(p.iter().all(|&v| v == 0.0));
    }
}
