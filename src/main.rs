//! The `ctxbench` binary: parse the command line, run the library, map errors to exit codes.
#![forbid(unsafe_code)]

use clap::Parser;
use std::process::ExitCode;

/// mimalloc (v2, without transparent huge pages) instead of glibc's malloc: a needle unit's
/// state is built on one thread and freed or grown on another (the shared prefix walks, the
/// dispatcher dropping samples), and glibc locks the allocating thread's arena for each such
/// call — ~10,000–12,000 `futex` calls on the 1,000-unit sweep, ~770 with mimalloc, a fifth less CPU
/// (docs/dependencies.md). `--no-default-features` keeps the system's, for heap profilers that
/// intercept malloc.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = ctxbench::cli::Cli::parse();
    match ctxbench::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            // Not `eprintln!`: a closed stderr must not turn the exit code into a panic's 101.
            ctxbench::output::emit_err(&format!(
                "error: {}\n",
                ctxbench::output::error_chain(&err)
            ));
            ExitCode::from(ctxbench::cli::exit_code_for(&err))
        }
    }
}
