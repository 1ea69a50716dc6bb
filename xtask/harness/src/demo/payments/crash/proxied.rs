//! The deterministic case (see the [module docs](super)): the process's route to its records
//! is stalled by a fault proxy once its handler runs; its payment commits on the ledger's own
//! route; then the process is killed. Before `ClaimInfo::commit_in` the record could only be
//! left in flight here, and the retry paid again.

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

use tokio::time::timeout;

use super::sweep::{answered, user};
use super::verify::{KeyVerdict, Tally};
use super::{CrashSetup, Records};
use crate::demo::payments::checks::body;
use crate::demo::payments::client::{client, post_payment};
use crate::shared::proxy::{Direction, Fault, FaultProxy};

/// Runs the case `attempts` times on `setup` (a fresh process each time; the survivor is of
/// the other framework); the counts of every key.
pub async fn run(setup: &CrashSetup, attempts: usize) -> Result<Tally, String> {
    let bound = Duration::from_secs(30) + (setup.lease * 4 + setup.handler) * attempts as u32;
    timeout(bound, cases(setup, attempts))
        .await
        .map_err(|_| format!("the proxied case did not finish within {bound:?}"))?
}

async fn cases(setup: &CrashSetup, attempts: usize) -> Result<Tally, String> {
    let ledger = setup.ledger().await?;
    let direct = setup.shared_args(&setup.redis_url, &setup.postgres_url);
    let mut survivor_args = direct.clone();
    survivor_args.extend(["--handler-ms".into(), "0".into()]);
    let survivors = [
        setup.apps[0].launch(&survivor_args).await?,
        setup.apps[1].launch(&survivor_args).await?,
    ];
    let client = client(2);
    let mut tally = Tally::default();
    for attempt in 0..attempts {
        // The records' server behind a proxy of this attempt's own.
        let records_url = match setup.records {
            Records::Redis => &setup.redis_url,
            Records::Postgres => &setup.postgres_url,
        };
        let (upstream, rewrite) = route(records_url)?;
        let proxy = FaultProxy::start(upstream)
            .await
            .map_err(|e| format!("fault proxy: {e}"))?;
        let proxied = rewrite(proxy.addr());
        let mut args = match setup.records {
            Records::Redis => setup.shared_args(&proxied, &setup.postgres_url),
            Records::Postgres => {
                let mut args = setup.shared_args(&setup.redis_url, &proxied);
                args.extend(["--ledger-url".into(), setup.postgres_url.clone()]);
                args
            }
        };
        args.extend([
            "--handler-ms".into(),
            setup.handler.as_millis().to_string(),
            "--announce".into(),
        ]);
        let mut victim = setup.apps[attempt % 2].launch(&args).await?;
        let survivor = &survivors[(attempt + 1) % 2].base;
        let key = format!("{}-proxied-{attempt}", setup.namespace);
        let payer = format!("payer-{key}");
        let cents = 500 + attempt as u64;
        let paid = body(&payer, "shop", cents);
        let pending = {
            let (client, base, key, paid) = (
                client.clone(),
                victim.base.clone(),
                key.clone(),
                paid.clone(),
            );
            tokio::spawn(async move {
                post_payment(&client, &base, Some(user()), Some(&key), &paid).await
            })
        };
        // Claimed: from now on nothing reaches the records' server from this process.
        expect_line(&mut victim, &format!("handling {} {key} fence ", user())).await?;
        proxy.set(Direction::Both, Fault::Stall);
        // The payment committed on the ledger's own route: kill the process now.
        expect_line(&mut victim, &format!("paid {} {key} payment ", user())).await?;
        victim.kill().await?;
        let first = pending.await.map_err(|e| e.to_string())?;
        let retry = answered(&client, survivor, &key, &paid, setup.lease).await?;
        let verdict =
            KeyVerdict::of(&ledger, (user(), &key), (&payer, cents), &first, &retry).await?;
        if !verdict.is_right() {
            eprintln!("proxied {key}: {verdict:?}; retry {retry:?}");
        }
        tally.add(&verdict);
    }
    Ok(tally)
}

/// The next line of `app` starts with `prefix`.
async fn expect_line(
    app: &mut crate::demo::payments::AppProcess,
    prefix: &str,
) -> Result<(), String> {
    let line = app.next_line(Duration::from_secs(30)).await?;
    if line.starts_with(prefix) {
        Ok(())
    } else {
        Err(format!("expected a line {prefix:?}..., got {line:?}"))
    }
}

/// The server address in `url` (`scheme://[user@]host:port[/...]`), and a function giving
/// the same URL with another address in its place.
fn route(url: &str) -> Result<(SocketAddr, impl Fn(SocketAddr) -> String + '_), String> {
    let bad = || format!("cannot find host:port in {url:?}");
    let authority_start = url.find("://").ok_or_else(bad)? + 3;
    let authority_end = url[authority_start..]
        .find('/')
        .map_or(url.len(), |end| authority_start + end);
    let host_start = url[authority_start..authority_end]
        .rfind('@')
        .map_or(authority_start, |at| authority_start + at + 1);
    let upstream = url[host_start..authority_end]
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", bad()))?
        .next()
        .ok_or_else(bad)?;
    let rewrite =
        move |addr: SocketAddr| format!("{}{addr}{}", &url[..host_start], &url[authority_end..]);
    Ok((upstream, rewrite))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_rerouted_through_an_address() {
        let proxy: SocketAddr = "127.0.0.1:4000".parse().unwrap();
        let (upstream, rewrite) = route("postgres://postgres@127.0.0.1:25432/postgres").unwrap();
        assert_eq!(upstream, "127.0.0.1:25432".parse().unwrap());
        assert_eq!(
            rewrite(proxy),
            "postgres://postgres@127.0.0.1:4000/postgres"
        );
        let (upstream, rewrite) = route("redis://127.0.0.1:26379/").unwrap();
        assert_eq!(upstream, "127.0.0.1:26379".parse().unwrap());
        assert_eq!(rewrite(proxy), "redis://127.0.0.1:4000/");
        assert!(route("no-scheme").is_err());
    }
}
