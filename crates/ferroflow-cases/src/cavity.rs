//! Lid-driven cavity: problem set-up, centreline profiles and comparison with reference data.
use crate::reference::Profile;
use crate::walls::{box_problem, Values, Wall};
use ferroflow_ac::{Numerics, Physics, Problem};
use ferroflow_core::{NodeValues, ProblemError, Real, Side};

/// Unit square (2D) or cube (3D), lid y = 1 (patch `ymax`) moving with u = `lid` along x,
/// other walls at rest, fluid at rest initially, ν = lid · 1 / Re, ρ = 1.
pub fn lid_driven<R: Real>(
    dim: usize,
    n: [usize; 3],
    reynolds: f64,
    lid: f64,
    numerics: Numerics,
) -> Result<Problem<R>, ProblemError> {
    ProblemError::positive("physics.reynolds", reynolds)?;
    let physics = Physics {
        viscosity: lid / reynolds,
        density: 1.0,
    };
    let walls = lid_walls(dim, lid);
    box_problem(dim, n, 1.0, physics, numerics, &walls, None, Values::Whole)
}

/// The walls of the lid-driven cavity: `ymax` moving with u = `lid`, the others at rest.
pub fn lid_walls(dim: usize, lid: f64) -> Vec<Wall> {
    let mut walls = vec![Wall::REST; 2 * dim];
    walls[Side::YHi as usize].velocity = [lid, 0.0, 0.0];
    walls
}

/// Samples `(coordinate, value)` along a line.
pub type Line = Vec<(f64, f64)>;

/// Multilinear interpolation of variable `var` at point `x` (inside the grid).
pub fn interpolate<R: Real>(
    problem: &Problem<R>,
    f: &dyn NodeValues,
    var: usize,
    x: [f64; 3],
) -> f64 {
    let l = f.grid();
    let mut base = [0usize; 3];
    let mut w = [0.0f64; 3];
    for d in 0..l.dim {
        let s = (x[d] / problem.spacing[d]).clamp(0.0, (l.n[d] - 1) as f64);
        base[d] = (s.floor() as usize).min(l.n[d] - 2);
        w[d] = s - base[d] as f64;
    }
    let corners = 1usize << l.dim;
    (0..corners)
        .map(|c| {
            let mut idx = base;
            let mut weight = 1.0;
            for d in 0..l.dim {
                let hi = (c >> d) & 1 == 1;
                idx[d] += hi as usize;
                weight *= if hi { w[d] } else { 1.0 - w[d] };
            }
            weight * f.value(var, idx[0], idx[1], idx[2])
        })
        .sum()
}

/// The two centreline profiles at the grid nodes: u along y through the centre (x = L/2, and
/// z = L/2 in 3D) and v along x through the centre (y = L/2).
pub fn centrelines<R: Real>(problem: &Problem<R>, f: &dyn NodeValues) -> (Line, Line) {
    let l = f.grid();
    let centre: [f64; 3] = std::array::from_fn(|d| 0.5 * (l.n[d] - 1) as f64 * problem.spacing[d]);
    let line = |var: usize, axis: usize| {
        (0..l.n[axis])
            .map(|m| {
                let mut x = centre;
                x[axis] = m as f64 * problem.spacing[axis];
                (x[axis], interpolate(problem, f, var, x))
            })
            .collect::<Vec<_>>()
    };
    (line(1, 1), line(2, 0))
}

/// Largest deviation of `computed` (interpolated linearly) from the reference stations, and
/// the station where it occurs.
pub fn max_deviation(computed: &[(f64, f64)], reference: &Profile) -> (f64, f64) {
    reference
        .points
        .iter()
        .map(|&(x, r)| ((linear(computed, x) - r).abs(), x))
        .fold((0.0, f64::NAN), |a, b| if b.0 > a.0 { b } else { a })
}

fn linear(points: &[(f64, f64)], x: f64) -> f64 {
    let k = points
        .partition_point(|p| p.0 < x)
        .clamp(1, points.len() - 1);
    let ((x0, y0), (x1, y1)) = (points[k - 1], points[k]);
    y0 + (y1 - y0) * (x - x0) / (x1 - x0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interpolation_is_exact_for_linear_fields() {
        let num = Numerics {
            cfl: 0.5,
            ..Numerics::default()
        };
        let mut p = lid_driven::<f64>(3, [6, 7, 8], 100.0, 1.0, num).unwrap();
        let l = p.layout;
        let h = p.spacing;
        l.for_each_node(|i, j, k, o| {
            p.initial.vars[2][o] =
                1.0 + 2.0 * i as f64 * h[0] - j as f64 * h[1] + 0.5 * k as f64 * h[2];
        });
        let x = [0.33, 0.71, 0.52];
        let v = interpolate(&p, &p.initial, 2, x);
        assert!((v - (1.0 + 0.66 - 0.71 + 0.26)).abs() < 1e-12);
        let prof = Profile {
            source: "t",
            points: vec![(0.25, 1.0)],
        };
        assert!((max_deviation(&[(0.0, 0.0), (0.5, 1.0)], &prof).0 - 0.5).abs() < 1e-15);
    }
}
