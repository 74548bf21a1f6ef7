//! Optionally link the `ctxbench` executable as a position-dependent (non-PIE) binary:
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
    if std::env::var_os("CTXBENCH_NO_PIE").is_none_or(|v| v != "1") {
        return;
    }
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    // gcc/clang driving GNU ld or lld on Linux understand `-no-pie`; elsewhere keep the default.
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
