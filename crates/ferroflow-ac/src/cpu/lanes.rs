//! A vector of consecutive nodes of a row ([`Lanes`]), on which the explicit pass evaluates
//! the scheme's formulas for all its nodes at once. Each operation is the scalar IEEE
//! operation per lane, so a lane gets the bits its node would get alone (what the CUDA kernels
//! compute). The operations are written for each instruction set the pass is built for
//! ([`Isa`]): as arrays, LLVM split the vectors into scalars and vectorised them again across
//! neighbour rows, with gathers, 2.6 times slower in f64.
use crate::cpu::formulas::Arith;
use ferroflow_core::Real;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// The vectors of one instruction set (one register of `R`) and their operations.
pub(crate) trait Isa: Copy {
    /// The values of `R` a vector holds.
    type Vector<R: Real>: Copy + Default + AsRef<[R]> + AsMut<[R]>;
    /// `op` (add, sub, mul, div, max) of each pair of lanes.
    fn binary<R: Real>(op: Op, a: Self::Vector<R>, b: Self::Vector<R>) -> Self::Vector<R>;
    /// `op` (neg, abs, sqrt) of each lane.
    fn unary<R: Real>(op: Op, a: Self::Vector<R>) -> Self::Vector<R>;
}

/// A lane operation; matched at compile time (every call passes a constant).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    /// The larger, or the second operand where the first is NaN (as `f64::max`).
    Max,
    Neg,
    Abs,
    Sqrt,
}

/// The scalar operation `op`, for the lanes of [`Portable`].
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
#[inline(always)]
fn scalar<R: Real>(op: Op, a: R, b: R) -> R {
    match op {
        Op::Add => a + b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b,
        Op::Max => a.max(b),
        Op::Neg => -a,
        Op::Abs => a.abs(),
        Op::Sqrt => a.sqrt(),
    }
}

/// Lane by lane, for builds without AVX2 (off x86, or not for x86-64-v3).
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
#[derive(Clone, Copy)]
pub(crate) struct Portable;

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
impl Isa for Portable {
    type Vector<R: Real> = R::Vector;

    #[inline(always)]
    fn binary<R: Real>(op: Op, mut a: R::Vector, b: R::Vector) -> R::Vector {
        for (x, y) in a.as_mut().iter_mut().zip(b.as_ref()) {
            *x = scalar(op, *x, *y);
        }
        a
    }
    #[inline(always)]
    fn unary<R: Real>(op: Op, mut a: R::Vector) -> R::Vector {
        a.as_mut().iter_mut().for_each(|x| *x = scalar(op, *x, *x));
        a
    }
}

/// An x86 vector register of f64 or f32 and its operations (intrinsics, inlined into the
/// builds whose instructions they need).
#[cfg(target_arch = "x86_64")]
trait Register: Copy {
    /// `op` (add, sub, mul, div, max) of each pair of lanes.
    fn binary(op: Op, a: Self, b: Self) -> Self;
    /// `op` (neg, abs, sqrt) of each lane.
    fn unary(op: Op, a: Self) -> Self;
}

/// [`Register`] for `$v` from its intrinsics. `max` follows LLVM's lowering of `f64::max`: the
/// hardware maximum of (b, a) returns `a` where either is NaN, and `b` is taken where `a` is.
#[cfg(target_arch = "x86_64")]
macro_rules! register {
    ($v:ty, $add:ident, $sub:ident, $mul:ident, $div:ident, $max:ident, $sqrt:ident,
     $xor:ident, $andnot:ident, $set1:ident, $where_nan:expr) => {
        impl Register for $v {
            #[inline(always)]
            fn binary(op: Op, a: Self, b: Self) -> Self {
                use std::arch::x86_64::*;
                // SAFETY: the build that calls this has the instructions (see `Isa`).
                unsafe {
                    match op {
                        Op::Add => $add(a, b),
                        Op::Sub => $sub(a, b),
                        Op::Mul => $mul(a, b),
                        Op::Div => $div(a, b),
                        _ => $where_nan(a, b, $max(b, a)),
                    }
                }
            }

            #[inline(always)]
            fn unary(op: Op, a: Self) -> Self {
                use std::arch::x86_64::*;
                // SAFETY: as above.
                unsafe {
                    let sign = $set1(-0.0);
                    match op {
                        Op::Neg => $xor(a, sign),
                        Op::Abs => $andnot(sign, a),
                        _ => $sqrt(a),
                    }
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::{__m256, __m256d, __m512, __m512d};

#[cfg(target_arch = "x86_64")]
register!(
    __m512d,
    _mm512_add_pd,
    _mm512_sub_pd,
    _mm512_mul_pd,
    _mm512_div_pd,
    _mm512_max_pd,
    _mm512_sqrt_pd,
    _mm512_xor_pd,
    _mm512_andnot_pd,
    _mm512_set1_pd,
    |a, b, m| _mm512_mask_blend_pd(_mm512_cmp_pd_mask::<_CMP_UNORD_Q>(a, a), m, b)
);
#[cfg(target_arch = "x86_64")]
register!(
    __m512,
    _mm512_add_ps,
    _mm512_sub_ps,
    _mm512_mul_ps,
    _mm512_div_ps,
    _mm512_max_ps,
    _mm512_sqrt_ps,
    _mm512_xor_ps,
    _mm512_andnot_ps,
    _mm512_set1_ps,
    |a, b, m| _mm512_mask_blend_ps(_mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a), m, b)
);
#[cfg(target_arch = "x86_64")]
register!(
    __m256d,
    _mm256_add_pd,
    _mm256_sub_pd,
    _mm256_mul_pd,
    _mm256_div_pd,
    _mm256_max_pd,
    _mm256_sqrt_pd,
    _mm256_xor_pd,
    _mm256_andnot_pd,
    _mm256_set1_pd,
    |a, b, m| _mm256_blendv_pd(m, b, _mm256_cmp_pd::<_CMP_UNORD_Q>(a, a))
);
#[cfg(target_arch = "x86_64")]
register!(
    __m256,
    _mm256_add_ps,
    _mm256_sub_ps,
    _mm256_mul_ps,
    _mm256_div_ps,
    _mm256_max_ps,
    _mm256_sqrt_ps,
    _mm256_xor_ps,
    _mm256_andnot_ps,
    _mm256_set1_ps,
    |a, b, m| _mm256_blendv_ps(m, b, _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a))
);

/// `op` of a vector `V` of `R` held in register `T` of the same size.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn in_register<V: Copy, T: Register>(op: Op, a: V, b: V) -> V {
    debug_assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<V>());
    // SAFETY: T is a register of V's size (f64 registers for f64, f32 for f32), and any
    // bits are valid for both.
    unsafe {
        let (a, b): (T, T) = (std::mem::transmute_copy(&a), std::mem::transmute_copy(&b));
        let r = match op {
            Op::Neg | Op::Abs | Op::Sqrt => T::unary(op, a),
            _ => T::binary(op, a, b),
        };
        std::mem::transmute_copy(&r)
    }
}

/// An x86 instruction set: vectors `R::$vector` of f64 in a register `$v`, of f32 in `$vs`.
#[cfg(target_arch = "x86_64")]
macro_rules! x86_isa {
    ($(#[$doc:meta])* $isa:ident, $vector:ident, $v:ty, $vs:ty) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub(crate) struct $isa;

        impl Isa for $isa {
            type Vector<R: Real> = R::$vector;

            #[inline(always)]
            fn binary<R: Real>(op: Op, a: R::$vector, b: R::$vector) -> R::$vector {
                match R::BYTES {
                    8 => in_register::<_, $v>(op, a, b),
                    _ => in_register::<_, $vs>(op, a, b),
                }
            }

            #[inline(always)]
            fn unary<R: Real>(op: Op, a: R::$vector) -> R::$vector {
                Self::binary::<R>(op, a, a)
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
x86_isa!(
    /// One 512-bit register per vector (8 f64, 16 f32): the build inside
    /// `step::with_avx512`.
    Avx512, Vector, __m512d, __m512
);
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
x86_isa!(
    /// One 256-bit register per vector (4 f64, 8 f32): the build for every x86-64-v3 CPU.
    /// With vectors of two registers, as wide as AVX-512's, the 3D f32 pass ran 11 % (Zen 4)
    /// to 28 % (Xeon) slower than LLVM's vectorised loop before it.
    Avx2, Half, __m256d, __m256
);

/// The instruction set of the ordinary build (outside `step::with_avx512`).
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
pub(crate) type Narrow = Avx2;
/// The instruction set of the ordinary build (outside `step::with_avx512`).
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
pub(crate) type Narrow = Portable;

/// One value per node of a vector of `I` (of 8 or 4 f64, of 16 or 8 f32).
#[derive(Clone, Copy)]
pub(crate) struct Lanes<R: Real, I: Isa>(I::Vector<R>);

impl<R: Real, I: Isa> Lanes<R, I> {
    /// Nodes per vector.
    pub(crate) const WIDTH: usize = std::mem::size_of::<I::Vector<R>>() / R::BYTES;

    /// The vector at `p`.
    ///
    /// # Safety
    /// `p` must point to [`Self::WIDTH`] values of one array.
    #[inline(always)]
    pub(crate) unsafe fn load(p: *const R) -> Self {
        Lanes(p.cast::<I::Vector<R>>().read_unaligned())
    }

    /// The lanes as values.
    #[inline(always)]
    pub(crate) fn values(&self) -> &[R] {
        self.0.as_ref()
    }

    #[inline(always)]
    fn binary(self, op: Op, other: Self) -> Self {
        Lanes(I::binary::<R>(op, self.0, other.0))
    }

    #[inline(always)]
    fn unary(self, op: Op) -> Self {
        Lanes(I::unary::<R>(op, self.0))
    }
}

impl<R: Real, I: Isa> From<R> for Lanes<R, I> {
    #[inline(always)]
    fn from(x: R) -> Self {
        let mut v = I::Vector::<R>::default();
        v.as_mut().fill(x);
        Lanes(v)
    }
}

macro_rules! lane_op {
    ($trait:ident, $f:ident, $op:ident) => {
        impl<R: Real, I: Isa> $trait for Lanes<R, I> {
            type Output = Self;
            #[inline(always)]
            fn $f(self, other: Self) -> Self {
                self.binary(Op::$op, other)
            }
        }
    };
}
lane_op!(Add, add, Add);
lane_op!(Sub, sub, Sub);
lane_op!(Mul, mul, Mul);
lane_op!(Div, div, Div);

impl<R: Real, I: Isa> Neg for Lanes<R, I> {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        self.unary(Op::Neg)
    }
}

impl<R: Real, I: Isa> Arith for Lanes<R, I> {
    #[inline(always)]
    fn of(x: f64) -> Self {
        Self::from(R::of(x))
    }
    #[inline(always)]
    fn abs(self) -> Self {
        self.unary(Op::Abs)
    }
    #[inline(always)]
    fn sqrt(self) -> Self {
        self.unary(Op::Sqrt)
    }
    #[inline(always)]
    fn max(self, other: Self) -> Self {
        self.binary(Op::Max, other)
    }
}
