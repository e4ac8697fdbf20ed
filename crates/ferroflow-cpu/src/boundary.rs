//! Physical boundary conditions: fill boundary nodes and ghost layers after each pass.
use crate::formulas::{extrapolate_quadratic, extrapolate_zero_gradient};
use ferroflow_ac::SideBc;
use ferroflow_core::{Fields, Layout, Real, Side, GHOST};

/// Fills every side of `f` in x, y, z order. Along axes filled earlier the range covers the
/// ghosts too, so edges and corners end up consistent. `temperature` is the index of T, if
/// the energy equation is solved.
pub(crate) fn fill_boundaries<R: Real>(
    f: &mut Fields<R>,
    sides: &[SideBc; 6],
    temperature: Option<usize>,
) {
    let l = f.layout;
    for side in Side::ALL.into_iter().take(2 * l.dim) {
        // Velocity at a wall, and T at an isothermal one, are fixed data held in the boundary
        // nodes; pressure is extrapolated to the wall node and its ghosts.
        let adiabatic = match sides[side as usize] {
            SideBc::Wall => None,
            SideBc::AdiabaticWall => temperature,
            // A halo: filled by the exchange with the neighbouring block.
            SideBc::Interface => continue,
        };
        for_each_face_node(&l, side, |o, inward| {
            extrapolate_outward(&mut f.vars[0], o, inward);
            if let Some(t) = adiabatic {
                mirror_outward(&mut f.vars[t], o, inward);
            }
        });
    }
}

/// Zero normal gradient at the wall node `o`: its value from the two nodes inside it, and the
/// ghosts beyond it mirroring the nodes inside (T is even about the wall).
fn mirror_outward<R: Real>(t: &mut [R], o: usize, inward: isize) {
    let step = |n: isize| (o as isize + n * inward) as usize;
    t[o] = extrapolate_zero_gradient(t[step(1)], t[step(2)]);
    for layer in 1..=GHOST as isize {
        t[step(-layer)] = t[step(layer)];
    }
}

/// Fills the wall node at `o` and the ghosts beyond it, each from the three nodes inside it.
fn extrapolate_outward<R: Real>(p: &mut [R], o: usize, inward: isize) {
    let step = |n: isize| (o as isize + n * inward) as usize;
    for layer in 0..=GHOST as isize {
        let t = -layer;
        p[step(t)] = extrapolate_quadratic(p[step(t + 1)], p[step(t + 2)], p[step(t + 3)]);
    }
}

/// Calls `f(offset, inward_stride)` for each boundary node of `side`. Tangential axes filled
/// before this one (lower index) span their ghosts; later ones span their interior nodes.
fn for_each_face_node(l: &Layout, side: Side, mut f: impl FnMut(usize, isize)) {
    let a = side.axis();
    let range = |e: usize| -> (isize, isize) {
        let (n, g) = (l.n[e] as isize, l.ghost[e] as isize);
        if e >= l.dim {
            (0, 1)
        } else if e < a {
            (-g, n + g)
        } else {
            (1, n - 1)
        }
    };
    let wall = if side.is_high() {
        l.n[a] as isize - 1
    } else {
        0
    };
    let inward = if side.is_high() {
        -(l.stride[a] as isize)
    } else {
        l.stride[a] as isize
    };
    let (t1, t2) = ((a + 1) % 3, (a + 2) % 3);
    let (r1, r2) = (range(t1), range(t2));
    for x2 in r2.0..r2.1 {
        for x1 in r1.0..r1.1 {
            let mut ijk = [0isize; 3];
            ijk[a] = wall;
            ijk[t1] = x1;
            ijk[t2] = x2;
            f(l.index(ijk[0], ijk[1], ijk[2]), inward);
        }
    }
}
