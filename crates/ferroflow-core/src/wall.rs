//! Which nodes the physical boundary fill writes. Every backend fills the sides in x, y, z
//! order over these ranges, so that edges and corners get the same values bit for bit.
use crate::{Layout, Side};

/// The face nodes of one side that the boundary fill starts from: each is a wall node, from
/// which the fill reads inward and writes the ghosts beyond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallFace {
    /// Axis normal to the side.
    pub axis: usize,
    /// Index of the wall node along `axis` (0, or `n - 1` on a high side).
    pub wall: isize,
    /// Memory stride from a wall node to the node inside it (negative on a high side).
    pub inward: isize,
    /// The two other axes, in increasing order: the first is walked fastest, so that on y and
    /// z walls consecutive nodes lie in contiguous x rows.
    pub tangential: [usize; 2],
    /// Node range `[lo, hi)` along each tangential axis. Axes filled earlier (lower index)
    /// span their ghosts, which they have already filled, so that edges and corners come from
    /// filled values; later axes span their interior nodes; an inactive axis its single node.
    pub ranges: [(isize, isize); 2],
}

impl WallFace {
    /// Number of face nodes.
    pub fn len(&self) -> usize {
        self.ranges
            .iter()
            .map(|(lo, hi)| (hi - lo) as usize)
            .product()
    }

    /// Whether the face has no nodes (never, for a valid layout).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Layout {
    /// The face nodes of `side` that the boundary fill starts from (see [`WallFace`]).
    pub fn wall_face(&self, side: Side) -> WallFace {
        let a = side.axis();
        let range = |e: usize| -> (isize, isize) {
            let (n, g) = (self.n[e] as isize, self.ghost[e] as isize);
            if e >= self.dim {
                (0, 1)
            } else if e < a {
                (-g, n + g)
            } else {
                (1, n - 1)
            }
        };
        let tangential = match a {
            0 => [1, 2],
            1 => [0, 2],
            _ => [0, 1],
        };
        let stride = self.stride[a] as isize;
        let (wall, inward) = if side.is_high() {
            (self.n[a] as isize - 1, -stride)
        } else {
            (0, stride)
        };
        WallFace {
            axis: a,
            wall,
            inward,
            tangential,
            ranges: tangential.map(range),
        }
    }

    /// Calls `f(offset, inward)` for each face node of `side` (the first tangential axis
    /// fastest), with [`WallFace::inward`]. Each node's fill touches only its own column along
    /// the side's axis, so the walk order does not change the values.
    pub fn for_each_wall_node(&self, side: Side, mut f: impl FnMut(usize, isize)) {
        let face = self.wall_face(side);
        let [t1, t2] = face.tangential;
        let [r1, r2] = face.ranges;
        for x2 in r2.0..r2.1 {
            for x1 in r1.0..r1.1 {
                let mut ijk = [0isize; 3];
                ijk[face.axis] = face.wall;
                ijk[t1] = x1;
                ijk[t2] = x2;
                f(self.index(ijk[0], ijk[1], ijk[2]), face.inward);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GHOST;

    #[test]
    fn wall_faces_of_every_side() {
        let g = GHOST as isize;
        let (l3, l2) = (Layout::new(3, [6, 7, 8]), Layout::new(2, [6, 7, 0]));
        let (sy, sz) = (l3.stride[1] as isize, l3.stride[2] as isize);
        assert_eq!(l2.stride[1], l3.stride[1]);
        // x walls: y and z span their interior; y walls: x with ghosts, z interior; z walls:
        // x and y with ghosts. In 2D z is inactive: its single node.
        let expected = [
            (l3, Side::XLo, 0, 1, [1, 2], [(1, 6), (1, 7)]),
            (l3, Side::XHi, 5, -1, [1, 2], [(1, 6), (1, 7)]),
            (l3, Side::YLo, 0, sy, [0, 2], [(-g, 6 + g), (1, 7)]),
            (l3, Side::YHi, 6, -sy, [0, 2], [(-g, 6 + g), (1, 7)]),
            (l3, Side::ZLo, 0, sz, [0, 1], [(-g, 6 + g), (-g, 7 + g)]),
            (l3, Side::ZHi, 7, -sz, [0, 1], [(-g, 6 + g), (-g, 7 + g)]),
            (l2, Side::XLo, 0, 1, [1, 2], [(1, 6), (0, 1)]),
            (l2, Side::XHi, 5, -1, [1, 2], [(1, 6), (0, 1)]),
            (l2, Side::YLo, 0, sy, [0, 2], [(-g, 6 + g), (0, 1)]),
            (l2, Side::YHi, 6, -sy, [0, 2], [(-g, 6 + g), (0, 1)]),
        ];
        for (l, side, wall, inward, tangential, ranges) in expected {
            let face = WallFace {
                axis: side.axis(),
                wall,
                inward,
                tangential,
                ranges,
            };
            assert_eq!(l.wall_face(side), face, "{}D {side:?}", l.dim);
        }
    }

    #[test]
    fn wall_nodes_walk_the_face_first_axis_fastest() {
        for l in [Layout::new(2, [6, 7, 0]), Layout::new(3, [6, 7, 8])] {
            for side in Side::ALL.into_iter().take(2 * l.dim) {
                let face = l.wall_face(side);
                let mut offsets = Vec::new();
                l.for_each_wall_node(side, |o, inward| {
                    assert_eq!(inward, face.inward);
                    offsets.push(o);
                });
                assert_eq!(offsets.len(), face.len());
                let [t1, t2] = face.tangential;
                let [r1, r2] = face.ranges;
                let node = |x1: isize, x2: isize| {
                    let mut ijk = [0isize; 3];
                    ijk[face.axis] = face.wall;
                    ijk[t1] = x1;
                    ijk[t2] = x2;
                    l.index(ijk[0], ijk[1], ijk[2])
                };
                assert_eq!(offsets[0], node(r1.0, r2.0));
                assert_eq!(offsets[1], node(r1.0 + 1, r2.0));
                assert_eq!(*offsets.last().unwrap(), node(r1.1 - 1, r2.1 - 1));
            }
        }
    }
}
