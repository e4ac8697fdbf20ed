//! Cell-centre gradients by weighted least squares (Mavriplis 2003): for cell i with face
//! neighbours j (ghosts included), d_ij = x_j − x_i, w_ij = 1/|d_ij|,
//! M_i = Σ_j w_ij² d_ij d_ijᵀ and ∇q_i = Σ_j c_ij (q_j − q_i) with c_ij = M_i⁻¹ w_ij² d_ij,
//! computed once per mesh ([`weights`]). Exact for linear fields; on a Cartesian mesh the
//! central difference.
use crate::gas::{Prim, Vec3};
use crate::geometry::{sub, Geometry};
use rayon::prelude::*;

/// Gradients of the five primitive variables of a cell.
pub type Gradient = [Vec3; 5];

/// Cells per rayon task in the cell loops: below this, handing work to another thread costs
/// more than the cells.
pub const MIN_CELLS: usize = 1024;

/// The coefficients c_ij, in the order of `Geometry::cell_faces`.
pub fn weights(g: &Geometry) -> Vec<Vec3> {
    let mut out = vec![[0.0; 3]; g.cell_faces.len()];
    for c in 0..g.cells {
        let range = g.cell_offsets[c]..g.cell_offsets[c + 1];
        let d: Vec<Vec3> = (g.faces_of(c).iter())
            .map(|&f| sub(g.centroid[g.across(f as usize, c).0], g.centroid[c]))
            .collect();
        let mut m = [[0.0; 3]; 3];
        for d in &d {
            let w2 = 1.0 / crate::gas::dot(*d, *d);
            for a in 0..3 {
                for b in 0..3 {
                    m[a][b] += w2 * d[a] * d[b];
                }
            }
        }
        let inv = inverse(m);
        for (slot, d) in out[range].iter_mut().zip(&d) {
            let w2 = 1.0 / crate::gas::dot(*d, *d);
            *slot = std::array::from_fn(|a| w2 * (0..3).map(|b| inv[a][b] * d[b]).sum::<f64>());
        }
    }
    out
}

/// The inverse of a symmetric positive definite 3 × 3 matrix (by cofactors).
fn inverse(m: [[f64; 3]; 3]) -> [[f64; 3]; 3] {
    let c = |i: usize, j: usize| {
        let (r0, r1) = ((i + 1) % 3, (i + 2) % 3);
        let (c0, c1) = ((j + 1) % 3, (j + 2) % 3);
        m[r0][c0] * m[r1][c1] - m[r0][c1] * m[r1][c0]
    };
    let det = m[0][0] * c(0, 0) + m[0][1] * c(0, 1) + m[0][2] * c(0, 2);
    std::array::from_fn(|i| std::array::from_fn(|j| c(j, i) / det))
}

/// ∇q of every cell from `q` (cells, then ghosts) into `out`.
pub fn gradients(g: &Geometry, weights: &[Vec3], q: &[Prim], out: &mut [Gradient]) {
    out.par_iter_mut()
        .with_min_len(MIN_CELLS)
        .enumerate()
        .for_each(|(c, grad)| {
            *grad = [[0.0; 3]; 5];
            for (k, &f) in g.faces_of(c).iter().enumerate() {
                let j = g.across(f as usize, c).0;
                let w = weights[g.cell_offsets[c] + k];
                for v in 0..5 {
                    let dq = q[j][v] - q[c][v];
                    for a in 0..3 {
                        grad[v][a] += w[a] * dq;
                    }
                }
            }
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::tests::mixed_mesh;

    #[test]
    fn gradients_of_linear_fields_are_exact_on_a_jittered_mixed_mesh() {
        let g = Geometry::new(&mixed_mesh()).unwrap();
        let w = weights(&g);
        let slope = |v: usize| [0.3 + v as f64, -1.2 * v as f64, 0.7 - 0.1 * v as f64];
        let q: Vec<Prim> = (g.centroid.iter())
            .map(|&x| std::array::from_fn(|v| 2.0 + crate::gas::dot(slope(v), x)))
            .collect();
        let mut grad = vec![[[0.0; 3]; 5]; g.cells];
        gradients(&g, &w, &q, &mut grad);
        for (c, grad) in grad.iter().enumerate() {
            for v in 0..5 {
                for a in 0..3 {
                    let e = (grad[v][a] - slope(v)[a]).abs();
                    assert!(e < 1e-12, "cell {c} variable {v}: {:?}", grad[v]);
                }
            }
        }
    }
}
