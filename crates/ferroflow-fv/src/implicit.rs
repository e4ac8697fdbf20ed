//! Implicit Newton–Jacobi iteration for steady flow (seed 004): each iteration solves
//! (Ω_i/Δτ_i + ∂R/∂U) ΔU = −R(U) approximately and sets U += ΔU. The right-hand side is the
//! full second-order residual; the Jacobian is that of the first-order flux in Rusanov's
//! form, F_f ≈ ½ (F(U_L) + F(U_R)) − ½ λ_f (U_R − U_L) with λ_f A_f the face's spectral
//! radius of [`Solver::time_steps`]:
//!
//! - the own-cell block of an internal face is ½ (A(U_i, n_f) + λ_f I) A_f. The flux
//!   Jacobian is linear in n and a closed cell has Σ_f n_f A_f = 0, so with the boundary
//!   faces' own parts these add up to ½ Σ_f λ_f A_f I: away from the boundary the block is a
//!   multiple of the identity, dominant by construction, which the Jacobi sweeps need.
//!   Roe's exact first-order Jacobian would cost the derivative of |Ã| per face for no gain
//!   in the converged state, which depends on the residual only.
//! - a boundary face adds ½ (A(U_g, n_f) − λ_f I) A_f ∂U_g/∂U_i, the ghost's dependence on its
//!   cell by differences of [`ghost`]: frozen ghosts reflect the waves at subsonic inflow and
//!   outflow and cost a factor of 5 in iterations on a channel. The block is then a
//!   full 5 × 5 one, inverted once per iteration.
//! - the neighbour block ½ (A(U_j, n_f) − λ_f I) A_f is applied to ΔU_j without storing it.
//!
//! The linear system is relaxed by Jacobi sweeps, each cell's new ΔU from the previous
//! sweep's neighbours gathered in its fixed face order: bitwise the same on any number of
//! threads, like the residual. A subsonic inflow's ghost velocity goes as √(p0 − p): start
//! from a flowing state, not from rest at p0, where its derivative is unbounded.
use crate::boundary::ghost;
use crate::gas::Cons;
use crate::gradients::MIN_CELLS;
use crate::residual::Solver;
use crate::time::{Method, Steady, SteadyIteration};
use rayon::prelude::*;

/// How the implicit iteration runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Implicit {
    /// Courant number of the pseudo-time term Ω_i/Δτ_i.
    pub cfl: f64,
    /// Jacobi sweeps per iteration, after the diagonal's first guess −D⁻¹R.
    pub sweeps: usize,
}

/// `u` iterated towards steady state until the RMS of R_ρ/Ω has dropped by `drop` or after
/// `max` iterations (the history as [`crate::time::steady`] records it).
pub fn steady_implicit(
    s: &mut Solver,
    u: &mut [Cons],
    how: Implicit,
    limits: (f64, usize),
) -> Steady {
    SteadyIteration::new(Method::Implicit(how), u.len()).run(s, u, limits)
}

/// The buffers of the Jacobi sweeps: the inverted diagonal blocks and two iterates of ΔU.
pub(crate) struct Jacobi {
    du: Vec<Cons>,
    next: Vec<Cons>,
    inverse: Vec<Block>,
}

impl Jacobi {
    /// Buffers for `cells` cells.
    pub(crate) fn new(cells: usize) -> Jacobi {
        Jacobi {
            du: vec![[0.0; 5]; cells],
            next: vec![[0.0; 5]; cells],
            inverse: vec![[[0.0; 5]; 5]; cells],
        }
    }
}

/// One implicit update of `u` from its residual `r` and pseudo-time steps `dts`, after
/// [`Solver::time_steps`] of `u` (whose spectral radii and states the blocks read).
pub(crate) fn relax(
    s: &Solver,
    u: &mut [Cons],
    (r, dts): (&[Cons], &[f64]),
    how: Implicit,
    jacobi: &mut Jacobi,
) {
    let Jacobi { du, next, inverse } = jacobi;
    let (g, gas, prim, wave) = (&s.geometry, s.gas, &s.prim, &s.wave);
    let volume = &g.volume;
    (inverse.par_iter_mut().with_min_len(MIN_CELLS))
        .enumerate()
        .for_each(|(c, out)| {
            let radii: f64 = g.faces_of(c).iter().map(|&f| wave[f as usize]).sum();
            let d = volume[c] / dts[c] + 0.5 * radii;
            let mut block: Block =
                std::array::from_fn(|a| std::array::from_fn(|b| if a == b { d } else { 0.0 }));
            for &f in g.faces_of(c) {
                if f as usize >= g.internal {
                    let b = boundary_block(s, f as usize);
                    (0..5).for_each(|v| (0..5).for_each(|k| block[v][k] += b[v][k]));
                }
            }
            *out = invert(block);
        });
    for sweep in 0..=how.sweeps {
        (next.par_iter_mut().with_min_len(MIN_CELLS))
            .enumerate()
            .for_each(|(c, out)| {
                let mut rhs = r[c].map(|x| -x);
                if sweep > 0 {
                    for &f in g.faces_of(c) {
                        let f = f as usize;
                        let (j, sign) = g.across(f, c);
                        if j >= g.cells {
                            continue;
                        }
                        let normal = g.normal[f].map(|x| sign * x);
                        let a = gas.flux_jacobian_times(&prim[j], normal, &du[j]);
                        for v in 0..5 {
                            rhs[v] -= 0.5 * (g.area[f] * a[v] - wave[f] * du[j][v]);
                        }
                    }
                }
                let m = &inverse[c];
                *out = std::array::from_fn(|v| (0..5).map(|k| m[v][k] * rhs[k]).sum());
            });
        std::mem::swap(du, next);
    }
    (u.par_iter_mut().with_min_len(MIN_CELLS))
        .zip(&*du)
        .for_each(|(u, du)| (0..5).for_each(|v| u[v] += du[v]));
}

/// A 5 × 5 block, by rows.
type Block = [[f64; 5]; 5];

/// ½ A_f (A(U_g, n_f) − λ_f I) ∂U_g/∂U_c of boundary face `f`: its flux's dependence on its
/// cell c through the ghost g, the ghost's Jacobian by one-sided differences.
fn boundary_block(s: &Solver, f: usize) -> Block {
    let (g, gas) = (&s.geometry, s.gas);
    let (c, j) = (g.left[f] as usize, g.right[f] as usize);
    let bc = &s.boundaries[g.patch[f - g.internal] as usize];
    let u = gas.cons(&s.prim[c]);
    let before = gas.cons(&s.prim[j]);
    let h = 1e-7 * u.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    let mut out = [[0.0; 5]; 5];
    for k in 0..5 {
        let mut moved = u;
        moved[k] += h;
        let w = ghost(gas, bc, &gas.prim(&moved), g.normal[f], g.centroid[j], 0.0);
        let after = gas.cons(&w);
        let column: Cons = std::array::from_fn(|v| (after[v] - before[v]) / h);
        let a = gas.flux_jacobian_times(&s.prim[j], g.normal[f], &column);
        for v in 0..5 {
            out[v][k] = 0.5 * (g.area[f] * a[v] - s.wave[f] * column[v]);
        }
    }
    out
}

/// The inverse of `m` by Gauss–Jordan elimination with partial pivoting.
fn invert(mut m: Block) -> Block {
    let mut inv: Block = std::array::from_fn(|a| std::array::from_fn(|b| (a == b) as u8 as f64));
    for col in 0..5 {
        let pivot = (col..5)
            .max_by(|&a, &b| m[a][col].abs().total_cmp(&m[b][col].abs()))
            .unwrap_or(col);
        m.swap(col, pivot);
        inv.swap(col, pivot);
        let p = 1.0 / m[col][col];
        for k in 0..5 {
            m[col][k] *= p;
            inv[col][k] *= p;
        }
        for row in 0..5 {
            if row != col {
                let factor = m[row][col];
                for k in 0..5 {
                    m[row][k] -= factor * m[col][k];
                    inv[row][k] -= factor * inv[col][k];
                }
            }
        }
    }
    inv
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary;
    use crate::flux::Limiter;
    use crate::gas::Gas;
    use crate::time::{steady, FOUR_STAGE};
    use ferroflow_mesh::generate::{box_mesh, BoxCells};

    /// A channel of `cells` hexahedra between an inflow of totals (1, 1) and an outflow at
    /// the pressure of Mach 0.5, and a slow flow to start from.
    fn channel(cells: [usize; 3]) -> (Solver, Vec<Cons>) {
        let mesh = box_mesh(BoxCells::Hex, cells, [3.0, 1.0, 0.25]).unwrap();
        let p = 1.0 / 1.05f64.powf(3.5);
        let s = Solver::new(&mesh, Gas::AIR, Limiter::VanAlbada, &boundary::channel(p)).unwrap();
        let start = s.sample(|x| [1.0, 0.3 + 0.05 * x[0], 0.0, 0.0, p]);
        (s, start)
    }

    /// The channel of `time`'s tests, twice as long: both iterations reach a 1e-10 drop and
    /// the same state, the implicit one in a tenth of the iterations or fewer (1,955
    /// explicit against 175 when written).
    #[test]
    fn newton_jacobi_converges_the_channel_in_a_tenth_of_the_iterations() {
        let (mut s, start) = channel([24, 4, 1]);
        let mut explicit = start.clone();
        let e = steady(&mut s, &mut explicit, 3.0, &FOUR_STAGE, (1e-10, 20_000));
        let mut implicit = start;
        let how = Implicit {
            cfl: 1000.0,
            sweeps: 16,
        };
        let i = steady_implicit(&mut s, &mut implicit, how, (1e-10, 20_000));
        assert!(e.iterations < 20_000 && i.iterations < 20_000);
        assert!(
            10 * i.iterations <= e.iterations,
            "implicit {} against explicit {} iterations",
            i.iterations,
            e.iterations
        );
        for (a, b) in explicit.iter().zip(&implicit) {
            assert!((0..5).all(|v| (a[v] - b[v]).abs() < 1e-9), "{a:?} {b:?}");
        }
    }

    #[test]
    fn one_and_three_threads_give_the_same_bits() {
        let run = || {
            let (mut s, mut u) = channel([48, 24, 2]);
            let how = Implicit {
                cfl: 1000.0,
                sweeps: 4,
            };
            steady_implicit(&mut s, &mut u, how, (0.0, 3));
            u.iter()
                .flatten()
                .map(|x| x.to_bits())
                .collect::<Vec<u64>>()
        };
        let pool = |n| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .build()
                .unwrap()
        };
        assert_eq!(pool(1).install(run), pool(3).install(run));
    }
}
