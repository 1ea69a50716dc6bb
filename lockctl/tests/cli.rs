//! `lockctl` run as a user runs it, against a real Redis: a lock held by this test with
//! waiters behind it, then `show`, `ls`, `release --reason`, `audit`, and the exit codes.

use std::time::Duration;

use lock_core::{HolderLabel, LockClient, LostReason, RedisBackend};
use tokio::process::Command;

/// What `lockctl` printed and how it exited.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

async fn lockctl(url: &str, namespace: &str, args: &[&str]) -> Run {
    let output = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(env!("CARGO_BIN_EXE_lockctl"))
            .arg("--url")
            .arg(url)
            .arg("--namespace")
            .arg(namespace)
            .args(args)
            .env("LOCKCTL_OPERATOR", "test@ops")
            .output(),
    )
    .await
    .expect("lockctl hung")
    .expect("lockctl ran");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_release_and_audit_against_redis() {
    let Some(url) = lock_testing::server_url("LOCK_TEST_REDIS_URL").unwrap() else {
        return;
    };
    let namespace = lock_testing::unique("lockctl").replace('-', "_");
    let label = HolderLabel::from_process()
        .service("checkout", "2.4.1")
        .unwrap();
    let locks = LockClient::builder(RedisBackend::connect(&url).await.unwrap())
        .namespace(namespace.clone())
        .label(label)
        .build()
        .unwrap();
    let key = "order:<42>";
    let held = locks.lock(key).await.unwrap();
    let waiter = tokio::spawn({
        let locks = locks.clone();
        async move { locks.lock(key).await.unwrap() }
    });

    let show = lockctl(&url, &namespace, &["show", key]).await;
    assert_eq!(show.code, 0, "{}{}", show.stdout, show.stderr);
    assert!(show.stdout.contains("held"), "{}", show.stdout);
    assert!(
        show.stdout.contains("service=checkout version=2.4.1"),
        "{}",
        show.stdout
    );
    assert!(
        show.stdout.contains(&held.owner_token().to_hex()),
        "{}",
        show.stdout
    );

    let json = lockctl(&url, &namespace, &["--json", "show", key]).await;
    assert_eq!(json.code, 0);
    assert!(json
        .stdout
        .starts_with(r#"{"primitive":"lock","key":"order:\u003c42\u003e","status":"held""#));
    assert!(json
        .stdout
        .contains(&format!("\"fencing_token\":{}", held.fencing_token().get())));

    let ls = lockctl(&url, &namespace, &["ls", "order:"]).await;
    assert_eq!(ls.code, 0, "{}{}", ls.stdout, ls.stderr);
    assert!(ls.stdout.contains("order:<42>"), "{}", ls.stdout);

    let release = lockctl(
        &url,
        &namespace,
        &["release", key, "--reason", "stuck since the deploy"],
    )
    .await;
    assert_eq!(release.code, 0, "{}{}", release.stdout, release.stderr);
    assert!(release
        .stdout
        .contains("by test@ops: stuck since the deploy"));
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), held.lost())
            .await
            .expect("the holder never learned"),
        LostReason::Revoked {
            operator: "test@ops".into(),
            reason: "stuck since the deploy".into()
        }
    );
    let next = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the waiter was not handed the lock")
        .unwrap();
    assert!(next.fencing_token() > held.fencing_token());

    let audit = lockctl(&url, &namespace, &["--json", "audit", key]).await;
    assert_eq!(audit.code, 0, "{}", audit.stderr);
    assert!(audit
        .stdout
        .contains(r#""operator":"test@ops","reason":"stuck since the deploy""#));
    assert!(audit.stdout.contains(&held.owner_token().to_hex()));

    // The exit codes a script tests.
    next.release().await.unwrap();
    let free = lockctl(&url, &namespace, &["show", key]).await;
    assert_eq!(free.code, 3, "free: {}", free.stdout);
    let refused = lockctl(&url, &namespace, &["release", key, "--reason", "again"]).await;
    assert_eq!(refused.code, 5, "refused: {}", refused.stderr);
    assert!(refused.stderr.contains("it is free"));
    let nothing = lockctl(&url, &namespace, &["audit", "never-released"]).await;
    assert_eq!(nothing.code, 4);
    let bad = lockctl(&url, &namespace, &["release", key, "--reason", ""]).await;
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    let usage = lockctl(&url, &namespace, &["frobnicate"]).await;
    assert_eq!(usage.code, 2);
    let down = lockctl("redis://127.0.0.1:1/", &namespace, &["show", key]).await;
    assert_eq!(down.code, 6, "{}", down.stderr);
}
