//! Files written whole or not at all: each is written to `<name>.tmp` beside it, synced and
//! renamed over the old one, so that a failed write (a full disk, a kill) never leaves a
//! truncated file in place of a good one. Errors name the file.
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// Writes the file at `path` with `write`, atomically; on failure the temporary file is
/// removed and the file at `path` is as it was.
pub fn write_with(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temporary(path);
    let written = File::create(&tmp).and_then(|file| {
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    });
    if let Err(e) = written {
        let _ = fs::remove_file(&tmp);
        return Err(naming(path, e));
    }
    // Make the rename itself durable; not every platform can sync a directory.
    if let Some(dir) = path.parent().and_then(|d| File::open(d).ok()) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Writes `bytes` to the file at `path`, atomically.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    write_with(path, |w| w.write_all(bytes.as_ref()))
}

/// The temporary file a write to `path` goes through: `<name>.tmp` beside it.
pub fn temporary(path: &Path) -> PathBuf {
    let mut name = path.file_name().map_or_else(OsString::new, OsString::from);
    name.push(".tmp");
    path.with_file_name(name)
}

/// `error` with a message that names the file it concerns; the kind is kept.
pub fn naming(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(
        error.kind(),
        format!("cannot write {}: {error}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_keeps_the_old_file_and_names_the_new_one() {
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("summary.json");
        write(&path, "good\n").unwrap();
        let failed = write_with(&path, |w| {
            w.write_all(&[b'x'; 100_000])?;
            Err(io::Error::from_raw_os_error(28)) // ENOSPC, as a full disk reports it
        })
        .unwrap_err();
        assert_eq!(failed.kind(), io::ErrorKind::StorageFull);
        let message = failed.to_string();
        assert!(message.contains(&path.display().to_string()), "{message}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "good\n");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["summary.json"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_full_device_fails_the_write_naming_the_file() {
        // /dev/full accepts opening and fails every write with ENOSPC: write through it by
        // making the temporary file a link to it.
        let dir = tempfile::TempDir::new().unwrap();
        let path = dir.path().join("fields.vti");
        write(&path, "good").unwrap();
        std::os::unix::fs::symlink("/dev/full", temporary(&path)).unwrap();
        let failed = write(&path, vec![0u8; 1 << 16]).unwrap_err();
        assert_eq!(failed.kind(), io::ErrorKind::StorageFull, "{failed}");
        assert!(failed.to_string().contains("fields.vti"), "{failed}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "good");
        assert!(!temporary(&path).exists());
    }
}
