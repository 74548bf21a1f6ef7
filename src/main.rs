//! The `ctxbench` binary: parse the command line, run the library, map errors to exit codes.
#![forbid(unsafe_code)]

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = ctxbench::cli::Cli::parse();
    match ctxbench::cli::run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(ctxbench::cli::exit_code_for(&err))
        }
    }
}
