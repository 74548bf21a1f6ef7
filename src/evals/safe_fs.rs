//! Opening a file of the offload store for the sandboxed tools so that nothing hostile planted
//! in the store can hang or widen the read: only a regular file with exactly one link, opened
//! without following a symlink and without blocking, checked on the opened descriptor (not the
//! path, so swapping the file between the check and the open does not help), and read up to a
//! byte cap.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// Opens `real` (a path already resolved inside `root`) for reading, or says why not, in words
/// the model sees. `shown` is the virtual path used in messages.
pub fn open_regular(root: &Path, real: &Path, shown: &str) -> Result<File, String> {
    // A cheap first look that never opens anything special.
    let pre = std::fs::symlink_metadata(real).map_err(|_| format!("no such file: {shown}"))?;
    refuse_unless_regular(&pre, shown)?;
    let file = open_nofollow(real).map_err(|e| format!("cannot open {shown}: {e}"))?;
    // The authoritative check: the descriptor actually opened.
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot inspect {shown}: {e}"))?;
    refuse_unless_regular(&meta, shown)?;
    check_still_inside(root, &file, shown)?;
    Ok(file)
}

fn refuse_unless_regular(meta: &std::fs::Metadata, shown: &str) -> Result<(), String> {
    let ft = meta.file_type();
    if ft.is_symlink() {
        return Err(format!("{shown} is refused: symlinks are not followed"));
    }
    if ft.is_dir() {
        return Err(format!("{shown} is a directory; use ls"));
    }
    if !ft.is_file() {
        return Err(format!(
            "{shown} is refused: not a regular file (a FIFO, socket or device)"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() != 1 {
            return Err(format!(
                "{shown} is refused: it has {} hard links (only files with one link are read)",
                meta.nlink()
            ));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn open_nofollow(real: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        // O_NONBLOCK: opening a FIFO that was swapped in after the first look returns at once
        // (and is then refused by the descriptor check) instead of waiting for a writer.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(real)
}

#[cfg(not(unix))]
fn open_nofollow(real: &Path) -> std::io::Result<File> {
    File::open(real)
}

/// On Linux, the descriptor's real path must still be under the store root (a directory on the
/// way swapped for a symlink after resolution would show here). Elsewhere a no-op.
fn check_still_inside(root: &Path, file: &File, shown: &str) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let link = format!("/proc/self/fd/{}", file.as_raw_fd());
        if let Ok(real) = std::fs::read_link(link) {
            if !real.starts_with(root) {
                return Err(format!("{shown} is refused: it is outside the store"));
            }
        }
    }
    let _ = (root, file, shown);
    Ok(())
}

/// Reads at most `max_bytes` of `file`; the flag is true when the file had more.
pub fn read_capped(file: File, max_bytes: u64) -> std::io::Result<(Vec<u8>, bool)> {
    let mut buf = Vec::new();
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut buf)?;
    let more = buf.len() as u64 > max_bytes;
    buf.truncate(max_bytes as usize);
    Ok((buf, more))
}
