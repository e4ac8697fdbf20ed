//! One number or four at once: the face and cell kernels are written once over [`Lane`], for
//! `f64` (the scalar loops) and for [`F64x4`] (four faces or cells in the lanes of an AVX2
//! register). Every operation is the same IEEE operation in either form (no fused
//! multiply-add, comparisons that are false on NaN, selects for branches), so four lanes give
//! bitwise the four scalar results.
use std::ops::{Add, Div, Mul, Neg, Sub};

/// A number, or several side by side, as the kernels compute with them.
pub trait Lane:
    Copy
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// What a comparison gives: a bool, or one per lane.
    type Mask: Copy;
    /// Numbers side by side.
    const LANES: usize;
    /// Lane i = `f(i)`: a gather.
    fn from_fn(f: impl FnMut(usize) -> f64) -> Self;
    /// `f(i, lane i)` for every lane: a scatter.
    fn each(self, f: impl FnMut(usize, f64));
    /// The lanes from `p`, `p + 1`, ….
    ///
    /// # Safety
    /// That many readable f64 at `p`.
    unsafe fn load(p: *const f64) -> Self;
    /// The lanes to `p`, `p + 1`, ….
    ///
    /// # Safety
    /// That many writable f64 at `p`.
    unsafe fn store(self, p: *mut f64);
    /// Numbers 0..4 of the records at `p(lane)`, value j holding number j of every lane (for
    /// four lanes, four loads and a 4 × 4 transpose in registers).
    ///
    /// # Safety
    /// Four readable f64 at each `p(lane)`.
    unsafe fn columns(p: impl Fn(usize) -> *const f64) -> [Self; 4];
    /// The inverse of [`Lane::columns`]: number j of the record at `p(lane)` set to
    /// `columns[j]`'s lane.
    ///
    /// # Safety
    /// Four writable f64 at each `p(lane)`.
    unsafe fn rows(columns: [Self; 4], p: impl Fn(usize) -> *mut f64);
    /// `x` in every lane.
    fn splat(x: f64) -> Self;
    /// Square root (correctly rounded).
    fn sqrt(self) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// self < other (false where either is NaN).
    fn lt(self, other: Self) -> Self::Mask;
    /// self ≤ other (false where either is NaN).
    fn le(self, other: Self) -> Self::Mask;
    /// Both masks.
    fn and(a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// `a` where `mask`, else `b`.
    fn select(mask: Self::Mask, a: Self, b: Self) -> Self;
    /// `f` of each lane: for what has no lane form (a power), one lane at a time.
    #[inline(always)]
    fn map(self, f: impl Fn(f64) -> f64) -> Self {
        // At most four lanes.
        let mut a = [0.0; 4];
        self.each(|i, x| a[i] = f(x));
        Self::from_fn(|i| a[i])
    }
}

impl Lane for f64 {
    type Mask = bool;
    const LANES: usize = 1;
    #[inline(always)]
    fn from_fn(mut f: impl FnMut(usize) -> f64) -> f64 {
        f(0)
    }
    #[inline(always)]
    fn each(self, mut f: impl FnMut(usize, f64)) {
        f(0, self)
    }
    #[inline(always)]
    unsafe fn load(p: *const f64) -> f64 {
        *p
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f64) {
        *p = self
    }
    #[inline(always)]
    unsafe fn columns(p: impl Fn(usize) -> *const f64) -> [f64; 4] {
        let p = p(0);
        [*p, *p.add(1), *p.add(2), *p.add(3)]
    }
    #[inline(always)]
    unsafe fn rows(columns: [f64; 4], p: impl Fn(usize) -> *mut f64) {
        let p = p(0);
        for (j, x) in columns.into_iter().enumerate() {
            *p.add(j) = x;
        }
    }
    #[inline(always)]
    fn splat(x: f64) -> f64 {
        x
    }
    #[inline(always)]
    fn sqrt(self) -> f64 {
        f64::sqrt(self)
    }
    #[inline(always)]
    fn abs(self) -> f64 {
        f64::abs(self)
    }
    #[inline(always)]
    fn lt(self, other: f64) -> bool {
        self < other
    }
    #[inline(always)]
    fn le(self, other: f64) -> bool {
        self <= other
    }
    #[inline(always)]
    fn and(a: bool, b: bool) -> bool {
        a && b
    }
    #[inline(always)]
    fn select(mask: bool, a: f64, b: f64) -> f64 {
        if mask {
            a
        } else {
            b
        }
    }
}

#[cfg(target_arch = "x86_64")]
pub use avx::F64x4;

#[cfg(target_arch = "x86_64")]
mod avx {
    use super::Lane;
    use std::arch::x86_64::*;
    use std::ops::{Add, Div, Mul, Neg, Sub};

    /// Four f64 in an AVX register.
    ///
    /// Safety: its operations are AVX instructions, so a value may only be made in code that
    /// runs after [`avx2`](super::avx2) said yes; every caller is a `#[target_feature(enable =
    /// "avx2")]` function, into which these `#[inline(always)]` operations are inlined.
    #[derive(Clone, Copy)]
    pub struct F64x4(pub __m256d);

    impl F64x4 {
        /// The lanes, lowest first.
        #[inline(always)]
        pub fn to_array(self) -> [f64; 4] {
            // SAFETY: a plain reinterpretation of 32 bytes.
            unsafe { std::mem::transmute(self.0) }
        }

        /// Lanes from `a`, lowest first.
        #[inline(always)]
        pub fn from_array(a: [f64; 4]) -> F64x4 {
            // SAFETY: an unaligned load of 4 f64 from a live array (AVX: see the type).
            F64x4(unsafe { _mm256_loadu_pd(a.as_ptr()) })
        }
    }

    macro_rules! binary {
        ($trait:ident, $method:ident, $intrinsic:ident) => {
            impl $trait for F64x4 {
                type Output = F64x4;
                #[inline(always)]
                fn $method(self, other: F64x4) -> F64x4 {
                    // SAFETY: AVX is present (see the type).
                    F64x4(unsafe { $intrinsic(self.0, other.0) })
                }
            }
        };
    }
    binary!(Add, add, _mm256_add_pd);
    binary!(Sub, sub, _mm256_sub_pd);
    binary!(Mul, mul, _mm256_mul_pd);
    binary!(Div, div, _mm256_div_pd);

    impl Neg for F64x4 {
        type Output = F64x4;
        #[inline(always)]
        fn neg(self) -> F64x4 {
            // SAFETY: AVX is present (see the type). Flipping the sign bit is what f64's
            // negation does.
            F64x4(unsafe { _mm256_xor_pd(self.0, _mm256_set1_pd(-0.0)) })
        }
    }

    impl Lane for F64x4 {
        type Mask = __m256d;
        const LANES: usize = 4;
        #[inline(always)]
        fn from_fn(f: impl FnMut(usize) -> f64) -> F64x4 {
            F64x4::from_array(std::array::from_fn(f))
        }
        #[inline(always)]
        fn each(self, mut f: impl FnMut(usize, f64)) {
            for (i, x) in self.to_array().into_iter().enumerate() {
                f(i, x);
            }
        }
        #[inline(always)]
        unsafe fn load(p: *const f64) -> F64x4 {
            F64x4(_mm256_loadu_pd(p))
        }
        #[inline(always)]
        unsafe fn store(self, p: *mut f64) {
            _mm256_storeu_pd(p, self.0)
        }
        #[inline(always)]
        unsafe fn columns(p: impl Fn(usize) -> *const f64) -> [F64x4; 4] {
            super::transpose([0, 1, 2, 3].map(|i| _mm256_loadu_pd(p(i)))).map(F64x4)
        }
        #[inline(always)]
        unsafe fn rows(columns: [F64x4; 4], p: impl Fn(usize) -> *mut f64) {
            for (i, r) in super::transpose(columns.map(|c| c.0))
                .into_iter()
                .enumerate()
            {
                _mm256_storeu_pd(p(i), r);
            }
        }
        #[inline(always)]
        fn splat(x: f64) -> F64x4 {
            // SAFETY: AVX is present (see the type).
            F64x4(unsafe { _mm256_set1_pd(x) })
        }
        #[inline(always)]
        fn sqrt(self) -> F64x4 {
            // SAFETY: AVX is present (see the type).
            F64x4(unsafe { _mm256_sqrt_pd(self.0) })
        }
        #[inline(always)]
        fn abs(self) -> F64x4 {
            // SAFETY: AVX is present (see the type). Clears the sign bit, as f64::abs.
            F64x4(unsafe { _mm256_andnot_pd(_mm256_set1_pd(-0.0), self.0) })
        }
        #[inline(always)]
        fn lt(self, other: F64x4) -> __m256d {
            // SAFETY: AVX is present (see the type).
            unsafe { _mm256_cmp_pd::<_CMP_LT_OQ>(self.0, other.0) }
        }
        #[inline(always)]
        fn le(self, other: F64x4) -> __m256d {
            // SAFETY: AVX is present (see the type).
            unsafe { _mm256_cmp_pd::<_CMP_LE_OQ>(self.0, other.0) }
        }
        #[inline(always)]
        fn and(a: __m256d, b: __m256d) -> __m256d {
            // SAFETY: AVX is present (see the type).
            unsafe { _mm256_and_pd(a, b) }
        }
        #[inline(always)]
        fn select(mask: __m256d, a: F64x4, b: F64x4) -> F64x4 {
            // SAFETY: AVX is present (see the type).
            F64x4(unsafe { _mm256_blendv_pd(b.0, a.0, mask) })
        }
    }
}

/// The 4 × 4 transpose of `r`: (a0 b0 a2 b2), (a1 b1 a3 b3), …, then the 128-bit halves
/// recombined (`unpcklpd`/`unpckhpd` and `vperm2f128`). Safety: AVX is present.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn transpose(r: [std::arch::x86_64::__m256d; 4]) -> [std::arch::x86_64::__m256d; 4] {
    use std::arch::x86_64::*;
    let (t0, t1) = (
        _mm256_unpacklo_pd(r[0], r[1]),
        _mm256_unpackhi_pd(r[0], r[1]),
    );
    let (t2, t3) = (
        _mm256_unpacklo_pd(r[2], r[3]),
        _mm256_unpackhi_pd(r[2], r[3]),
    );
    [
        _mm256_permute2f128_pd::<0x20>(t0, t2),
        _mm256_permute2f128_pd::<0x20>(t1, t3),
        _mm256_permute2f128_pd::<0x31>(t0, t2),
        _mm256_permute2f128_pd::<0x31>(t1, t3),
    ]
}

/// Whether this CPU runs the AVX2 loops.
pub fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
