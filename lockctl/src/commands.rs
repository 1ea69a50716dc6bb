//! The commands, each on a lock client in the application's namespace.

use std::time::Duration;

use lock_core::backend::KeyStatus;
use lock_core::operator::json;
use lock_core::{HolderLabel, LockClient, Result};

use crate::args::{Args, Command};
use crate::exit::Exit;
use crate::text;

/// The most pages one `ls` reads before it hands back a cursor.
const MAX_PAGES: usize = 100;

/// Runs the command of `args`; the exit says what it found.
pub(crate) async fn run(args: &Args, client: &LockClient) -> Result<Exit> {
    let admin = client.admin();
    let Some(command) = &args.command else {
        return Ok(Exit::Usage);
    };
    match command {
        Command::List {
            prefix,
            limit,
            cursor,
        } => {
            // Pages until `limit` keys are found or the listing ends: a page may come back
            // short (the store walks its keys in bounded steps).
            let mut keys = Vec::new();
            let mut next = cursor.clone();
            for _ in 0..MAX_PAGES {
                let page = admin
                    .list(prefix, next.as_ref(), *limit - keys.len())
                    .await?;
                keys.extend(page.keys);
                next = page.next;
                if next.is_none() || keys.len() >= *limit {
                    break;
                }
            }
            if args.json {
                let page = lock_core::backend::InspectionPage::new(keys.clone(), next.clone());
                println!("{}", json::page(&page));
            } else {
                print!("{}", text::listing(&keys));
                if let Some(next) = &next {
                    println!("more: --cursor {}", next.as_str());
                }
            }
            Ok(if keys.is_empty() && next.is_none() {
                Exit::NotFound
            } else {
                Exit::Ok
            })
        }
        Command::Show { key } => {
            let seen = admin.inspect_primitive(args.primitive, key).await?;
            if args.json {
                println!("{}", json::inspection(&seen));
            } else {
                print!("{}", text::inspection(&seen));
            }
            Ok(status_exit(seen.status))
        }
        Command::Watch { key, every } => watch(args, client, key, *every).await,
        Command::Release {
            key,
            reason,
            operator,
            owner,
        } => {
            let operator = operator.clone().unwrap_or_else(default_operator);
            let record = admin
                .force_release_holder(args.primitive, key, *owner, reason, &operator)
                .await?;
            if args.json {
                println!("{}", json::record(&record));
            } else {
                print!("{}", text::record(&record));
            }
            Ok(Exit::Ok)
        }
        Command::Audit { key, limit } => {
            let records = admin.audit(key.as_deref(), *limit).await?;
            if args.json {
                println!("{}", json::records(&records));
            } else {
                for record in &records {
                    print!("{}", text::record(record));
                }
            }
            Ok(if records.is_empty() {
                Exit::NotFound
            } else {
                Exit::Ok
            })
        }
    }
}

fn status_exit(status: KeyStatus) -> Exit {
    if status == KeyStatus::Free {
        Exit::Free
    } else {
        Exit::Ok
    }
}

/// Shows the key each time what is seen of it changes, until Ctrl-C (then exits as `show`
/// would for the last state seen).
async fn watch(args: &Args, client: &LockClient, key: &str, every: Duration) -> Result<Exit> {
    let admin = client.admin();
    let mut last: Option<String> = None;
    let interrupted = tokio::signal::ctrl_c();
    tokio::pin!(interrupted);
    loop {
        let seen = admin.inspect_primitive(args.primitive, key).await?;
        let status = seen.status;
        // Compare without the ticking fields, so only a change of hands prints.
        let mut steady = seen.clone();
        for holder in &mut steady.holders {
            holder.lease_left = None;
        }
        if let lock_core::backend::Waiters::Listed(waiters) = &mut steady.waiters {
            for waiter in waiters {
                waiter.waiting_for = None;
            }
        }
        let fingerprint = json::inspection(&steady);
        if last.as_ref() != Some(&fingerprint) {
            if args.json {
                println!("{}", json::inspection(&seen));
            } else {
                print!("{}", text::inspection(&seen));
            }
            last = Some(fingerprint);
        }
        tokio::select! {
            _ = &mut interrupted => return Ok(status_exit(status)),
            () = tokio::time::sleep(every) => {}
        }
    }
}

/// `LOCKCTL_OPERATOR`, else `$USER@host`.
fn default_operator() -> String {
    if let Ok(name) = std::env::var("LOCKCTL_OPERATOR") {
        return name;
    }
    let user = std::env::var("USER").unwrap_or_else(|_| "unknown".into());
    let host = HolderLabel::from_process()
        .get("host")
        .unwrap_or("unknown")
        .to_owned();
    format!("{user}@{host}")
}
