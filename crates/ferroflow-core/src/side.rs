/// One of the `2 × dim` sides of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// x = 0.
    XLo,
    /// x = Lx.
    XHi,
    /// y = 0.
    YLo,
    /// y = Ly.
    YHi,
    /// z = 0.
    ZLo,
    /// z = Lz.
    ZHi,
}

impl Side {
    /// All sides, in the order boundaries are filled (x, then y, then z).
    pub const ALL: [Side; 6] = [
        Side::XLo,
        Side::XHi,
        Side::YLo,
        Side::YHi,
        Side::ZLo,
        Side::ZHi,
    ];

    /// Axis normal to the side.
    pub fn axis(self) -> usize {
        self as usize / 2
    }

    /// The side across the block from this one (same axis, other end).
    pub fn opposite(self) -> Side {
        Side::ALL[self as usize ^ 1]
    }

    /// Whether the side is at the upper end of its axis.
    pub fn is_high(self) -> bool {
        self as usize % 2 == 1
    }
}
