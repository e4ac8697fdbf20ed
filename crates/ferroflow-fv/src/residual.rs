//! The residual R_i = Σ_f ±F_f A_f of every cell, as seed 004 loops: a face loop computes each
//! face's flux from its (left, right) pair and stores it, then a cell loop gathers each
//! cell's faces in ascending order. Nothing is scattered, so every number is the same
//! whatever the thread count. These loops are the reference; the integrators evaluate R
//! through [`Solver::evaluate`], by default the fast loops of [`crate::fast`] that give
//! bitwise the same.
use crate::boundary::{ghost, Boundary};
use crate::face;
use crate::fast::{Loops, Options};
use crate::flux::{roe, Limiter};
use crate::gas::{dot, Cons, Gas, Prim};
use crate::geometry::{sub, Geometry};
use crate::gradients::{gradients, weights, Gradient, MIN_CELLS};
use crate::viscous::{self, Viscous};
use ferroflow_mesh::renumber::cell_order;
use ferroflow_mesh::{Mesh, MeshError};
use rayon::prelude::*;

/// Faces per rayon task in the face loop.
const MIN_FACES: usize = 2048;

/// A mesh with its boundary conditions and the buffers of the loops.
pub struct Solver {
    /// The mesh as the loops read it.
    pub geometry: Geometry,
    /// The gas.
    pub gas: Gas,
    /// How the extrapolation to faces is limited.
    pub limiter: Limiter,
    /// Viscosity and heat conduction (Navier–Stokes); `None` for the Euler equations.
    pub viscous: Option<Viscous>,
    /// The loops [`Solver::evaluate`] runs: the fast ones with these options (by default
    /// [`Options::DEFAULT`], bitwise [`Solver::residual`]), or `None` for the reference loops.
    pub loops: Option<Options>,
    /// The fast loops, built at the first evaluation with `loops`' options.
    fast: Option<Loops>,
    /// For a renumbered solver, the number of each cell in the mesh it was given.
    user_cells: Option<Vec<u32>>,
    /// Boundary condition of each patch.
    pub(crate) boundaries: Vec<Boundary>,
    /// Least-squares coefficients, in `cell_faces` order.
    pub(crate) weights: Vec<[f64; 3]>,
    /// Primitive state of every cell, then of every ghost.
    pub(crate) prim: Vec<Prim>,
    /// Gradients of the primitive variables.
    pub(crate) grad: Vec<Gradient>,
    /// Flux times area of each face, from left to right.
    pub(crate) flux: Vec<[f64; 5]>,
    /// (|V·n| + c) A of each face, plus the viscous radius's share: the spectral radius the
    /// time steps take.
    pub(crate) wave: Vec<f64>,
}

impl Solver {
    /// The solver for `mesh` with the boundary condition of each patch named in
    /// `boundaries`. Errors: those of [`Geometry::new`], a patch without a condition.
    pub fn new(
        mesh: &Mesh,
        gas: Gas,
        limiter: Limiter,
        boundaries: &[(&str, Boundary)],
    ) -> Result<Solver, MeshError> {
        let geometry = Geometry::new(mesh)?;
        let boundaries = (mesh.patches.iter())
            .map(|name| {
                (boundaries.iter())
                    .find(|(n, _)| n == name)
                    .map(|(_, b)| *b)
                    .ok_or_else(|| {
                        MeshError::Invalid(format!("no boundary condition for patch '{name}'"))
                    })
            })
            .collect::<Result<_, _>>()?;
        let ghosts = geometry.faces() - geometry.internal;
        Ok(Solver {
            weights: weights(&geometry),
            prim: vec![[0.0; 5]; geometry.cells + ghosts],
            grad: vec![[[0.0; 3]; 5]; geometry.cells],
            flux: vec![[0.0; 5]; geometry.faces()],
            wave: vec![0.0; geometry.faces()],
            boundaries,
            geometry,
            gas,
            limiter,
            viscous: None,
            loops: Some(Options::DEFAULT),
            fast: None,
            user_cells: None,
        })
    }

    /// [`Solver::new`] on `mesh`'s cells renumbered by reverse Cuthill–McKee (faces sorted
    /// with them), for locality in the loops: [`Solver::reordered`] in the order of
    /// [`cell_order`].
    pub fn renumbered(
        mesh: &Mesh,
        gas: Gas,
        limiter: Limiter,
        boundaries: &[(&str, Boundary)],
    ) -> Result<Solver, MeshError> {
        Solver::reordered(mesh, &cell_order(mesh)?.0, gas, limiter, boundaries)
    }

    /// [`Solver::new`] on `mesh`'s cells in `order` (the solver's cell i is the mesh's cell
    /// `order[i]`). States are in the solver's numbering; [`Solver::to_user`] and
    /// [`Solver::from_user`] map them to the mesh's and back. Errors: those of
    /// [`Solver::new`], an order that is not a permutation of the cells.
    pub fn reordered(
        mesh: &Mesh,
        order: &[usize],
        gas: Gas,
        limiter: Limiter,
        boundaries: &[(&str, Boundary)],
    ) -> Result<Solver, MeshError> {
        let mut seen = vec![false; mesh.cells.len()];
        for &c in order {
            if c >= seen.len() || std::mem::replace(&mut seen[c], true) {
                return Err(MeshError::Invalid(format!(
                    "cell order: {c} is not one of the mesh's {} cells or repeats",
                    seen.len()
                )));
            }
        }
        if order.len() != seen.len() {
            return Err(MeshError::Invalid(format!(
                "cell order: {} entries for {} cells",
                order.len(),
                seen.len()
            )));
        }
        let mut ordered = mesh.clone();
        ordered.reorder_cells(order);
        let mut s = Solver::new(&ordered, gas, limiter, boundaries)?;
        s.user_cells = Some(order.iter().map(|&c| c as u32).collect());
        Ok(s)
    }

    /// `x` of each cell (one entry per cell), in the solver's numbering, in the numbering of
    /// the mesh the solver was made from.
    pub fn to_user<T: Copy>(&self, x: &[T]) -> Vec<T> {
        let mut out = x.to_vec();
        if let Some(user) = &self.user_cells {
            for (c, &u) in user.iter().enumerate() {
                out[u as usize] = x[c];
            }
        }
        out
    }

    /// `x` of each cell (one entry per cell), in the numbering of the mesh the solver was
    /// made from, in the solver's.
    pub fn from_user<T: Copy>(&self, x: &[T]) -> Vec<T> {
        match &self.user_cells {
            Some(user) => user.iter().map(|&u| x[u as usize]).collect(),
            None => x.to_vec(),
        }
    }

    /// R(u) at time `t` into `r` as the integrators take it: through the loops
    /// [`Solver::loops`] selects. Returns Σ F A over the boundary faces, as
    /// [`Solver::residual`] does.
    pub fn evaluate(&mut self, u: &[Cons], t: f64, r: &mut [Cons]) -> [f64; 5] {
        self.evaluate_with_steps(u, t, r, None)
    }

    /// [`Solver::evaluate`], and with `steps` = (CFL, Δt) each cell's time step of the same
    /// state into Δt as [`Solver::time_steps`] computes it: with the fast loops, from the
    /// states the residual prepares, which saves their pass; the solver's own states
    /// (`prim`, `wave`) are then left as they were.
    pub fn evaluate_with_steps(
        &mut self,
        u: &[Cons],
        t: f64,
        r: &mut [Cons],
        steps: Option<(f64, &mut [f64])>,
    ) -> [f64; 5] {
        let Some(options) = self.loops else {
            if let Some((cfl, dt)) = steps {
                self.time_steps(u, t, cfl, dt);
            }
            return self.residual(u, t, r);
        };
        let mut loops = match self.fast.take() {
            Some(loops) if loops.options() == options => loops,
            _ => Loops::new(self, options),
        };
        loops.prepare(self, u, t);
        if let Some((cfl, dt)) = steps {
            loops.time_steps(self, cfl, dt);
        }
        loops.face_loop(self, t, r);
        let out = loops.gather(self, r);
        self.fast = Some(loops);
        out
    }

    /// The number of cell `c` in the mesh the solver was made from (see
    /// [`Solver::reordered`]).
    pub fn user_cell(&self, c: usize) -> usize {
        self.user_cells.as_ref().map_or(c, |user| user[c] as usize)
    }

    /// Primitive states of the cells of `u` and of the ghosts at time `t`.
    fn primitives(&mut self, u: &[Cons], t: f64) {
        let (g, gas) = (&self.geometry, self.gas);
        let (cells, ghosts) = self.prim.split_at_mut(g.cells);
        (cells.par_iter_mut().with_min_len(MIN_CELLS))
            .zip(u)
            .for_each(|(w, u)| *w = gas.prim(u));
        let boundaries = &self.boundaries;
        let cells = &*cells;
        ghosts.par_iter_mut().enumerate().for_each(|(b, w)| {
            let f = g.internal + b;
            let bc = &boundaries[g.patch[b] as usize];
            let x = g.centroid[g.cells + b];
            *w = ghost(gas, bc, &cells[g.left[f] as usize], g.normal[f], x, t);
        });
    }

    /// R(u) at time `t` into `r` (dU_i/dt = −R_i/Ω_i); returns Σ F A over the boundary
    /// faces (what leaves the domain per unit time), summed in face order.
    pub fn residual(&mut self, u: &[Cons], t: f64, r: &mut [Cons]) -> [f64; 5] {
        self.prepare(u, t);
        self.face_loop(t);
        if let Some(visc) = self.viscous {
            viscous::subtract_fluxes(self, visc);
        }
        self.gather(r)
    }

    /// The cell loops before the face loop: primitive states, ghosts, gradients.
    pub fn prepare(&mut self, u: &[Cons], t: f64) {
        self.primitives(u, t);
        gradients(&self.geometry, &self.weights, &self.prim, &mut self.grad);
    }

    /// The face loop: every face's flux times area from the prepared states.
    pub fn face_loop(&mut self, t: f64) {
        let (g, gas, limiter) = (&self.geometry, self.gas, self.limiter);
        let (prim, grad, boundaries) = (&self.prim, &self.grad, &self.boundaries);
        (self.flux.par_iter_mut().with_min_len(MIN_FACES))
            .enumerate()
            .for_each(|(f, out)| {
                let (l, rt) = (g.left[f] as usize, g.right[f] as usize);
                let (n, xf) = (g.normal[f], g.face_centroid[f]);
                let d = sub(g.centroid[rt], g.centroid[l]);
                let dd = dot(d, d);
                let side = |c: usize, other: usize, alpha: f64| -> Prim {
                    let r = sub(xf, g.centroid[c]);
                    face::side(limiter, &prim[c], &prim[other], &grad[c], r, alpha)
                };
                let wl = side(l, rt, dot(sub(xf, g.centroid[l]), d) / dd);
                let wr = if f < g.internal {
                    side(rt, l, -dot(sub(xf, g.centroid[rt]), d) / dd)
                } else {
                    let bc = &boundaries[g.patch[f - g.internal] as usize];
                    ghost(gas, bc, &wl, n, xf, t)
                };
                let a = g.area[f];
                *out = roe(gas, &wl, &wr, n).map(|x| x * a);
            });
    }

    /// The cell loop after the face loop: each cell's residual gathered from its faces' fluxes
    /// into `r`; returns their sum over the boundary faces.
    pub fn gather(&self, r: &mut [Cons]) -> [f64; 5] {
        let (g, flux) = (&self.geometry, &self.flux);
        (r.par_iter_mut().with_min_len(MIN_CELLS))
            .enumerate()
            .for_each(|(c, r)| {
                *r = [0.0; 5];
                for &f in g.faces_of(c) {
                    let sign = g.across(f as usize, c).1;
                    for v in 0..5 {
                        r[v] += sign * flux[f as usize][v];
                    }
                }
            });
        let mut out = [0.0; 5];
        for f in &flux[g.internal..] {
            for v in 0..5 {
                out[v] += f[v];
            }
        }
        out
    }

    /// Each cell's time step CFL Ω_i / Σ_f λ_f A_f for the state `u` at time `t`, with
    /// λ_f = |V·n| + c of the mean of the face's two states, plus
    /// [`Viscous::spectral_radius`] in viscous flow.
    pub fn time_steps(&mut self, u: &[Cons], t: f64, cfl: f64, dt: &mut [f64]) {
        self.primitives(u, t);
        let (g, gas, prim, viscous) = (&self.geometry, self.gas, &self.prim, self.viscous);
        (self.wave.par_iter_mut().with_min_len(MIN_FACES))
            .enumerate()
            .for_each(|(f, out)| {
                let (l, r) = (g.left[f] as usize, g.right[f] as usize);
                let x = [g.centroid[l], g.centroid[r]];
                *out = face::radius(
                    gas,
                    viscous,
                    [&prim[l], &prim[r]],
                    x,
                    g.normal[f],
                    g.area[f],
                );
            });
        let wave = &self.wave;
        (dt.par_iter_mut().with_min_len(MIN_CELLS))
            .enumerate()
            .for_each(|(c, dt)| {
                let sum: f64 = g.faces_of(c).iter().map(|&f| wave[f as usize]).sum();
                *dt = cfl * g.volume[c] / sum;
            });
    }

    /// Σ_i Ω_i U_i, in cell order.
    pub fn totals(&self, u: &[Cons]) -> [f64; 5] {
        let mut out = [0.0; 5];
        for (u, v) in u.iter().zip(&self.geometry.volume) {
            for k in 0..5 {
                out[k] += v * u[k];
            }
        }
        out
    }

    /// The state `w(x)` at every cell centroid.
    pub fn sample(&self, mut w: impl FnMut([f64; 3]) -> Prim) -> Vec<Cons> {
        (self.geometry.centroid[..self.geometry.cells].iter())
            .map(|&x| self.gas.cons(&w(x)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::tests::mixed_mesh;
    use ferroflow_core::random::SplitMix64;

    const FREE: Prim = [1.0, 0.6, -0.3, 0.2, 1.0 / 1.4];

    #[test]
    fn a_free_stream_stays_free_on_a_jittered_mixed_mesh() {
        for limiter in [Limiter::None, Limiter::VanAlbada] {
            let bc = [("boundary", Boundary::FarField(FREE))];
            let mut s = Solver::new(&mixed_mesh(), Gas::AIR, limiter, &bc).unwrap();
            let u = s.sample(|_| FREE);
            let mut r = vec![[0.0; 5]; u.len()];
            s.residual(&u, 0.0, &mut r);
            for (c, r) in r.iter().enumerate() {
                let v = s.geometry.volume[c];
                assert!(r.iter().all(|x| (x / v).abs() < 1e-13), "cell {c}: {r:?}");
            }
        }
    }

    /// An order that is not a permutation of the cells is refused, naming the entry; a
    /// permutation maps states there and back.
    #[test]
    fn a_cell_order_must_be_a_permutation() {
        let mesh = mixed_mesh();
        let n = mesh.cells.len();
        let bc = [("boundary", Boundary::SlipWall)];
        let new = |order: &[usize]| Solver::reordered(&mesh, order, Gas::AIR, Limiter::None, &bc);
        let mut order: Vec<usize> = (0..n).rev().collect();
        order[1] = order[0];
        let e = new(&order).err().unwrap().to_string();
        assert!(e.contains(&format!("{} is not one", n - 1)), "{e}");
        order[1] = n - 2;
        let e = new(&order[..n - 1]).err().unwrap().to_string();
        assert!(
            e.contains(&format!("{} entries for {n} cells", n - 1)),
            "{e}"
        );
        let s = new(&order).unwrap();
        let x: Vec<usize> = (0..n).collect();
        assert_eq!(s.from_user(&x), order);
        assert_eq!(s.to_user(&s.from_user(&x)), x);
    }

    /// A random state: the cells' residuals add up to what leaves through the boundary.
    #[test]
    fn the_face_loop_conserves() {
        let bc = [("boundary", Boundary::SlipWall)];
        let mut s = Solver::new(&mixed_mesh(), Gas::AIR, Limiter::VanAlbada, &bc).unwrap();
        let mut random = SplitMix64(5);
        let u = s.sample(|_| {
            let mut w = FREE.map(|x| x + 0.3 * random.signed());
            w[0] += 0.5;
            w[4] += 0.5;
            w
        });
        let mut r = vec![[0.0; 5]; u.len()];
        let out = s.residual(&u, 0.0, &mut r);
        for v in 0..5 {
            let sum: f64 = r.iter().map(|r| r[v]).sum();
            assert!(
                (sum - out[v]).abs() < 1e-14,
                "variable {v}: {sum} against {}",
                out[v]
            );
        }
        // A slip wall lets no mass or energy through.
        assert!(out[0].abs() < 1e-15 && out[4].abs() < 1e-15, "{out:?}");
    }
}
