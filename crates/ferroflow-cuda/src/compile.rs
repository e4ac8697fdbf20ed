//! Kernel sources (`kernels/*.cu`, embedded) and their compilation with NVRTC, with the real
//! type, the dimension, the launch shape and the entry point as `-D` macros. NVRTC compiles
//! down to machine code (a cubin) for the device's architecture: the driver then loads it as
//! is, instead of compiling PTX one module at a time, and tuning compiles its candidates on
//! all cores. The functions here always run NVRTC (CI relies on it); the backend's compiles go
//! through the on-disk cubin cache.
use crate::cache;
use crate::launch::LaunchShape;
use crate::tune;
use cudarc::nvrtc::{result, sys};
use ferroflow_core::{BackendError, Real, GHOST};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::any::TypeId;
use std::ffi::{CStr, CString};
use std::fmt;

/// Threads per block of `reduce_sums` (kernels/reduce.cu).
pub(crate) const REDUCE_THREADS: u32 = 256;

/// Headers the `.cu` files include, resolved here because NVRTC sees no files.
const HEADERS: [(&str, &str); 3] = [
    ("prelude.cuh", include_str!("../kernels/prelude.cuh")),
    (
        "ac_formulas.cuh",
        include_str!("../kernels/ac_formulas.cuh"),
    ),
    (
        "ac_residual.cuh",
        include_str!("../kernels/ac_residual.cuh"),
    ),
];

/// Floating-point type of a build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Scalar {
    /// `float`.
    F32,
    /// `double`.
    F64,
}

impl Scalar {
    /// Both precisions.
    pub const ALL: [Scalar; 2] = [Scalar::F32, Scalar::F64];

    /// The precision of `R`, if the kernels have one for it.
    pub fn of<R: Real>() -> Option<Scalar> {
        let t = TypeId::of::<R>();
        if t == TypeId::of::<f64>() {
            Some(Scalar::F64)
        } else if t == TypeId::of::<f32>() {
            Some(Scalar::F32)
        } else {
            None
        }
    }

    /// The C type (`-DREAL=...`).
    pub fn c_type(self) -> &'static str {
        match self {
            Scalar::F32 => "float",
            Scalar::F64 => "double",
        }
    }

    /// Size in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Scalar::F32 => 4,
            Scalar::F64 => 8,
        }
    }
}

/// Which entry point of `ac_step.cu` a build holds: with or without source terms and the
/// energy equation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variant {
    /// Source terms (manufactured solutions).
    pub source: bool,
    /// The energy equation.
    pub energy: bool,
}

impl Variant {
    /// Every entry point.
    pub const ALL: [Variant; 4] = [
        Variant::new(false, false),
        Variant::new(true, false),
        Variant::new(false, true),
        Variant::new(true, true),
    ];

    /// The entry point with or without source terms and the energy equation.
    pub const fn new(source: bool, energy: bool) -> Variant {
        Variant { source, energy }
    }

    /// The entry point's name.
    pub fn entry(self) -> &'static str {
        match (self.energy, self.source) {
            (false, false) => "ac_step",
            (false, true) => "ac_step_src",
            (true, false) => "ac_step_energy",
            (true, true) => "ac_step_energy_src",
        }
    }
}

/// One NVRTC program: a file of `kernels/` (the file stem names it) with its specialisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Program {
    /// `ac_step.cu`: the fused interior pass, one entry point for one dimension and launch
    /// shape.
    AcStep {
        /// 2 or 3.
        dim: usize,
        /// Launch shape.
        shape: LaunchShape,
        /// The entry point.
        variant: Variant,
    },
    /// `ac_implicit.cu`: the implicit relaxation's kernels for one dimension and entry point,
    /// with the operator in precision `implicit`.
    AcImplicit {
        /// 2 or 3.
        dim: usize,
        /// With source terms and the energy equation.
        variant: Variant,
        /// Precision of the operator and the increments.
        implicit: Scalar,
    },
    /// `boundary.cu`: wall pressure extrapolation (`fill_walls`) and the packing of block
    /// interfaces (`halo_box`).
    Boundary,
    /// `reduce.cu`: fixed-order sum of the residual partial sums (`reduce_sums`).
    Reduce,
    /// `copy.cu`: grid-stride copy, the bandwidth reference (`copy_real`).
    Copy,
}

impl Program {
    /// File stem in `kernels/`.
    pub fn stem(self) -> &'static str {
        match self {
            Program::AcStep { .. } => "ac_step",
            Program::AcImplicit { .. } => "ac_implicit",
            Program::Boundary => "boundary",
            Program::Reduce => "reduce",
            Program::Copy => "copy",
        }
    }

    fn text(self) -> &'static str {
        match self {
            Program::AcStep { .. } => include_str!("../kernels/ac_step.cu"),
            Program::AcImplicit { .. } => include_str!("../kernels/ac_implicit.cu"),
            Program::Boundary => include_str!("../kernels/boundary.cu"),
            Program::Reduce => include_str!("../kernels/reduce.cu"),
            Program::Copy => include_str!("../kernels/copy.cu"),
        }
    }

    /// The source NVRTC compiles: the file with its `#include "..."` lines replaced by the
    /// embedded headers (each header has an include guard).
    pub fn source(self) -> String {
        let mut out = String::new();
        expand(self.text(), &mut out);
        out
    }
}

fn expand(text: &str, out: &mut String) {
    for line in text.lines() {
        let include = line
            .strip_prefix("#include \"")
            .and_then(|rest| rest.strip_suffix('"'));
        match include {
            Some(name) => {
                let (_, header) = HEADERS
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("kernels include an unknown header {name}"));
                expand(header, out);
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
}

/// One compilation: program, precision and whether to fuse multiply-adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Build {
    /// The program and its specialisation.
    pub program: Program,
    /// Real type.
    pub precision: Scalar,
    /// `--fmad`: fused multiply-adds round differently from the CPU's separate operations.
    pub fmad: bool,
}

impl Build {
    fn is_implicit(&self) -> bool {
        matches!(self.program, Program::AcImplicit { .. })
    }

    /// NVRTC options for the architecture `arch` (e.g. `sm_90`).
    pub fn options(&self, arch: &str) -> Vec<String> {
        let mut options = vec![
            format!("--gpu-architecture={arch}"),
            format!("--fmad={}", self.fmad),
            // The CPU backend flushes subnormals to zero; the GPU can in f32 only (f64 keeps
            // them, which changes nothing above 1e-300).
            format!("--ftz={}", self.precision == Scalar::F32),
            // f32 runs trade correctly rounded division and square root (a dozen instructions
            // each, which made the f32 kernel instruction-bound) for the hardware
            // approximations (within 2 ulp). They set the local time step and the spectral
            // radius, not the discrete equations' form; f64 stays IEEE, bitwise as the CPU.
            // The implicit relaxation divides and takes roots once per node: IEEE there always.
            format!(
                "--prec-div={}",
                self.precision == Scalar::F64 || self.is_implicit()
            ),
            format!(
                "--prec-sqrt={}",
                self.precision == Scalar::F64 || self.is_implicit()
            ),
            format!("-DREAL={}", self.precision.c_type()),
            format!("-DGHOST={GHOST}"),
        ];
        match self.program {
            Program::AcStep {
                dim,
                shape,
                variant,
            } => {
                let [x, y, z] = shape.block;
                options.extend([
                    format!("-DWITH_SOURCE={}", variant.source as u8),
                    format!("-DWITH_ENERGY={}", variant.energy as u8),
                    format!("-DDIM={dim}"),
                    format!("-DBLOCK_X={x}"),
                    format!("-DBLOCK_Y={y}"),
                    format!("-DBLOCK_Z={z}"),
                    format!("-DMARCH={}", shape.march),
                    format!("-DTILE={}", shape.tile as u8),
                    format!("-DMIN_BLOCKS={}", shape.min_blocks),
                ]);
            }
            Program::AcImplicit {
                dim,
                variant,
                implicit,
            } => options.extend([
                format!("-DWITH_SOURCE={}", variant.source as u8),
                format!("-DWITH_ENERGY={}", variant.energy as u8),
                format!("-DDIM={dim}"),
                format!("-DIMPL={}", implicit.c_type()),
            ]),
            Program::Reduce => options.push(format!("-DREDUCE_THREADS={REDUCE_THREADS}")),
            Program::Boundary | Program::Copy => {}
        }
        options
    }
}

impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}.cu ({:?}", self.program.stem(), self.precision)?;
        if let Program::AcStep {
            dim,
            shape,
            variant,
        } = self.program
        {
            write!(f, ", {}, {dim}D, {shape}", variant.entry())?;
        }
        if let Program::AcImplicit {
            dim,
            variant,
            implicit,
        } = self.program
        {
            write!(f, ", {dim}D, {variant:?}, operator {implicit:?}")?;
        }
        write!(f, ", fmad={})", self.fmad)
    }
}

/// Every distinct build the backend can ask for: `ac_step` for each precision, dimension,
/// candidate launch shape and entry point, the other programs for each precision. CI compiles
/// them all.
pub fn every_build(fmad: bool) -> Vec<Build> {
    let mut programs = Vec::new();
    for dim in [2, 3] {
        for shape in tune::candidates(dim) {
            for variant in Variant::ALL {
                programs.push(Program::AcStep {
                    dim,
                    shape,
                    variant,
                });
            }
        }
    }
    for dim in [2, 3] {
        for variant in Variant::ALL {
            for implicit in Scalar::ALL {
                programs.push(Program::AcImplicit {
                    dim,
                    variant,
                    implicit,
                });
            }
        }
    }
    programs.extend([Program::Boundary, Program::Reduce, Program::Copy]);
    let mut builds = Vec::new();
    for precision in Scalar::ALL {
        for &program in &programs {
            builds.push(Build {
                program,
                precision,
                fmad,
            });
        }
    }
    builds
}

/// Whether the NVRTC library can be loaded (cudarc panics on use otherwise).
pub fn nvrtc_available() -> bool {
    // SAFETY: only tries to open the library by its names; nothing is called in it.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// Why the NVRTC library cannot be used, for error messages.
pub(crate) const NO_NVRTC: &str = "no NVRTC: libnvrtc.so.13 is not on the loader path (install \
     the CUDA 13.0 toolkit, or pip install nvidia-cuda-nvrtc==13.0.88 and add its \
     nvidia/cu13/lib to LD_LIBRARY_PATH)";

/// NVRTC's version, `major.minor`.
pub fn nvrtc_version() -> Result<String, BackendError> {
    if !nvrtc_available() {
        return Err(BackendError::Unavailable {
            backend: "cuda",
            reason: NO_NVRTC.into(),
        });
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: the library loads (checked above); the call writes two ints.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| BackendError::Driver {
            backend: "cuda",
            op: "reading the NVRTC version".into(),
            message: e.to_string(),
        })?;
    Ok(format!("{major}.{minor}"))
}

/// Compiles `build` to a cubin for `arch` (e.g. `sm_90`) with NVRTC only (no driver, no GPU,
/// no cache).
/// A compile failure is a [`BackendError::Compile`] with NVRTC's log.
pub fn compile(build: &Build, arch: &str) -> Result<Vec<u8>, BackendError> {
    if !nvrtc_available() {
        return Err(BackendError::Unavailable {
            backend: "cuda",
            reason: NO_NVRTC.into(),
        });
    }
    let options = build.options(arch);
    // The build and its options, with NVRTC's error and log.
    let failed = |log: String| BackendError::Compile {
        backend: "cuda",
        build: format!("{build} with {}", options.join(" ")),
        log,
    };
    let source = CString::new(build.program.source()).expect("kernel sources hold no NUL");
    let name = CString::new(format!("{}.cu", build.program.stem())).expect("no NUL");
    let program = result::create_program(&source, Some(&name))
        .map_err(|e| failed(format!("creating the program: {e:?}")))?;
    // SAFETY: `program` was created above and is destroyed once, below; `source` and `name`
    // outlive it.
    let cubin = unsafe {
        let compiled = match result::compile_program(program, &options) {
            Ok(()) => cubin(program).map_err(|e| failed(format!("reading the cubin: {e:?}"))),
            Err(e) => Err(failed(format!("{e:?}\n{}", program_log(program)))),
        };
        let _ = result::destroy_program(program);
        compiled
    };
    cubin
}

/// The log of a compiled program (empty if NVRTC gives none).
///
/// # Safety
/// `program` must be a live NVRTC program.
unsafe fn program_log(program: sys::nvrtcProgram) -> String {
    let log = result::get_program_log(program).unwrap_or_default();
    let bytes: Vec<u8> = log.iter().map(|&c| c as u8).collect();
    match CStr::from_bytes_until_nul(&bytes) {
        Ok(text) => text.to_string_lossy().into_owned(),
        Err(_) => String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// The machine code of a compiled program.
///
/// # Safety
/// `program` must be a live, successfully compiled NVRTC program.
unsafe fn cubin(program: sys::nvrtcProgram) -> Result<Vec<u8>, result::NvrtcError> {
    let mut size = 0;
    sys::nvrtcGetCUBINSize(program, &mut size).result()?;
    let mut image = vec![0u8; size];
    sys::nvrtcGetCUBIN(program, image.as_mut_ptr().cast()).result()?;
    Ok(image)
}

/// Compiles several builds on all cores (NVRTC is thread-safe across programs); results in
/// the order of `builds`.
pub fn compile_many(builds: &[Build], arch: &str) -> Vec<Result<Vec<u8>, BackendError>> {
    in_parallel(builds, arch, compile)
}

/// `compile` (NVRTC alone, or through the cubin cache) applied to every build on all cores;
/// results in the order of `builds`.
pub(crate) fn in_parallel(
    builds: &[Build],
    arch: &str,
    compile: impl Fn(&Build, &str) -> Result<Vec<u8>, BackendError> + Sync,
) -> Vec<Result<Vec<u8>, BackendError>> {
    builds.par_iter().map(|b| compile(b, arch)).collect()
}

/// Digest of what a tuned `ac_step` build depends on besides its shape (the expanded source
/// and the options fixed for a run), for the tuning cache key. FNV-1a: stable across Rust
/// versions, unlike `DefaultHasher`.
pub(crate) fn source_digest(precision: Scalar, dim: usize, variant: Variant, fmad: bool) -> u64 {
    let build = Build {
        program: Program::AcStep {
            dim,
            shape: tune::DEFAULT_SHAPE,
            variant,
        },
        precision,
        fmad,
    };
    let source = cache::fnv1a(cache::FNV_OFFSET, build.program.source().as_bytes());
    cache::fnv1a(source, build.options("").join(" ").as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_resolved_once_per_header() {
        let src = Program::AcStep {
            dim: 3,
            shape: tune::DEFAULT_SHAPE,
            variant: Variant::new(false, false),
        }
        .source();
        assert!(!src.contains("#include"));
        assert_eq!(src.matches("typedef REAL real_t;").count(), 1);
        assert!(src.contains("fourth_difference"));
    }

    #[test]
    fn every_kernel_file_has_a_program_and_every_program_a_file() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
        if !dir.is_dir() {
            println!(
                "skipped: {} is not here (test executable moved)",
                dir.display()
            );
            return;
        }
        let mut files: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        let mut named: Vec<String> = HEADERS.iter().map(|(n, _)| n.to_string()).collect();
        for build in every_build(false) {
            let file = format!("{}.cu", build.program.stem());
            if !named.contains(&file) {
                named.push(file);
            }
        }
        named.sort();
        assert_eq!(files, named);
    }

    #[test]
    fn step_options_carry_the_shape_and_others_do_not() {
        let shape = LaunchShape::new([16, 4, 4], 2);
        let step = Build {
            program: Program::AcStep {
                dim: 3,
                shape,
                variant: Variant::new(true, false),
            },
            precision: Scalar::F64,
            fmad: false,
        };
        let opts = step.options("sm_90");
        for o in [
            "--gpu-architecture=sm_90",
            "--fmad=false",
            "-DREAL=double",
            "-DDIM=3",
            "-DBLOCK_X=16",
            "-DBLOCK_Y=4",
            "-DBLOCK_Z=4",
            "-DMARCH=2",
            "-DTILE=0",
            "-DMIN_BLOCKS=0",
            "-DWITH_SOURCE=1",
            "-DWITH_ENERGY=0",
        ] {
            assert!(opts.contains(&o.to_string()), "{o} missing from {opts:?}");
        }
        let boundary = Build {
            program: Program::Boundary,
            ..step
        };
        assert!(!boundary
            .options("sm_90")
            .iter()
            .any(|o| o.contains("BLOCK")));
    }

    #[test]
    fn digest_follows_options_and_precision() {
        let plain = Variant::new(false, false);
        let d = source_digest(Scalar::F64, 2, plain, false);
        assert_eq!(d, source_digest(Scalar::F64, 2, plain, false));
        assert_ne!(d, source_digest(Scalar::F32, 2, plain, false));
        assert_ne!(d, source_digest(Scalar::F64, 2, plain, true));
        assert_ne!(d, source_digest(Scalar::F64, 3, plain, false));
        assert_ne!(
            d,
            source_digest(Scalar::F64, 2, Variant::new(true, false), false)
        );
    }

    #[test]
    fn precision_follows_the_type() {
        assert_eq!(Scalar::of::<f64>(), Some(Scalar::F64));
        assert_eq!(Scalar::of::<f32>(), Some(Scalar::F32));
    }
}
