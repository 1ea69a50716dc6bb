//! `lockctl`: the operator's command for lock-core's locks.
//!
//! ```text
//! lockctl --url redis://127.0.0.1:6379/ --namespace shop show order:42
//! lockctl --url redis://127.0.0.1:6379/ --namespace shop release order:42 --reason "stuck since deploy"
//! lockctl --url redis://127.0.0.1:6379/ --namespace shop audit order:42 --json
//! ```
//!
//! Run `lockctl help` for every command and option, and the exit codes scripts can test
//! (`exit.rs`). It speaks to the store directly, through the same backends as the
//! application, so it needs the store's URL, not the application's.

mod args;
mod commands;
mod connect;
mod exit;
mod text;

use std::process::ExitCode;

use crate::args::Args;
use crate::exit::Exit;

#[tokio::main]
async fn main() -> ExitCode {
    let args = match Args::parse(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(problem) => {
            eprintln!("lockctl: {problem}\n\n{}", args::USAGE);
            return Exit::Usage.into();
        }
    };
    if args.help {
        println!("{}", args::USAGE);
        return Exit::Ok.into();
    }
    let client = match connect::client(&args).await {
        Ok(client) => client,
        Err(error) => {
            eprintln!("lockctl: {}", text::error_chain(&error));
            return Exit::of_error(&error).into();
        }
    };
    match commands::run(&args, &client).await {
        Ok(exit) => exit.into(),
        Err(error) => {
            eprintln!("lockctl: {}", text::error_chain(&error));
            Exit::of_error(&error).into()
        }
    }
}
