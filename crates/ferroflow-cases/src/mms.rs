//! Manufactured solutions: smooth trigonometric fields with the matching source terms, and the
//! observed order of accuracy of the discretisation error on a sequence of grids. With the
//! energy equation, T is manufactured too and couples both ways: it drives the momentum
//! equations through buoyancy and is advected by the manufactured velocity.
use ferroflow_ac::{Energy, Numerics, Physics, Problem};
use ferroflow_core::{Fields, Layout, ProblemError, Real};
use std::f64::consts::PI;

/// Wavenumber of every factor.
const K: f64 = PI;
/// Phase per axis, so that no boundary value or symmetry is special.
const PHASE: [f64; 3] = [0.4, 0.9, 0.2];

#[derive(Debug, Clone, Copy)]
enum Trig {
    Sin,
    Cos,
}

/// amp · Π_d f_d(K x_d + PHASE_d) over the active axes.
#[derive(Debug, Clone, Copy)]
struct Term {
    amp: f64,
    f: [Trig; 3],
}

impl Term {
    fn factor(f: Trig, x: f64, d: usize, derivative: bool) -> f64 {
        let a = K * x + PHASE[d];
        match (f, derivative) {
            (Trig::Sin, false) => a.sin(),
            (Trig::Cos, false) => a.cos(),
            (Trig::Sin, true) => K * a.cos(),
            (Trig::Cos, true) => -K * a.sin(),
        }
    }

    /// Value (`along = None`) or first derivative along an axis.
    fn eval(&self, x: [f64; 3], dim: usize, along: Option<usize>) -> f64 {
        (0..dim)
            .map(|d| Term::factor(self.f[d], x[d], d, along == Some(d)))
            .product::<f64>()
            * self.amp
    }

    /// Each factor's second derivative is -K² times itself.
    fn laplacian(&self, x: [f64; 3], dim: usize) -> f64 {
        -(dim as f64) * K * K * self.eval(x, dim, None)
    }
}

/// The exact solution: p and a divergence-free velocity (amplitudes along the axes sum to 0),
/// and T with the energy equation (isothermal walls: T held at its exact values).
#[derive(Debug, Clone, Copy)]
pub struct Manufactured {
    dim: usize,
    /// p, u, v, w, T.
    terms: [Term; 5],
    /// Fluid properties of the study.
    pub physics: Physics,
    /// The energy equation, if manufactured.
    pub energy: Option<Energy>,
}

impl Manufactured {
    /// The 2D or 3D solution used by `verify mms`.
    pub fn new(dim: usize) -> Manufactured {
        use Trig::*;
        let amps = if dim == 2 {
            [1.0, -1.0, 0.0]
        } else {
            [1.0, 1.0, -2.0]
        };
        Manufactured {
            dim,
            terms: [
                Term {
                    amp: 0.5,
                    f: [Cos, Sin, Cos],
                },
                Term {
                    amp: amps[0],
                    f: [Sin, Cos, Cos],
                },
                Term {
                    amp: amps[1],
                    f: [Cos, Sin, Cos],
                },
                Term {
                    amp: amps[2],
                    f: [Cos, Cos, Sin],
                },
                Term {
                    amp: 0.8,
                    f: [Sin, Sin, Cos],
                },
            ],
            physics: Physics {
                viscosity: 0.1,
                density: 1.0,
            },
            energy: None,
        }
    }

    /// The 2D or 3D solution with the energy equation (`verify mms --energy`): α differs from
    /// ν, so that the time step's max(ν, α) and min(ν, α) both matter, and gravity is oblique.
    pub fn with_energy(dim: usize) -> Manufactured {
        Manufactured {
            energy: Some(Energy {
                diffusivity: 0.07,
                buoyancy: [0.3, -0.8, 0.5],
                t_ref: 0.1,
            }),
            ..Manufactured::new(dim)
        }
    }

    /// The term of variable `var` (T is the variable after the velocity components).
    fn term(&self, var: usize) -> &Term {
        if var == 1 + self.dim {
            &self.terms[4]
        } else {
            &self.terms[var]
        }
    }

    /// Exact value of variable `var` (p, u, v[, w][, T]) at `x`.
    pub fn exact(&self, var: usize, x: [f64; 3]) -> f64 {
        self.term(var).eval(x, self.dim, None)
    }

    /// Source of equation `var` making the exact fields a steady solution (0 for continuity:
    /// the velocity is divergence-free).
    pub fn source(&self, var: usize, x: [f64; 3]) -> f64 {
        if var == 0 {
            return 0.0;
        }
        let dim = self.dim;
        let f = self.term(var);
        let convection: f64 = (0..dim)
            .map(|d| self.exact(1 + d, x) * f.eval(x, dim, Some(d)))
            .sum();
        if var == 1 + dim {
            let alpha = self.energy.map_or(0.0, |e| e.diffusivity);
            return convection - alpha * f.laplacian(x, dim);
        }
        let c = var - 1;
        let grad_p = self.terms[0].eval(x, dim, Some(c));
        let buoyancy = self
            .energy
            .map_or(0.0, |e| e.buoyancy[c] * (self.exact(1 + dim, x) - e.t_ref));
        convection + grad_p / self.physics.density
            - self.physics.viscosity * f.laplacian(x, dim)
            - buoyancy
    }

    /// Problem on the unit square/cube with `n` nodes per axis: exact velocity (and T) on the
    /// walls, zero interior start, sources from [`Manufactured::source`].
    pub fn problem<R: Real>(
        &self,
        n: usize,
        numerics: Numerics,
    ) -> Result<Problem<R>, ProblemError> {
        let layout = Layout::new(self.dim, [n; 3]);
        let nvar = 1 + self.dim + self.energy.is_some() as usize;
        let mut initial = Fields::zeros(layout, nvar);
        let mut source = Fields::zeros(layout, nvar);
        let h = 1.0 / (n - 1) as f64;
        layout.for_each_node(|i, j, k, o| {
            let x = [i as f64 * h, j as f64 * h, k as f64 * h];
            let on_wall = (0..self.dim).any(|d| [i, j, k][d] == 0 || [i, j, k][d] == n - 1);
            for v in 0..nvar {
                if on_wall && v > 0 {
                    initial.vars[v][o] = R::of(self.exact(v, x));
                }
                source.vars[v][o] = R::of(self.source(v, x));
            }
        });
        let problem = Problem::new(layout, [1.0; 3], self.physics, numerics, initial)?;
        match self.energy {
            Some(energy) => problem.with_energy(energy)?,
            None => problem,
        }
        .with_source(source)
    }

    /// Discretisation error of `fields` per variable: (L2, L∞) over all nodes. Pressure is
    /// compared after removing the mean difference (it is defined up to a constant).
    pub fn errors<R: Real>(&self, problem: &Problem<R>, fields: &Fields<R>) -> Vec<(f64, f64)> {
        let l = fields.layout;
        (0..fields.vars.len())
            .map(|v| {
                let mut diff = Vec::with_capacity(l.nodes());
                l.for_each_node(|i, j, k, o| {
                    let x = problem.coordinates(i, j, k);
                    diff.push(fields.vars[v][o].f64() - self.exact(v, x));
                });
                if v == 0 {
                    let mean = diff.iter().sum::<f64>() / diff.len() as f64;
                    diff.iter_mut().for_each(|d| *d -= mean);
                }
                let l2 = (diff.iter().map(|d| d * d).sum::<f64>() / diff.len() as f64).sqrt();
                let linf = diff.iter().fold(0.0f64, |m, d| m.max(d.abs()));
                (l2, linf)
            })
            .collect()
    }
}

/// Error of one variable on one grid, with the observed orders against the previous grid.
#[derive(Debug, Clone, PartialEq)]
pub struct MmsRow {
    /// Nodes per axis.
    pub n: usize,
    /// Variable name.
    pub variable: &'static str,
    /// L2 (root-mean-square) error.
    pub l2_error: f64,
    /// Maximum error.
    pub linf_error: f64,
    /// Observed L2 order against the next coarser grid.
    pub l2_order: Option<f64>,
    /// Observed L∞ order against the next coarser grid.
    pub linf_order: Option<f64>,
}

/// The observed orders on the finest pair of grids of a study: `(variable, norm, order)` with
/// norm `L2` or `Linf`, in the order of `rows`.
pub fn finest_orders(rows: &[MmsRow]) -> Vec<(&'static str, &'static str, f64)> {
    let finest = rows.iter().map(|r| r.n).max();
    rows.iter()
        .filter(|r| Some(r.n) == finest)
        .flat_map(|r| {
            [("L2", r.l2_order), ("Linf", r.linf_order)]
                .into_iter()
                .filter_map(move |(norm, order)| Some((r.variable, norm, order?)))
        })
        .collect()
}

/// Observed order from errors on two grids with spacings `h_coarse`, `h_fine`.
pub fn observed_order(e_coarse: f64, e_fine: f64, h_coarse: f64, h_fine: f64) -> f64 {
    (e_coarse / e_fine).ln() / (h_coarse / h_fine).ln()
}

/// Runs the manufactured solution to convergence on each grid of `sizes` (ascending) with the
/// solver `solve` (which iterates a backend to convergence and returns the referenced state),
/// and returns the error table.
pub fn study<R: Real>(
    mms: &Manufactured,
    sizes: &[usize],
    numerics: Numerics,
    mut solve: impl FnMut(&Problem<R>) -> Result<Fields<R>, String>,
) -> Result<Vec<MmsRow>, String> {
    let mut rows: Vec<MmsRow> = Vec::new();
    let mut previous: Option<(f64, Vec<(f64, f64)>)> = None;
    for &n in sizes {
        let problem = mms.problem::<R>(n, numerics).map_err(|e| e.to_string())?;
        let fields = solve(&problem)?;
        let errors = mms.errors(&problem, &fields);
        let names = problem.variable_names();
        let h = 1.0 / (n - 1) as f64;
        for (v, &(l2, linf)) in errors.iter().enumerate() {
            let orders = previous.as_ref().map(|(hc, ec)| {
                (
                    observed_order(ec[v].0, l2, *hc, h),
                    observed_order(ec[v].1, linf, *hc, h),
                )
            });
            rows.push(MmsRow {
                n,
                variable: names[v],
                l2_error: l2,
                linf_error: linf,
                l2_order: orders.map(|o| o.0),
                linf_order: orders.map(|o| o.1),
            });
        }
        previous = Some((h, errors));
    }
    Ok(rows)
}
