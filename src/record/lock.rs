//! The run directory's owner: an exclusive advisory lock on `<run-dir>/.lock`, held for the
//! whole life of the process that writes the run (`run`, `run --resume`, `repair`; `report` and
//! `compare` while they write their files into a run directory).
//!
//! The lock is the operating system's (`File::try_lock`: `flock` on Unix, `LockFileEx` on
//! Windows), so it goes away with its process however that process ends: a lock left by a
//! killed run is simply free. The file also carries the holder's pid, for the message a second
//! writer gets and for readers (`report`, `compare`, `gate`), which say a run is still in
//! progress. On a file system without locks (`try_lock` unsupported) the pid alone decides: a
//! pid that is no longer running is a stale lock, taken over.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Name of the lock file inside a run directory (hidden: not part of the run's results).
pub const LOCK_FILE: &str = ".lock";

/// How often and how long a writer retries a held lock before giving up: a reader's brief
/// shared lock (see [`holder`]) must never refuse a writer.
const ATTEMPTS: u32 = 10;
const PAUSE: Duration = Duration::from_millis(30);

/// Why the run directory could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process writes this run.
    #[error(
        "{dir} is being written by another ctxbench process (pid {pid}); wait for it to finish \
         or stop it (`kill {pid}`) before writing this run",
        dir = .dir.display(),
        pid = .pid.map_or("unknown".to_string(), |p| p.to_string())
    )]
    Held { dir: PathBuf, pid: Option<u32> },
    #[error("cannot lock {}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Ownership of a run directory; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
    path: PathBuf,
    /// Pid of a dead process whose lock file was taken over (only where the file system has
    /// no locks: with them, a dead holder's lock is simply free).
    pub took_over: Option<u32>,
}

impl RunLock {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> LockError + '_ {
    move |source| LockError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The pid recorded in an open lock file, if it holds one.
fn recorded_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

/// True when process `pid` exists. Where that cannot be told (no `/proc`), true: a lock is
/// never taken from a process that might be alive.
pub fn pid_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    proc_root.join(pid.to_string()).exists()
}

/// Takes the lock of run directory `dir` (which must exist), writing this process's pid in it.
pub fn acquire(dir: &Path) -> Result<RunLock, LockError> {
    let path = dir.join(LOCK_FILE);
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(io(&path))?;
    let mut took_over = None;
    let mut attempt = 0;
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {
                attempt += 1;
                if attempt >= ATTEMPTS {
                    return Err(LockError::Held {
                        dir: dir.to_path_buf(),
                        pid: recorded_pid(&mut file),
                    });
                }
                std::thread::sleep(PAUSE);
            }
            // No locks on this file system: the recorded pid decides.
            Err(TryLockError::Error(e)) if e.kind() == std::io::ErrorKind::Unsupported => {
                match recorded_pid(&mut file) {
                    Some(pid) if pid_alive(pid) && pid != std::process::id() => {
                        return Err(LockError::Held {
                            dir: dir.to_path_buf(),
                            pid: Some(pid),
                        })
                    }
                    Some(pid) if pid != std::process::id() => took_over = Some(pid),
                    _ => {}
                }
                break;
            }
            Err(TryLockError::Error(e)) => return Err(io(&path)(e)),
        }
    }
    file.set_len(0).map_err(io(&path))?;
    file.seek(SeekFrom::Start(0)).map_err(io(&path))?;
    writeln!(file, "{}", std::process::id()).map_err(io(&path))?;
    file.flush().map_err(io(&path))?;
    Ok(RunLock {
        _file: file,
        path,
        took_over,
    })
}

/// Who writes run directory `dir` right now: `Some(pid)` (0 when the pid is unreadable) while a
/// live process holds its lock, `None` when nobody does (a finished or killed run, or a run
/// directory from before locks). Takes a shared lock for an instant to tell.
pub fn holder(dir: &Path) -> Option<u32> {
    let path = dir.join(LOCK_FILE);
    let mut file = File::open(&path).ok()?;
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            None
        }
        Err(TryLockError::WouldBlock) => Some(recorded_pid(&mut file).unwrap_or(0)),
        Err(TryLockError::Error(_)) => {
            recorded_pid(&mut file).filter(|&p| p != std::process::id() && pid_alive(p))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_owner_at_a_time_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(holder(dir.path()), None, "no lock file: nobody");
        let lock = acquire(dir.path()).unwrap();
        assert_eq!(lock.took_over, None);
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
        // A second open file description conflicts even within one process (flock semantics).
        match acquire(dir.path()) {
            Err(LockError::Held { pid, .. }) => assert_eq!(pid, Some(std::process::id())),
            other => panic!("expected Held, got {other:?}"),
        }
        assert_eq!(holder(dir.path()), Some(std::process::id()));
        drop(lock);
        assert_eq!(holder(dir.path()), None);
        let again = acquire(dir.path()).unwrap();
        drop(again);
    }

    #[test]
    fn a_dead_holders_pid_is_no_lock() {
        let dir = tempfile::tempdir().unwrap();
        // A pid no process has (beyond Linux's pid_max): what a killed run leaves behind.
        std::fs::write(dir.path().join(LOCK_FILE), "4999999\n").unwrap();
        assert!(!pid_alive(4_999_999) || !Path::new("/proc/self").exists());
        assert_eq!(holder(dir.path()), None);
        let lock = acquire(dir.path()).unwrap();
        let text = std::fs::read_to_string(lock.path()).unwrap();
        assert_eq!(text.trim(), std::process::id().to_string());
    }
}
