//! The operators of P1 tetrahedra per directed edge (seed 001, spec Part I.2): for a
//! tetrahedron e of volume V_e, with the constant gradients ∇N of its shape functions,
//!
//! | per entry (I, J), I ≠ J | integral | element's part |
//! |---|---|---|
//! | `mass` M^c_IJ | ∫ N_I N_J | V_e / 20 |
//! | `laplacian` L^d_IJ (3 × 3, row-major) | ∫ ∇N_I ⊗ ∇N_J | V_e ∇N_I ∇N_Jᵀ |
//! | `ni_dnj` ∇_IJ | ∫ N_I ∇N_J | V_e / 4 ∇N_J |
//! | `dni_nj` G_IJ | ∫ ∇N_I N_J | V_e / 4 ∇N_I |
//!
//! and per node the lumped mass M_II = ∫ N_I (V_e / 4 from each element) and the smallest
//! height h_min,I of its elements over I (1 / |∇N_I|). Both directions of an edge are stored
//! (the rows of the node graph, `ferroflow_mesh::topology::node_graph`), 16 values per entry
//! as the seed packs them. Since Σ_J N_J = 1, every formula is written on differences
//! (u_J − u_I), which vanish for constants.
//!
//! The operators are assembled in f64 whatever the working precision (geometry, and sums of
//! up to two dozen elements' parts), then rounded once to it ([`EdgeOperators::new`]).
use crate::sum::MIN_ROWS;
use ferroflow_core::Real;
use ferroflow_mesh::topology::{self, Graph};
use ferroflow_mesh::{Kind, Mesh, MeshError};
use rayon::prelude::*;

/// The 16 values of one directed edge (128 bytes in f64, 64 in f32).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EdgeTerms<R: Real = f64> {
    /// L^d_IJ = ∫ ∇N_I ⊗ ∇N_J, row-major.
    pub laplacian: [R; 9],
    /// M^c_IJ = ∫ N_I N_J.
    pub mass: R,
    /// ∇_IJ = ∫ N_I ∇N_J.
    pub ni_dnj: [R; 3],
    /// G_IJ = ∫ ∇N_I N_J.
    pub dni_nj: [R; 3],
}

impl<R: Real> EdgeTerms<R> {
    /// L_IJ = tr L^d_IJ = ∫ ∇N_I · ∇N_J.
    pub fn laplacian_trace(&self) -> R {
        self.laplacian[0] + self.laplacian[4] + self.laplacian[8]
    }

    /// The 16 values in their order (the GPU's layout).
    pub fn values(&self) -> impl Iterator<Item = R> + '_ {
        (self.laplacian.iter().chain([&self.mass]))
            .chain(&self.ni_dnj)
            .chain(&self.dni_nj)
            .copied()
    }

    fn rounded<T: Real>(&self) -> EdgeTerms<T> {
        EdgeTerms {
            laplacian: self.laplacian.map(|v| T::of(v.f64())),
            mass: T::of(self.mass.f64()),
            ni_dnj: self.ni_dnj.map(|v| T::of(v.f64())),
            dni_nj: self.dni_nj.map(|v| T::of(v.f64())),
        }
    }
}

/// A tetrahedral mesh's operators per directed edge, in the rows of its node graph, in the
/// working precision `R`.
#[derive(Debug, Clone)]
pub struct EdgeOperators<R: Real = f64> {
    /// Row I's entries are `offsets[I]..offsets[I + 1]`, columns increasing.
    pub offsets: Vec<usize>,
    /// Column J of each entry.
    pub columns: Vec<u32>,
    /// The terms of each entry.
    pub terms: Vec<EdgeTerms<R>>,
    /// M_II = ∫ N_I.
    pub lumped: Vec<R>,
    /// Smallest height over node I of its elements.
    pub h_min: Vec<R>,
}

type Vec3 = [f64; 3];

/// Volume and shape-function gradients of the tetrahedron on `x` (VTK's order, positive
/// volume): ∇N_i = −S_i / 3V, S_i the outward area vector of the face opposite node i.
pub fn tet_gradients(x: &[Vec3; 4]) -> (f64, [Vec3; 4]) {
    let (volume, _, _) = topology::cell_geometry(Kind::Tet4, x);
    let mut grads = [[0.0; 3]; 4];
    for face in Kind::Tet4.faces() {
        let opposite = (0..4).find(|i| !face.contains(i)).unwrap_or(0);
        let points: Vec<Vec3> = face.iter().map(|&i| x[i]).collect();
        let (area, _) = topology::face_geometry(&points);
        grads[opposite] = area.map(|s| -s / (3.0 * volume));
    }
    (volume, grads)
}

impl<R: Real> EdgeOperators<R> {
    /// The operators of `mesh`, whose cells must all be tetrahedra of positive volume (an
    /// error names the first that is not): assembled in f64, rounded to `R`.
    pub fn new(mesh: &Mesh) -> Result<EdgeOperators<R>, MeshError> {
        let ops = assemble(mesh)?;
        let round = |v: Vec<f64>| v.into_iter().map(R::of).collect();
        Ok(EdgeOperators {
            // In place where `R` is f64 (the same size): no second copy of the terms.
            terms: ops.terms.into_iter().map(|t| t.rounded()).collect(),
            offsets: ops.offsets,
            columns: ops.columns,
            lumped: round(ops.lumped),
            h_min: round(ops.h_min),
        })
    }
}

/// The operators of `mesh` in f64 (see [`EdgeOperators::new`]).
fn assemble(mesh: &Mesh) -> Result<EdgeOperators<f64>, MeshError> {
    let graph: Graph = topology::node_graph(mesh);
    let n = mesh.nodes.len();
    let mut terms = vec![EdgeTerms::default(); graph.targets.len()];
    let mut lumped = vec![0.0; n];
    let mut h_min = vec![f64::INFINITY; n];
    for (c, (kind, nodes)) in mesh.cells.iter().enumerate() {
        if kind != Kind::Tet4 {
            return Err(MeshError::Invalid(format!(
                "cell {c} is a {}: edge-based finite elements take tetrahedra only",
                kind.name()
            )));
        }
        let x: [Vec3; 4] = std::array::from_fn(|i| mesh.nodes[nodes[i] as usize]);
        let (v, g) = tet_gradients(&x);
        if v.is_nan() || v <= 0.0 {
            return Err(MeshError::Invalid(format!(
                "cell {c} (a tetrahedron on nodes {nodes:?}) has volume {v:e}"
            )));
        }
        for i in 0..4 {
            let node = nodes[i] as usize;
            lumped[node] += v / 4.0;
            h_min[node] = h_min[node].min(1.0 / topology::norm(g[i]));
            let row = &graph.targets[graph.offsets[node]..graph.offsets[node + 1]];
            for j in (0..4).filter(|&j| j != i) {
                let at = graph.offsets[node] + row.partition_point(|&t| t < nodes[j]);
                let t = &mut terms[at];
                t.mass += v / 20.0;
                for a in 0..3 {
                    for b in 0..3 {
                        t.laplacian[3 * a + b] += v * g[i][a] * g[j][b];
                    }
                    t.ni_dnj[a] += v / 4.0 * g[j][a];
                    t.dni_nj[a] += v / 4.0 * g[i][a];
                }
            }
        }
    }
    Ok(EdgeOperators {
        offsets: graph.offsets,
        columns: graph.targets,
        terms,
        lumped,
        h_min,
    })
}

impl<R: Real> EdgeOperators<R> {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.lumped.len()
    }

    /// Row I: its entries' columns and terms.
    pub fn row(&self, i: usize) -> (&[u32], &[EdgeTerms<R>]) {
        let r = self.offsets[i]..self.offsets[i + 1];
        (&self.columns[r.clone()], &self.terms[r])
    }

    /// Strong gradient, π_I = Σ_J ∇_IJ (p_J − p_I) (≈ M_II ∇p at I), at every node.
    pub fn gradient(&self, p: &[R]) -> Vec<[R; 3]> {
        self.per_node(|i, cols, terms| {
            let mut s = [R::zero(); 3];
            for (j, t) in cols.iter().zip(terms) {
                let d = p[*j as usize] - p[i];
                for a in 0..3 {
                    s[a] = s[a] + t.ni_dnj[a] * d;
                }
            }
            s
        })
    }

    /// Σ_J L_IJ (u_J − u_I) = ∫ ∇N_I · ∇u (≈ −M_II ∆u at I inside; at boundary nodes with
    /// the boundary flux), at every node.
    pub fn laplacian(&self, u: &[R]) -> Vec<R> {
        self.per_node(|i, cols, terms| {
            let mut s = R::zero();
            for (j, t) in cols.iter().zip(terms) {
                s = s + t.laplacian_trace() * (u[*j as usize] - u[i]);
            }
            s
        })
    }

    /// Divergence, Σ_J ∇_IJ · (u_J − u_I) (≈ M_II ∇·u at I), at every node.
    pub fn divergence(&self, u: &[[R; 3]]) -> Vec<R> {
        self.per_node(|i, cols, terms| {
            let mut s = R::zero();
            for (j, t) in cols.iter().zip(terms) {
                let uj = u[*j as usize];
                for a in 0..3 {
                    s = s + t.ni_dnj[a] * (uj[a] - u[i][a]);
                }
            }
            s
        })
    }

    /// `f(i, columns, terms)` of every row, in parallel.
    fn per_node<T: Send>(&self, f: impl Fn(usize, &[u32], &[EdgeTerms<R>]) -> T + Sync) -> Vec<T> {
        (0..self.nodes())
            .into_par_iter()
            .with_min_len(MIN_ROWS)
            .map(|i| {
                let (cols, terms) = self.row(i);
                f(i, cols, terms)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_mesh::generate::{box_mesh, jitter, shuffle, BoxCells};

    fn mesh() -> Mesh {
        let mut m = box_mesh(BoxCells::Tet6, [4, 3, 5], [1.0, 0.8, 1.2]).unwrap();
        jitter(&mut m, 0.2, 3).unwrap();
        shuffle(&mut m, 9);
        m
    }

    fn linear(x: Vec3) -> f64 {
        0.5 + 2.0 * x[0] - 1.5 * x[1] + 0.25 * x[2]
    }

    const GRAD: Vec3 = [2.0, -1.5, 0.25];

    /// Nodes on the box's boundary.
    fn on_boundary(m: &Mesh) -> Vec<bool> {
        let mut b = vec![false; m.nodes.len()];
        for (_, nodes) in m.faces.iter() {
            nodes.iter().for_each(|&n| b[n as usize] = true);
        }
        b
    }

    #[test]
    fn masses_add_up_and_edges_are_symmetric() {
        let m = mesh();
        let ops = EdgeOperators::new(&m).unwrap();
        let volume: f64 = ops.lumped.iter().sum();
        assert!((volume - 0.96).abs() < 1e-12, "{volume}");
        for i in 0..ops.nodes() {
            let (cols, terms) = ops.row(i);
            // The consistent mass's row off the diagonal: 3 V/20 of each element's V/4,
            // three fifths of M_II (the diagonal, V/10, is the rest).
            let off: f64 = terms.iter().map(|t| t.mass).sum();
            assert!(
                (off - ops.lumped[i] * 0.6).abs() < 1e-14,
                "{off} {}",
                ops.lumped[i]
            );
            for (j, t) in cols.iter().zip(terms) {
                let (back_cols, back) = ops.row(*j as usize);
                let k = back_cols.iter().position(|&c| c as usize == i).unwrap();
                let b = back[k];
                assert_eq!(t.mass, b.mass);
                for a in 0..3 {
                    assert!((t.ni_dnj[a] - b.dni_nj[a]).abs() < 1e-15);
                    for c in 0..3 {
                        assert!((t.laplacian[3 * a + c] - b.laplacian[3 * c + a]).abs() < 1e-13);
                    }
                }
            }
        }
    }

    #[test]
    fn linear_fields_have_exact_gradients_and_no_laplacian_inside() {
        let m = mesh();
        let ops = EdgeOperators::new(&m).unwrap();
        let p: Vec<f64> = m.nodes.iter().map(|&x| linear(x)).collect();
        let boundary = on_boundary(&m);
        for (i, g) in ops.gradient(&p).iter().enumerate() {
            for a in 0..3 {
                let want = GRAD[a] * ops.lumped[i];
                assert!((g[a] - want).abs() < 1e-12, "node {i}: {g:?}");
            }
        }
        for (i, l) in ops.laplacian(&p).iter().enumerate() {
            if !boundary[i] {
                assert!(l.abs() < 1e-12, "node {i}: {l}");
            }
        }
        // u = (y, z, x) is divergence free; u = x e_x has divergence 1.
        let u: Vec<Vec3> = m.nodes.iter().map(|x| [x[1], x[2], x[0]]).collect();
        assert!(ops.divergence(&u).iter().all(|d| d.abs() < 1e-12));
        let u: Vec<Vec3> = m.nodes.iter().map(|x| [x[0], 0.0, 0.0]).collect();
        for (d, v) in ops.divergence(&u).iter().zip(&ops.lumped) {
            assert!((d - v).abs() < 1e-12);
        }
    }

    #[test]
    fn gradients_of_a_tetrahedron_add_to_zero_and_heights_are_inverse_lengths() {
        let x = [[0.0; 3], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 0.5]];
        let (v, g) = tet_gradients(&x);
        assert!((v - 1.0 / 6.0).abs() < 1e-15);
        assert_eq!(g[1], [0.5, 0.0, 0.0]);
        assert_eq!(g[3], [0.0, 0.0, 2.0]);
        let s: Vec3 = std::array::from_fn(|a| g.iter().map(|gi| gi[a]).sum());
        assert!(s.iter().all(|c| c.abs() < 1e-15));
        let mut hexes = box_mesh(BoxCells::Hex, [1, 1, 1], [1.0; 3]).unwrap();
        hexes.faces = Default::default();
        let e = EdgeOperators::<f64>::new(&hexes).unwrap_err().to_string();
        assert!(e.contains("cell 0 is a hexahedron"), "{e}");
    }
}
