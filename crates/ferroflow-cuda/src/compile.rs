//! Kernel sources and their compilation with NVRTC. A crate that owns kernels embeds each
//! `.cu` file as a [`KernelSource`] (its text and the headers it includes) and asks for a
//! [`Build`]: the precision, the `-D` macros that specialise it, and how strictly it rounds.
//! NVRTC compiles down to machine code (a cubin) for the device's architecture: the driver then
//! loads it as is, instead of compiling PTX one module at a time, and tuning compiles its
//! candidates on all cores. The functions here always run NVRTC (CI relies on it); a device's
//! compiles go through the on-disk cubin cache.
use cudarc::nvrtc::{result, sys};
use ferroflow_core::{BackendError, Real};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::any::TypeId;
use std::ffi::{CStr, CString};
use std::fmt;

/// A header by the name `#include "..."` lines use, and its text (with an include guard).
pub type Header = (&'static str, &'static str);

/// Types and helpers every kernel may include (`prelude.cuh`): `real_t`, `idx_t`, read-only
/// loads and the fixed-order block sum.
pub const PRELUDE: Header = ("prelude.cuh", include_str!("../kernels/prelude.cuh"));

/// One `.cu` file, embedded by the crate that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelSource {
    /// File name, e.g. `copy.cu`: NVRTC's program name, and what messages call it.
    pub name: &'static str,
    /// The file's text.
    pub text: &'static str,
    /// The headers its `#include "..."` lines (and theirs) name.
    pub headers: &'static [Header],
}

impl KernelSource {
    /// The source NVRTC compiles: the text with its `#include "..."` lines replaced by the
    /// headers (each header has an include guard).
    ///
    /// # Panics
    /// If an include names a header the source does not list (a mistake in the owning crate,
    /// which its tests compile).
    pub fn expanded(&self) -> String {
        let mut out = String::new();
        self.expand(self.text, &mut out);
        out
    }

    fn expand(&self, text: &str, out: &mut String) {
        for line in text.lines() {
            let include = line
                .strip_prefix("#include \"")
                .and_then(|rest| rest.strip_suffix('"'));
            match include {
                Some(name) => {
                    let (_, header) = self
                        .headers
                        .iter()
                        .find(|(n, _)| *n == name)
                        .unwrap_or_else(|| {
                            panic!("{} includes an unknown header {name}", self.name)
                        });
                    self.expand(header, out);
                }
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
}

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

/// One compilation: a source, its precision, its macros and its rounding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Build {
    /// The file.
    pub source: KernelSource,
    /// What the macros specialise, in words, for messages (e.g. `3D, 32x4x1`).
    pub label: String,
    /// Real type (`-DREAL`).
    pub precision: Scalar,
    /// `--fmad`: fused multiply-adds round differently from a CPU's separate operations.
    pub fmad: bool,
    /// Correctly rounded division and square root in f32 too (f64 always has them).
    pub exact_f32: bool,
    /// f32 keeps subnormals, as a CPU that does not flush them (f64 always keeps them).
    pub subnormals: bool,
    /// `-D` macros besides `REAL`, in order.
    pub defines: Vec<(&'static str, String)>,
}

impl Build {
    /// `source` in `precision`, without fused multiply-adds, macros or label.
    pub fn new(source: KernelSource, precision: Scalar) -> Build {
        Build {
            source,
            label: String::new(),
            precision,
            fmad: false,
            exact_f32: false,
            subnormals: false,
            defines: Vec::new(),
        }
    }

    /// With the macro `-Dname=value` added.
    pub fn define(mut self, name: &'static str, value: impl fmt::Display) -> Build {
        self.defines.push((name, value.to_string()));
        self
    }

    /// NVRTC options for the architecture `arch` (e.g. `sm_90`).
    pub fn options(&self, arch: &str) -> Vec<String> {
        let f64 = self.precision == Scalar::F64;
        let mut options = vec![
            format!("--gpu-architecture={arch}"),
            format!("--fmad={}", self.fmad),
            // CPU backends flush subnormals to zero; the GPU can in f32 only (f64 keeps
            // them, which changes nothing above 1e-300).
            format!("--ftz={}", !(f64 || self.subnormals)),
            // f32 builds may trade correctly rounded division and square root (a dozen
            // instructions each) for the hardware approximations (within 2 ulp); f64 stays
            // IEEE.
            format!("--prec-div={}", f64 || self.exact_f32),
            format!("--prec-sqrt={}", f64 || self.exact_f32),
            format!("-DREAL={}", self.precision.c_type()),
        ];
        options.extend(self.defines.iter().map(|(n, v)| format!("-D{n}={v}")));
        options
    }
}

impl fmt::Display for Build {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} ({:?}", self.source.name, self.precision)?;
        if !self.label.is_empty() {
            write!(f, ", {}", self.label)?;
        }
        write!(f, ", fmad={})", self.fmad)
    }
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

/// Compiles every build to machine code for `arch` with NVRTC alone, as the crates' CI checks
/// do: how many compiled, or the first failure (NVRTC's log, or output that is not a cubin).
pub fn compile_every(builds: &[Build], arch: &str) -> Result<usize, BackendError> {
    for (build, cubin) in builds.iter().zip(compile_many(builds, arch)) {
        if !cubin?.starts_with(b"\x7fELF") {
            return Err(BackendError::Compile {
                backend: "cuda",
                build: build.to_string(),
                log: "NVRTC's output is not a cubin".into(),
            });
        }
    }
    Ok(builds.len())
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
    let source = CString::new(build.source.expanded()).expect("kernel sources hold no NUL");
    let name = CString::new(build.source.name).expect("no NUL");
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

#[cfg(test)]
mod tests {
    use super::*;

    const SOURCE: KernelSource = KernelSource {
        name: "test.cu",
        text: "#include \"a.cuh\"\n#include \"prelude.cuh\"\nbody\n",
        headers: &[PRELUDE, ("a.cuh", "#include \"prelude.cuh\"\nA\n")],
    };

    #[test]
    fn includes_are_replaced_by_the_headers() {
        let src = SOURCE.expanded();
        assert!(!src.contains("#include"));
        // Twice included, once compiled: the prelude's guard.
        assert_eq!(src.matches("typedef REAL real_t;").count(), 2);
        assert!(src.contains("#ifndef FERROFLOW_PRELUDE_CUH"));
        assert!(src.ends_with("body\n"));
    }

    #[test]
    fn options_carry_the_precision_rounding_and_macros_in_order() {
        let build = Build::new(SOURCE, Scalar::F32)
            .define("DIM", 3)
            .define("BLOCK_X", 32);
        let opts = build.options("sm_90");
        assert_eq!(
            opts,
            [
                "--gpu-architecture=sm_90",
                "--fmad=false",
                "--ftz=true",
                "--prec-div=false",
                "--prec-sqrt=false",
                "-DREAL=float",
                "-DDIM=3",
                "-DBLOCK_X=32",
            ]
        );
        let exact = Build {
            exact_f32: true,
            ..build.clone()
        };
        assert!(exact
            .options("sm_90")
            .contains(&"--prec-div=true".to_string()));
        let f64 = Build::new(SOURCE, Scalar::F64).options("sm_90");
        for o in [
            "--ftz=false",
            "--prec-div=true",
            "--prec-sqrt=true",
            "-DREAL=double",
        ] {
            assert!(f64.contains(&o.to_string()), "{o} missing from {f64:?}");
        }
        let labelled = Build {
            label: "3D".into(),
            ..build
        };
        assert_eq!(labelled.to_string(), "test.cu (F32, 3D, fmad=false)");
    }

    #[test]
    fn precision_follows_the_type() {
        assert_eq!(Scalar::of::<f64>(), Some(Scalar::F64));
        assert_eq!(Scalar::of::<f32>(), Some(Scalar::F32));
    }
}
