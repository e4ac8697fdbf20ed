//! Host memory: what a run holds at its peak, sized before anything is allocated, and what
//! this process may still use. `ferroflow run` refuses a case that does not fit (exit code 2)
//! and `ferroflow check` reports both.
use crate::Failure;
use ferroflow_ac::Problem;
use ferroflow_cases::case::{BackendKind, MethodKind, Precision};
use ferroflow_cases::Case;
use ferroflow_core::{Layout, ProblemError, Real, MIN_NODES};
use std::fs;
use std::path::{Path, PathBuf};

/// Bytes in a GiB, for messages.
pub const GIB: f64 = (1u64 << 30) as f64;

/// `case` built on a grid of the fewest nodes: its physics validated by the code that builds
/// the problem, its variables counted, without allocating the real grid.
pub fn stand_in<R: Real>(case: &Case) -> Result<Problem<R>, ProblemError> {
    let mut small = case.clone();
    small.mesh.nodes = vec![MIN_NODES; case.mesh.dim];
    small.problem::<R>()
}

/// The state a run holds in host memory at its peak.
pub struct StateSize {
    /// Copies of the whole state.
    pub copies: usize,
    /// Values of one variable (the grid with its ghosts and padded rows).
    pub values: usize,
    /// Bytes in all.
    pub bytes: u128,
}

impl StateSize {
    /// The state of `case` with `equations` variables cut into `blocks` blocks: the problem's
    /// initial state; on the CPU the two buffers iterated between (a GPU holds those itself;
    /// its free memory is checked when the backend starts); with several blocks the driver's
    /// copy of the initial state; and at checkpoints and at the end a downloaded state and
    /// its encoding; the implicit relaxation's arrays. Counted in u128, which no grid that fits the address space overflows.
    pub fn of(case: &Case, equations: usize, blocks: usize) -> Result<StateSize, ProblemError> {
        let layout = Layout::new(case.mesh.dim, case.nodes()?);
        let on_cpu = case.backend.kind == BackendKind::Cpu;
        let copies = 1 + 2 * on_cpu as usize + (blocks > 1) as usize + 2;
        let width: u128 = match case.backend.precision {
            Precision::F64 => 8,
            Precision::F32 => 4,
        };
        // The implicit relaxation's arrays (CPU): the continuity residual and the explicit
        // step's rate in the state's precision; the right-hand side, two increment buffers and
        // ten frozen operator values per node in its own.
        let relaxation = match case.numerics.method {
            MethodKind::Explicit => 0,
            MethodKind::Implicit | MethodKind::Auto => {
                let own: u128 = match case.numerics.implicit_precision {
                    Precision::F64 => 8,
                    Precision::F32 => 4,
                };
                2 * width + (3 * equations as u128 + 10) * own
            }
        };
        Ok(StateSize {
            copies,
            values: layout.len,
            bytes: ((copies * equations) as u128 * width + relaxation) * layout.len as u128,
        })
    }

    /// The size in GiB.
    pub fn gib(&self) -> f64 {
        self.bytes as f64 / GIB
    }

    /// Refuses, as bad input, a state larger than `available` bytes; `name` is the case's.
    pub fn fits(&self, name: &str, available: Option<u64>) -> Result<(), Failure> {
        match available.filter(|a| self.bytes > *a as u128) {
            Some(a) => Err(Failure::input(format!(
                "{name}: the state needs {:.1} GiB ({} copies of {} values per variable), \
                 {:.1} GiB are available",
                self.gib(),
                self.copies,
                self.values,
                a as f64 / GIB
            ))),
            None => Ok(()),
        }
    }
}

/// Bytes of memory this process may still allocate: the smallest of Linux's `MemAvailable`
/// and, for every memory cgroup (v2, or v1's memory controller) from this process's up to the
/// root, its limit less its usage (less the inactive page cache, which the kernel reclaims
/// first). None where none of them can be read.
pub fn available() -> Option<u64> {
    available_under(Path::new("/"))
}

/// The most memory this process has held resident so far (`VmHWM`), in bytes; None where
/// `/proc/self/status` cannot be read.
pub fn peak_resident() -> Option<u64> {
    peak_resident_in(&fs::read_to_string("/proc/self/status").ok()?)
}

/// `VmHWM` of the text of a `/proc/<pid>/status`, in bytes.
fn peak_resident_in(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// [`available`] with `/proc` and `/sys/fs/cgroup` under `root`.
fn available_under(root: &Path) -> Option<u64> {
    let meminfo = fs::read_to_string(root.join("proc/meminfo")).ok();
    let mem_available = meminfo.as_deref().and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    });
    let groups = fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
    let sys = root.join("sys/fs/cgroup");
    let mut limits = Vec::new();
    for line in groups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (dir, [limit, usage, cache]) = if id == "0" && controllers.is_empty() {
            (
                sys.clone(),
                ["memory.max", "memory.current", "inactive_file"],
            )
        } else if controllers.split(',').any(|c| c == "memory") {
            let files = ["memory.limit_in_bytes", "memory.usage_in_bytes"];
            (
                sys.join("memory"),
                [files[0], files[1], "total_inactive_file"],
            )
        } else {
            continue;
        };
        for group in Path::new(path).ancestors() {
            let at: PathBuf = dir.join(group.strip_prefix("/").unwrap_or(group));
            let read = |file: &str| fs::read_to_string(at.join(file)).ok();
            let number = |file: &str| read(file)?.trim().parse::<u64>().ok();
            // "max" (v2) does not parse: no limit.
            let Some(limit) = number(limit) else {
                continue;
            };
            let stat = read("memory.stat").unwrap_or_default();
            let reclaimable = stat.lines().find_map(|l| {
                l.strip_prefix(cache)?
                    .strip_prefix(' ')?
                    .parse::<u64>()
                    .ok()
            });
            let used = number(usage).unwrap_or(0);
            limits.push(limit.saturating_sub(used.saturating_sub(reclaimable.unwrap_or(0))));
        }
    }
    limits.into_iter().chain(mem_available).min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peak_resident_memory_is_read_from_the_status_text() {
        let status = "Name:\tferroflow\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 1 kB\n";
        assert_eq!(peak_resident_in(status), Some(123456 * 1024));
        assert_eq!(peak_resident_in("Name:\tx\n"), None);
        // This process has touched memory.
        assert!(peak_resident().is_some_and(|b| b > 1 << 20));
    }

    fn write(root: &Path, file: &str, text: &str) {
        let path = root.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    #[test]
    fn the_tightest_of_meminfo_and_every_cgroup_limit_counts() {
        let tmp = tempfile::TempDir::new().unwrap();
        let root = tmp.path();
        assert_eq!(available_under(root), None);
        write(
            root,
            "proc/meminfo",
            "MemTotal: 64 kB\nMemAvailable:  8000 kB\n",
        );
        assert_eq!(available_under(root), Some(8_192_000));
        // v2: the job's own group is unlimited, its parent allows 5 MB with 1 MB used.
        write(root, "proc/self/cgroup", "0::/jobs/run\n");
        write(root, "sys/fs/cgroup/jobs/run/memory.max", "max\n");
        write(root, "sys/fs/cgroup/jobs/run/memory.current", "4000\n");
        write(root, "sys/fs/cgroup/jobs/memory.max", "5000000\n");
        write(root, "sys/fs/cgroup/jobs/memory.current", "1000000\n");
        assert_eq!(available_under(root), Some(4_000_000));
        // v1: the memory controller's group, with its limit and usage.
        write(root, "proc/self/cgroup", "4:memory:/box\n3:cpu:/\n");
        write(
            root,
            "sys/fs/cgroup/memory/box/memory.limit_in_bytes",
            "3000000\n",
        );
        write(
            root,
            "sys/fs/cgroup/memory/box/memory.usage_in_bytes",
            "2000000\n",
        );
        assert_eq!(available_under(root), Some(1_000_000));
        // Inactive page cache is reclaimed before the limit bites.
        let stat = "cache 900000\ninactive_file 1\ntotal_inactive_file 500000\n";
        write(root, "sys/fs/cgroup/memory/box/memory.stat", stat);
        assert_eq!(available_under(root), Some(1_500_000));
    }
}
