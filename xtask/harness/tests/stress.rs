//! Small runs of the stress program: 0 violations with the lock, and violations found without
//! it (so the check itself can fail).

use std::process::Command;

fn stress(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_stress"))
        .args(args)
        .output()
        .expect("run stress");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    (output.status.success(), stdout)
}

fn violations(report: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.starts_with("critical sections:"))
        .unwrap_or_else(|| panic!("no summary in:\n{report}"));
    line.split("violations:")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn redis_url() -> Option<String> {
    lock_testing::server_url("LOCK_TEST_REDIS_URL").expect("test server")
}

#[test]
fn memory_stress_has_no_violations() {
    let (ok, report) = stress(&["--backend", "memory", "--sections", "3000"]);
    assert!(ok, "{report}");
    assert_eq!(violations(&report), 0);
}

#[test]
fn memory_stress_without_the_lock_finds_violations() {
    let (ok, report) = stress(&["--backend", "memory", "--sections", "3000", "--no-lock"]);
    assert!(!ok, "{report}");
    assert!(violations(&report) > 0, "{report}");
}

#[test]
fn redis_stress_across_processes_has_no_violations() {
    let Some(url) = redis_url() else { return };
    let args = [
        "--backend",
        "redis",
        "--processes",
        "3",
        "--tasks",
        "4",
        "--sections",
        "1500",
    ];
    let (ok, report) = stress(&[&args[..], &["--redis-url", &url]].concat());
    assert!(ok, "{report}");
    assert_eq!(violations(&report), 0);
}

#[test]
fn redis_stress_without_the_lock_finds_violations() {
    let Some(url) = redis_url() else { return };
    let args = [
        "--backend",
        "redis",
        "--processes",
        "2",
        "--sections",
        "600",
        "--no-lock",
    ];
    let (ok, report) = stress(&[&args[..], &["--redis-url", &url]].concat());
    assert!(!ok, "{report}");
    assert!(violations(&report) > 0, "{report}");
}
