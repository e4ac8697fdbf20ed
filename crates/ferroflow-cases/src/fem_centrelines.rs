//! The centreline profiles of a finite-element lid-driven cube: the P1 velocity sampled along
//! the lines of the structured cavity's profiles (u along y at x = z = centre, v along x at
//! y = z = centre) at the tet box's node stations, in the lid's units (coordinate / edge,
//! velocity / lid speed), and their deviation from published data.
use crate::cavity::Line;
use crate::fem::{FemCase, FemMeshKind, FemPatchKind};
use crate::reference::{self, Profile};
use ferroflow_mesh::generate::clustered;
use ferroflow_mesh::Mesh;

/// A finite-element case that is the lid-driven cube: a tet box of equal edges whose `ymax`
/// wall moves along +x, every other wall at rest.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LidCube {
    /// The box's low corner.
    origin: [f64; 3],
    /// Edge length L.
    edge: f64,
    /// Lid speed U.
    speed: f64,
    /// Hexahedra per axis.
    cells: [usize; 3],
    /// The nodes' clustering toward the walls (`mesh.grading`).
    grading: f64,
    /// U L / ν.
    pub reynolds: f64,
}

impl LidCube {
    /// The lid cube `case` describes, if it is one.
    pub fn of(case: &FemCase) -> Option<LidCube> {
        let [edge, ..] = case.mesh.size;
        let cube = case.mesh.kind == FemMeshKind::TetBox && case.mesh.size == [edge; 3];
        let lid = case.boundary.get("ymax")?;
        let [speed, 0.0, 0.0] = lid.velocity else {
            return None;
        };
        let walls_at_rest = (case.boundary.iter())
            .filter(|(name, _)| *name != "ymax")
            .all(|(_, p)| p.kind == FemPatchKind::Wall && p.velocity == [0.0; 3]);
        (cube && lid.kind == FemPatchKind::Wall && speed > 0.0 && walls_at_rest).then(|| LidCube {
            origin: case.mesh.origin,
            edge,
            speed,
            cells: case.mesh.cells,
            grading: case.mesh.grading,
            reynolds: speed * edge / case.physics.viscosity,
        })
    }

    /// Albensoeder & Kuhlmann's profiles where the Reynolds number is one they tabulate.
    pub fn reference(&self) -> Option<(Profile, Profile)> {
        let re = self.reynolds.round();
        let whole = (self.reynolds - re).abs() <= 1e-9 * re && re >= 1.0;
        whole.then(|| reference::albensoeder_kuhlmann(re as u32))?
    }

    /// u(y) at x = z = centre and v(x) at y = z = centre of the nodal velocity `u` on `mesh`
    /// (the case's tet box), at the box's node stations along each line.
    pub fn centrelines(&self, mesh: &Mesh, u: &[[f64; 3]]) -> (Line, Line) {
        let centre = self.origin.map(|o| o + 0.5 * self.edge);
        let line = |axis: usize, component: usize| {
            let n = self.cells[axis];
            let points: Vec<[f64; 3]> = (0..=n)
                .map(|k| {
                    let mut x = centre;
                    let s = clustered(k as f64 / n as f64, self.grading);
                    x[axis] = self.origin[axis] + self.edge * s;
                    x
                })
                .collect();
            let values = interpolate(mesh, u, axis, &points);
            (points.iter().zip(values))
                .map(|(x, v)| {
                    let s = (x[axis] - self.origin[axis]) / self.edge;
                    (s, v[component] / self.speed)
                })
                .collect()
        };
        (line(1, 0), line(0, 1))
    }
}

/// The P1 interpolant of the nodal `values` on the tetrahedra of `mesh` (a tet box's: four
/// nodes a cell) at `points`, which lie on one line along `axis` in increasing order: one pass
/// over the tetrahedra, each tested against the line by its bounding box first. A point no
/// tetrahedron holds gets NaN.
fn interpolate(
    mesh: &Mesh,
    values: &[[f64; 3]],
    axis: usize,
    points: &[[f64; 3]],
) -> Vec<[f64; 3]> {
    let mut out = vec![[f64::NAN; 3]; points.len()];
    let Some(first) = points.first() else {
        return out;
    };
    let across = [(axis + 1) % 3, (axis + 2) % 3];
    for (_, nodes) in mesh.cells.iter() {
        let x: [[f64; 3]; 4] = std::array::from_fn(|k| mesh.nodes[nodes[k] as usize]);
        let (lo, hi) = bounding_box(&x);
        let slack = 1e-9 * (hi[axis] - lo[axis]);
        if across
            .iter()
            .any(|&a| first[a] < lo[a] - slack || first[a] > hi[a] + slack)
        {
            continue;
        }
        let from = points.partition_point(|p| p[axis] < lo[axis] - slack);
        let to = points.partition_point(|p| p[axis] <= hi[axis] + slack);
        for k in from..to {
            if !out[k][0].is_nan() {
                continue;
            }
            if let Some(w) = barycentric(&x, points[k]) {
                out[k] = std::array::from_fn(|c| {
                    (nodes.iter().zip(w))
                        .map(|(&n, w)| w * values[n as usize][c])
                        .sum()
                });
            }
        }
    }
    out
}

fn bounding_box(x: &[[f64; 3]]) -> ([f64; 3], [f64; 3]) {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in x {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a]);
            hi[a] = hi[a].max(p[a]);
        }
    }
    (lo, hi)
}

/// The barycentric coordinates of `p` in the tetrahedron `x` if it lies inside (to rounding).
fn barycentric(x: &[[f64; 3]], p: [f64; 3]) -> Option<[f64; 4]> {
    let d = |a: [f64; 3]| std::array::from_fn::<f64, 3, _>(|c| a[c] - x[0][c]);
    let (e1, e2, e3, r) = (d(x[1]), d(x[2]), d(x[3]), d(p));
    let det = |a: [f64; 3], b: [f64; 3], c: [f64; 3]| {
        a[0] * (b[1] * c[2] - b[2] * c[1]) - a[1] * (b[0] * c[2] - b[2] * c[0])
            + a[2] * (b[0] * c[1] - b[1] * c[0])
    };
    let volume = det(e1, e2, e3);
    // Cramer's rule for r = λ1 e1 + λ2 e2 + λ3 e3.
    let l1 = det(r, e2, e3) / volume;
    let l2 = det(e1, r, e3) / volume;
    let l3 = det(e1, e2, r) / volume;
    let w = [1.0 - l1 - l2 - l3, l1, l2, l3];
    w.iter().all(|&w| w >= -1e-10).then_some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fem::FEM_BUILTIN;

    fn cube_case(extra: &str) -> FemCase {
        let text = format!("{}\n{extra}", FEM_BUILTIN[0].1);
        FemCase::from_toml(&text, "test").unwrap()
    }

    #[test]
    fn a_linear_field_is_sampled_exactly_off_the_node_lines() {
        // Odd cells: the centrelines cross the tetrahedra instead of running along edges.
        for grading in [0.0, 1.3] {
            sample_a_linear_field(grading);
        }
    }

    /// The centrelines of a linear field on an odd tet box clustered by `grading`, at its
    /// clustered node stations.
    fn sample_a_linear_field(grading: f64) {
        let mut case = cube_case("");
        case.mesh.cells = [5, 7, 3];
        case.mesh.size = [2.0; 3];
        case.mesh.origin = [1.0, -1.0, 0.5];
        case.mesh.grading = grading;
        case.boundary.get_mut("ymax").unwrap().velocity = [4.0, 0.0, 0.0];
        let lid = LidCube::of(&case).unwrap();
        let mesh = case.mesh().unwrap();
        let field = |x: [f64; 3]| [1.0 + 2.0 * x[0] - x[1] + 3.0 * x[2], x[0] - 0.5 * x[1], 0.0];
        let u: Vec<[f64; 3]> = mesh.nodes.iter().map(|&x| field(x)).collect();
        let (along_y, along_x) = lid.centrelines(&mesh, &u);
        assert_eq!((along_y.len(), along_x.len()), (8, 6));
        let stations: Vec<f64> = (0..=7)
            .map(|k| clustered(k as f64 / 7.0, grading))
            .collect();
        assert!(along_y.iter().zip(&stations).all(|(a, s)| a.0 == *s));
        for (s, v) in along_y {
            let exact = field([2.0, -1.0 + 2.0 * s, 1.5])[0] / 4.0;
            assert!(
                (v - exact).abs() < 1e-12,
                "u at y = {s}: {v} against {exact}"
            );
        }
        for (s, v) in along_x {
            let exact = field([1.0 + 2.0 * s, 0.0, 1.5])[1] / 4.0;
            assert!(
                (v - exact).abs() < 1e-12,
                "v at x = {s}: {v} against {exact}"
            );
        }
    }

    #[test]
    fn only_a_lid_cube_at_a_tabulated_reynolds_number_has_reference_profiles() {
        let mut re1000 = cube_case("");
        re1000.physics.viscosity = 1e-3;
        let lid = LidCube::of(&re1000).unwrap();
        assert!((lid.reynolds - 1000.0).abs() < 1e-9);
        assert!(lid.reference().is_some());
        assert!(LidCube::of(&cube_case("")).unwrap().reference().is_none());
        let side = "[boundary.xmin]\nkind = \"wall\"\nvelocity = [0.0, 1.0, 0.0]";
        let mut other = cube_case(side);
        assert!(LidCube::of(&other).is_none(), "a side wall moves");
        other.boundary.remove("xmin");
        other.mesh.size = [1.0, 2.0, 1.0];
        assert!(LidCube::of(&other).is_none(), "not a cube");
    }
}
