//! The loops one at a time, for seed 004's throughput measure: the face loop
//! (reconstruction and Roe flux of every face) and the cell loops (primitive states and
//! gradients before it, the gather of the residual after it) on a smooth, limited flow, with
//! their compulsory traffic (every array element a loop touches counted once) and their
//! floating-point operations counted from the source.
use crate::boundary::Boundary;
use crate::flux::Limiter;
use crate::gas::{Cons, Gas, Prim};
use crate::geometry::Geometry;
use crate::residual::Solver;
use ferroflow_mesh::{Mesh, MeshError};

/// Operations per face of the face loop (square roots and divisions as one): the two sides'
/// extrapolation 2 × 113 (per variable: difference, ∇q·r, van Albada's function, sum), the
/// geometry 27, Roe's flux 215, the area 5.
pub const FACE_FLOPS: f64 = 473.0;
/// Operations per (cell, face) pair of the gather: a signed sum of five fluxes.
pub const GATHER_FLOPS: f64 = 10.0;
/// Operations per (cell, face) pair of the gradients: five differences and 3 × 5
/// multiply-adds.
pub const GRADIENT_FLOPS: f64 = 35.0;
/// Operations per cell of the conversion to primitive variables.
pub const PRIMITIVE_FLOPS: f64 = 15.0;

/// What one pass of a loop moves and computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    /// Compulsory bytes.
    pub bytes: f64,
    /// Floating-point operations.
    pub flops: f64,
}

/// A solver on a smooth, limited flow, ready to run its loops one at a time.
pub struct Bench {
    solver: Solver,
    u: Vec<Cons>,
    r: Vec<Cons>,
}

impl Bench {
    /// The loops of `mesh`, every patch far field.
    pub fn new(mesh: &Mesh) -> Result<Bench, MeshError> {
        let (solver, u) = flow(mesh, None)?;
        let r = vec![[0.0; 5]; u.len()];
        let mut out = Bench { solver, u, r };
        out.prepare();
        out.face_loop();
        Ok(out)
    }

    /// The mesh's geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.solver.geometry
    }

    /// Primitive states, ghosts and gradients.
    pub fn prepare(&mut self) {
        self.solver.prepare(&self.u, 0.0);
    }

    /// Every face's flux.
    pub fn face_loop(&mut self) {
        self.solver.face_loop(0.0);
    }

    /// Every cell's residual.
    pub fn gather(&mut self) {
        std::hint::black_box(self.solver.gather(&mut self.r));
    }

    /// The counts of [`Self::prepare`], [`Self::face_loop`] and [`Self::gather`].
    pub fn counts(&self) -> [Counts; 3] {
        counts(self.geometry())
    }
}

/// The benchmark's solver on `mesh` (its cells in `order`, see [`Solver::reordered`], where
/// given), every patch far field, and its smooth flow.
pub fn flow(mesh: &Mesh, order: Option<&[usize]>) -> Result<(Solver, Vec<Cons>), MeshError> {
    const FREE: Prim = [1.0, 0.5, 0.2, 0.1, 1.0 / 1.4];
    let far: Vec<(&str, Boundary)> = (mesh.patches.iter())
        .map(|p| (p.as_str(), Boundary::FarField(FREE)))
        .collect();
    let solver = match order {
        Some(order) => Solver::reordered(mesh, order, Gas::AIR, Limiter::VanAlbada, &far)?,
        None => Solver::new(mesh, Gas::AIR, Limiter::VanAlbada, &far)?,
    };
    // Waves a few cells long: the limiter works as in a real flow.
    let u = solver.sample(|x| {
        let wave = 0.05 * (7.0 * x[0]).sin() * (5.0 * x[1]).cos() * (3.0 * x[2] + 1.0).sin();
        [
            FREE[0] + wave,
            FREE[1] + wave,
            FREE[2],
            FREE[3] - wave,
            FREE[4] + wave,
        ]
    });
    Ok((solver, u))
}

/// The compulsory traffic and operations of the cell loops before the face loop, the face
/// loop and the gather on `g`.
pub fn counts(g: &Geometry) -> [Counts; 3] {
    let (cells, faces) = (g.cells as f64, g.faces() as f64);
    let ghosts = (g.faces() - g.internal) as f64;
    let pairs = g.cell_faces.len() as f64;
    // Bytes per element: a state (u, prim, r) 40, a gradient 120, a point or normal 24,
    // an area 8, a face's two sides 8, a cell's offset 8, a face number or patch 4, a
    // weight 24.
    [
        Counts {
            bytes: cells * (40.0 + 40.0 + 8.0 + 120.0)
                + ghosts * (40.0 + 4.0 + 24.0 + 24.0)
                + faces * 8.0
                + pairs * (4.0 + 24.0),
            flops: cells * PRIMITIVE_FLOPS + pairs * GRADIENT_FLOPS,
        },
        Counts {
            bytes: faces * (8.0 + 24.0 + 8.0 + 24.0 + 40.0)
                + cells * (40.0 + 120.0 + 24.0)
                + ghosts * (40.0 + 24.0 + 4.0),
            flops: faces * FACE_FLOPS,
        },
        Counts {
            bytes: cells * (8.0 + 40.0) + pairs * 4.0 + faces * (8.0 + 40.0),
            flops: pairs * GATHER_FLOPS,
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferroflow_mesh::generate::{box_mesh, BoxCells};

    #[test]
    fn the_loops_run_and_count_what_they_touch() {
        let mesh = box_mesh(BoxCells::Hex, [4, 4, 4], [1.0; 3]).unwrap();
        let mut b = Bench::new(&mesh).unwrap();
        b.prepare();
        b.face_loop();
        b.gather();
        let [prepare, face, gather] = b.counts();
        // 64 cells, 240 faces of which 96 on the boundary, 384 (cell, face) pairs.
        assert_eq!(face.flops, 240.0 * FACE_FLOPS);
        assert_eq!(gather.bytes, 64.0 * 48.0 + 384.0 * 4.0 + 240.0 * 48.0);
        assert_eq!(
            prepare.flops,
            64.0 * PRIMITIVE_FLOPS + 384.0 * GRADIENT_FLOPS
        );
        assert!(b.r.iter().flatten().any(|&x| x != 0.0));
    }
}
