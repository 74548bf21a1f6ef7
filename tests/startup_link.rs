//! The start-up link `build.rs` chooses (README, Speed): the unwinder linked in from gcc's
//! `libgcc_eh.a`, so the `ctxbench` executable does not load `libgcc_s.so.1` at every start —
//! and panics still unwind, are caught and carry backtraces.

use std::process::Command;

// Linked (not only declared), so its native libraries are part of this binary's link.
extern crate ctxbench;

/// The libraries the dynamic loader maps for the real executable, listed by glibc's loader
/// itself (`LD_TRACE_LOADED_OBJECTS=1`, what `ldd` does: nothing of `main` runs).
#[cfg(ctxbench_static_unwinder)]
#[test]
fn the_executable_does_not_load_the_shared_unwinder() {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxbench"))
        .env("LD_TRACE_LOADED_OBJECTS", "1")
        .output()
        .unwrap();
    let libs = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && libs.contains("libc.so"), "{libs}");
    assert!(!libs.contains("libgcc_s"), "{libs}");
}

/// A binary that links the library (this test) gets the same link as the executable.
#[cfg(ctxbench_static_unwinder)]
#[test]
fn this_process_has_no_shared_unwinder_mapped() {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(!maps.contains("libgcc_s"), "{maps}");
}

#[inline(never)]
fn fail(depth: u32) -> u32 {
    if depth == 0 {
        panic!("deliberate");
    }
    fail(depth - 1) + 1
}

#[test]
fn a_panic_unwinds_through_frames_and_is_caught_with_a_backtrace() {
    let dropped = std::sync::atomic::AtomicBool::new(false);
    struct Guard<'a>(&'a std::sync::atomic::AtomicBool);
    impl Drop for Guard<'_> {
        fn drop(&mut self) {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _guard = Guard(&dropped);
        fail(std::hint::black_box(5))
    }));
    assert!(caught.is_err());
    assert!(
        dropped.load(std::sync::atomic::Ordering::SeqCst),
        "destructors ran"
    );
    let trace = std::backtrace::Backtrace::force_capture().to_string();
    assert!(trace.contains("a_panic_unwinds_through_frames"), "{trace}");
}
