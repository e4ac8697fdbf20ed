//! On-disk caches: their directory, and the cache of NVRTC's cubins. A build is compiled
//! once per machine: the cubin is stored under `cubin/<digest>.cubin` in the cache directory,
//! the digest covering everything the machine code depends on (NVRTC's version, the
//! architecture, every option and define, the build with its entry point, and the source with
//! its headers). NVRTC reports its version as `major.minor` only: after installing another
//! patch release of it, clear the `cubin` directory or set `FERROFLOW_CUDA_DISABLE_CACHE=1`.
//!
//! The cache can only save time: a file that cannot be read, or whose header does not match
//! its contents (a crash while writing on a file system without atomic rename, a truncated
//! copy), is a miss, and a cubin that cannot be stored is still used.
use crate::compile::{self, Build};
use ferroflow_core::BackendError;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Turns the cubin cache off when set to anything but empty or `0`.
const DISABLE_VAR: &str = "FERROFLOW_CUDA_DISABLE_CACHE";
/// First bytes of a cached cubin file (the last one is the format version).
const MAGIC: [u8; 8] = *b"FFCUBIN\x01";
/// Magic, payload length and payload checksum.
const HEADER: usize = 24;
/// FNV-1a 64 start value.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a 64 of `bytes`, continuing from `hash` (start with [`FNV_OFFSET`]). Stable across
/// Rust versions and machines, unlike `DefaultHasher`: it names files that outlive a build.
pub(crate) fn fnv1a(hash: u64, bytes: &[u8]) -> u64 {
    bytes.iter().fold(hash, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// Cache directory: `FERROFLOW_CUDA_CACHE_DIR`, else `~/.cache/ferroflow`, else a temporary
/// directory.
pub(crate) fn dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("FERROFLOW_CUDA_CACHE_DIR") {
        return dir.into();
    }
    match std::env::var_os("HOME") {
        Some(home) => Path::new(&home).join(".cache").join("ferroflow"),
        None => std::env::temp_dir().join("ferroflow"),
    }
}

/// [`compile::compile`] through the cubin cache, unless `FERROFLOW_CUDA_DISABLE_CACHE` is
/// set: a hit is read back, a miss is compiled and stored. Errors are NVRTC's; the cache adds
/// none.
pub(crate) fn compile(build: &Build, arch: &str) -> Result<Vec<u8>, BackendError> {
    let off = std::env::var(DISABLE_VAR).is_ok_and(|v| !v.is_empty() && v != "0");
    let cubins = (!off).then(|| dir().join("cubin"));
    compile_in(cubins.as_deref(), build, arch)
}

/// [`compile`] with the cubins in `cubins` (None: no cache).
fn compile_in(cubins: Option<&Path>, build: &Build, arch: &str) -> Result<Vec<u8>, BackendError> {
    // Without NVRTC's version there is no key; compiling then says why NVRTC is missing.
    let path = match (cubins, compile::nvrtc_version()) {
        (Some(dir), Ok(nvrtc)) => dir.join(format!("{:016x}.cubin", digest(&nvrtc, build, arch))),
        _ => return compile::compile(build, arch),
    };
    if let Some(cubin) = load(&path) {
        tracing::debug!(%build, path = %path.display(), "cubin cache hit");
        return Ok(cubin);
    }
    let start = std::time::Instant::now();
    let cubin = compile::compile(build, arch)?;
    tracing::debug!(%build, seconds = start.elapsed().as_secs_f64(), "compiled with NVRTC");
    // A cache that cannot be written costs the next run a compile, nothing else.
    if let Err(e) = store(&path, &cubin) {
        tracing::warn!(path = %path.display(), "cubin cache not written: {e}");
    }
    Ok(cubin)
}

/// Digest of everything the cubin of `build` for `arch` depends on, with NVRTC `nvrtc`.
fn digest(nvrtc: &str, build: &Build, arch: &str) -> u64 {
    // The build names the file and what it specialises; the options hold the architecture
    // and every define.
    digest_of(&[
        nvrtc,
        arch,
        &build.to_string(),
        &build.options(arch).join("\n"),
        &build.source.expanded(),
    ])
}

/// Digest of `parts`, each prefixed by its length so that moving text from one part to the
/// next changes it.
fn digest_of(parts: &[&str]) -> u64 {
    parts.iter().fold(FNV_OFFSET, |h, part| {
        let h = fnv1a(h, &(part.len() as u64).to_le_bytes());
        fnv1a(h, part.as_bytes())
    })
}

/// The cubin in `path`, if the file is there, whole and intact.
fn load(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let (header, payload) = bytes.split_at_checked(HEADER)?;
    let word = |i: usize| u64::from_le_bytes(header[i..i + 8].try_into().expect("8 bytes"));
    let intact = header[..8] == MAGIC
        && word(8) == payload.len() as u64
        && word(16) == fnv1a(FNV_OFFSET, payload);
    intact.then(|| payload.to_vec())
}

/// Writes `cubin` with its header to a temporary file in the cache directory, then renames it
/// to `path`: readers, in this process or another, see the whole file or none.
fn store(path: &Path, cubin: &[u8]) -> std::io::Result<()> {
    // Distinct per process and per call: threads of one process may store the same build.
    static STORES: AtomicUsize = AtomicUsize::new(0);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let n = STORES.fetch_add(1, Ordering::Relaxed);
    let tmp = path.with_extension(format!("cubin.{}.{n}.tmp", std::process::id()));
    let mut bytes = Vec::with_capacity(HEADER + cubin.len());
    bytes.extend_from_slice(&MAGIC);
    bytes.extend_from_slice(&(cubin.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&fnv1a(FNV_OFFSET, cubin).to_le_bytes());
    bytes.extend_from_slice(cubin);
    let written = std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bandwidth::copy_build;
    use crate::compile::Scalar;
    use crate::reduce::reduce_build;

    /// A fresh directory under the system's temporary directory.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ferroflow-cubin-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn fnv1a_gives_the_reference_values() {
        assert_eq!(fnv1a(FNV_OFFSET, b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(FNV_OFFSET, b"foobar"), 0x8594_4171_f739_67e8);
        assert_eq!(
            fnv1a(fnv1a(FNV_OFFSET, b"foo"), b"bar"),
            0x8594_4171_f739_67e8
        );
    }

    #[test]
    fn digest_changes_with_every_input() {
        // f32: there the exact division and square root are an option.
        let base = copy_build(Scalar::F32).define("X", 1);
        let d = digest("13.0", &base, "sm_90");
        assert_eq!(d, digest("13.0", &base, "sm_90"));
        let others = [
            digest("13.1", &base, "sm_90"),
            digest("13.0", &base, "sm_100"),
            digest("13.0", &copy_build(Scalar::F64).define("X", 1), "sm_90"),
            digest(
                "13.0",
                &Build {
                    fmad: true,
                    ..base.clone()
                },
                "sm_90",
            ),
            digest(
                "13.0",
                &Build {
                    exact_f32: true,
                    ..base.clone()
                },
                "sm_90",
            ),
            digest(
                "13.0",
                &Build {
                    subnormals: true,
                    ..base.clone()
                },
                "sm_90",
            ),
            digest("13.0", &copy_build(Scalar::F32).define("X", 2), "sm_90"),
            digest("13.0", &copy_build(Scalar::F32).define("Y", 1), "sm_90"),
            digest(
                "13.0",
                &Build {
                    label: "other".into(),
                    ..base.clone()
                },
                "sm_90",
            ),
            digest("13.0", &reduce_build(), "sm_90"),
        ];
        for (i, other) in others.iter().enumerate() {
            assert_ne!(d, *other, "input {i} does not change the digest");
        }
        // The source text counts, and parts do not run into each other.
        let source = base.source.expanded();
        let edited = source.replacen("copy_real", "copy_reaL", 1);
        assert_ne!(digest_of(&["a", &source]), digest_of(&["a", &edited]));
        assert_ne!(digest_of(&["ab", "c"]), digest_of(&["a", "bc"]));
    }

    #[test]
    fn a_stored_cubin_loads_back_and_a_damaged_one_does_not() {
        let dir = scratch("round-trip");
        let path = dir.join("cubin").join("0123456789abcdef.cubin");
        assert_eq!(load(&path), None);
        let cubin = b"\x7fELF and some machine code".to_vec();
        store(&path, &cubin).unwrap();
        assert_eq!(load(&path), Some(cubin.clone()));
        // No temporary file is left behind.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
        let whole = std::fs::read(&path).unwrap();
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let mut longer = whole.clone();
        longer.push(0);
        let damaged = [
            whole[..whole.len() - 1].to_vec(),
            whole[..HEADER].to_vec(),
            whole[..HEADER - 1].to_vec(),
            flipped,
            longer,
            cubin,
            b"garbage".to_vec(),
            Vec::new(),
        ];
        for (i, bytes) in damaged.into_iter().enumerate() {
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(load(&path), None, "damaged file {i} was read as a hit");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    #[ignore = "needs NVRTC (libnvrtc.so.13): run with --ignored, see README.md"]
    fn a_build_is_compiled_once_then_read_from_the_cache() {
        assert!(
            compile::nvrtc_available(),
            "NVRTC (libnvrtc.so.13) is not on the loader path"
        );
        let build = copy_build(Scalar::F32);
        let dir = scratch("compile");
        let cubin = compile_in(Some(&dir), &build, "sm_90").unwrap();
        assert!(cubin.starts_with(b"\x7fELF"));
        // NVRTC gives the same machine code for the same input: what the cache relies on.
        assert_eq!(compile::compile(&build, "sm_90").unwrap(), cubin);
        let files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(load(&files[0]).as_ref(), Some(&cubin));
        // A hit is what the file holds, not compiled again.
        store(&files[0], b"cached").unwrap();
        assert_eq!(compile_in(Some(&dir), &build, "sm_90").unwrap(), b"cached");
        // A damaged file is compiled again and replaced.
        std::fs::write(&files[0], b"garbage").unwrap();
        assert_eq!(compile_in(Some(&dir), &build, "sm_90").unwrap(), cubin);
        assert_eq!(load(&files[0]), Some(cubin.clone()));
        // Without a cache directory nothing is read or written.
        store(&files[0], b"cached").unwrap();
        assert_eq!(compile_in(None, &build, "sm_90").unwrap(), cubin);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
