//! Two link-time choices for the `ctxbench` executable's start-up (README, Speed).
//!
//! **The unwinder linked in, not loaded** (default on Linux/glibc, `CTXBENCH_SHARED_LIBGCC=1`
//! to opt out): Rust's standard library takes its unwinder (`_Unwind_*`) from the shared
//! `libgcc_s.so.1`, which every start then maps, relocates and initializes — its constructor
//! probes the CPU with `cpuid`, which traps to the hypervisor on a virtual machine. Linking the
//! same unwinder from gcc's static `libgcc_eh.a` (whole, ahead of `-lgcc_s`, which `--as-needed`
//! then drops) is what `gcc -static-libgcc` does for C++ programs: ~0.1 ms less per process
//! (`perf stat -r 400 -e task-clock`). Panics, `catch_unwind` and backtraces work as before —
//! the whole test suite runs linked this way. Skipped when the C compiler does not have the
//! archive (then the shared library is used, as before) and when cross-compiling.
//!
//! **Optionally, position-dependent** (non-PIE):
//! `CTXBENCH_NO_PIE=1 cargo build --release`. The default stays PIE (address-randomized).
//!
//! A PIE executable is relocated by the dynamic loader at every start: ~32,000 relative
//! relocations in this binary, which also copy-on-write every page of `.data.rel.ro` and `.got`
//! (~130 page faults). Position-dependent, those pages stay shared file mappings and are touched
//! only when used, which is most of the start-up cost a short `ctxbench replay` pays beyond the
//! exec itself (see README, Speed). Only the binary is linked this way (`rustc-link-arg-bins`):
//! the library, tests and benches are unchanged. The cost is that the executable's own code is
//! not address-randomized (shared libraries, heap and stack still are), a hardening loss that a
//! tool reading untrusted trace files should not take by default: the fast link is opt-in.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CTXBENCH_NO_PIE");
    println!("cargo:rerun-if-env-changed=CTXBENCH_SHARED_LIBGCC");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    let linux_gnu = os == "linux" && env == "gnu";
    println!("cargo::rustc-check-cfg=cfg(ctxbench_static_unwinder)");
    if linux_gnu && !opted("CTXBENCH_SHARED_LIBGCC") && static_unwinder_available() {
        // A `-l` of this crate comes before the standard library's `-lgcc_s` on the link line.
        println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");
        // For tests/startup_link.rs.
        println!("cargo:rustc-cfg=ctxbench_static_unwinder");
    }
    // gcc/clang driving GNU ld or lld on Linux understand `-no-pie`; elsewhere keep the default.
    if linux_gnu && opted("CTXBENCH_NO_PIE") {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}

fn opted(var: &str) -> bool {
    std::env::var_os(var).is_some_and(|v| v == "1")
}

/// Whether the C compiler that links (`cc`, rustc's default on Linux) has `libgcc_eh.a`, for a
/// native build: `cc -print-file-name=libgcc_eh.a` prints a path only when it finds the file.
fn static_unwinder_available() -> bool {
    if std::env::var("HOST").ok() != std::env::var("TARGET").ok() {
        return false;
    }
    let Ok(out) = std::process::Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
    else {
        return false;
    };
    let path = String::from_utf8_lossy(&out.stdout);
    let path = std::path::Path::new(path.trim());
    out.status.success() && path.is_absolute() && path.is_file()
}
