//! Chromium: not a server but a tool the suites need installed, Debian's `chromium` and
//! `chromium-driver`, for the admin console's browser test (lock-tower's
//! `tests/it/admin_browser.rs`). That test starts `chromedriver` itself, on a free loopback
//! port of its own, and stops it: nothing runs here, no port is taken, nothing is stopped;
//! `stack up --with chromium` installs it, and the env file names its two programs while
//! they are installed.

use std::path::Path;

/// `--with chromium`.
pub(crate) const NAME: &str = "chromium";

/// The files that must exist, and the Debian package that brings each: the browser, its
/// driver, and a font for the pages' text (Chromium only recommends one, and
/// `--no-install-recommends` leaves a bare machine without: the screenshot's text would be
/// boxes).
const PACKAGES: &[(&str, &str)] = &[
    ("/usr/bin/chromium", "chromium"),
    ("/usr/bin/chromedriver", "chromium-driver"),
    (
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "fonts-dejavu-core",
    ),
];

/// What the suites read: the driver the browser test starts, and the browser it drives.
const ENV: &[(&str, &str)] = &[
    ("LOCK_TEST_CHROMEDRIVER", "/usr/bin/chromedriver"),
    ("LOCK_TEST_CHROMIUM", "/usr/bin/chromium"),
];

/// The Debian packages that are not installed yet.
pub(crate) fn missing_packages() -> Vec<&'static str> {
    PACKAGES
        .iter()
        .filter(|(file, _)| !Path::new(file).exists())
        .map(|(_, package)| *package)
        .collect()
}

/// Whether the browser and its driver are installed.
pub(crate) fn installed() -> bool {
    ENV.iter().all(|(_, file)| Path::new(file).exists())
}

/// The env vars of the browser test, while Chromium and its driver are installed.
pub(crate) fn env_vars() -> Vec<(&'static str, String)> {
    if installed() {
        ENV.iter()
            .map(|(key, value)| (*key, (*value).to_owned()))
            .collect()
    } else {
        Vec::new()
    }
}

/// `stack status`'s line.
pub(crate) fn status_line() -> String {
    if installed() {
        format!("{NAME}: installed (a tool: the browser test starts its own chromedriver)  [LOCK_TEST_CHROMEDRIVER]")
    } else {
        format!(
            "{NAME}: not installed (`cargo xtask stack up --with {NAME}` installs {})",
            missing_packages().join(" and ")
        )
    }
}
