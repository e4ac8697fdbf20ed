use num_traits::Float;
use std::fmt::{Debug, Display};

/// Floating-point type of a run. One generic code path serves `f32` and `f64`.
pub trait Real: Float + Send + Sync + Default + Debug + Display + 'static {
    /// Name used in case files, summaries and kernel macros.
    const NAME: &'static str;
    /// Size in bytes (for traffic and roofline accounting).
    const BYTES: usize = std::mem::size_of::<Self>();
    /// The values one 64-byte vector register holds (8 f64 or 16 f32): the nodes the CPU's
    /// explicit pass computes at once with AVX-512.
    type Vector: Copy + Default + Send + Sync + AsRef<[Self]> + AsMut<[Self]>;
    /// The values one 32-byte vector register holds (4 f64 or 8 f32): the nodes the CPU's
    /// explicit pass computes at once with AVX2.
    type Half: Copy + Default + Send + Sync + AsRef<[Self]> + AsMut<[Self]>;
    /// Converts an `f64` constant (rounding for `f32`).
    fn of(x: f64) -> Self;
    /// Widens to `f64` (exact).
    fn f64(self) -> f64;
}

impl Real for f64 {
    const NAME: &'static str = "f64";
    type Vector = [f64; 8];
    type Half = [f64; 4];
    #[inline(always)]
    fn of(x: f64) -> Self {
        x
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self
    }
}

impl Real for f32 {
    const NAME: &'static str = "f32";
    type Vector = [f32; 16];
    type Half = [f32; 8];
    #[inline(always)]
    fn of(x: f64) -> Self {
        x as f32
    }
    #[inline(always)]
    fn f64(self) -> f64 {
        self as f64
    }
}
