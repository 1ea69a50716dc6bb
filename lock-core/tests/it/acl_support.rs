//! A Redis ACL user limited to its service's keys and channels, as managed Redis sets one up:
//! on a `redis-server` of the test's own, the user `svc` may touch only `~<prefix>:*` and
//! publish or subscribe only on `&<prefix>:*`, with every command but the dangerous ones
//! (`+@all -@dangerous`: no `KEYS`, `FLUSHALL`, `INFO`, `MONITOR`, ...). A backend connects as
//! that user with the same key prefix; anything the toolkit writes or subscribes to outside the
//! prefix fails with `NOPERM`.
//!
//! The suites run on it with [`AclRedis`] (each instance a backend of its own on the user's
//! connections, fault injection through [`AclRedis::admin`]); a store's own test takes
//! [`acl_user_backend`]. The stock store's suites can take either the same way, and end with
//! [`AclRedis::assert_no_refusals`].

use lock_core::RedisBackend;
use lock_testing::{free_port, RedisServer};

/// The ACL user's name and password.
const USER: &str = "svc";
const PASSWORD: &str = "svc-password";

/// A `redis-server` of the test's own with an ACL user limited to `prefix` (see the module
/// docs). The server is killed when this is dropped.
pub(crate) struct AclRedis {
    server: RedisServer,
    prefix: String,
}

impl AclRedis {
    /// Starts the server and creates the user: keys `~<prefix>:*`, channels `&<prefix>:*`,
    /// `+@all -@dangerous`.
    pub(crate) async fn start(prefix: &str) -> Self {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(lock_testing::unique("redis-acl"));
        let server = RedisServer::start(free_port(), dir);
        let acl = Self {
            server,
            prefix: prefix.to_owned(),
        };
        let mut admin = acl.admin().await;
        let () = redis::cmd("ACL")
            .arg("SETUSER")
            .arg(USER)
            .arg("reset")
            .arg("on")
            .arg(format!(">{PASSWORD}"))
            .arg(format!("~{prefix}:*"))
            .arg("resetchannels")
            .arg(format!("&{prefix}:*"))
            .arg("+@all")
            .arg("-@dangerous")
            .query_async(&mut admin)
            .await
            .unwrap();
        acl
    }

    /// The prefix the user is limited to.
    pub(crate) fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL that connects as the limited user.
    pub(crate) fn url(&self) -> String {
        format!(
            "redis://{USER}:{PASSWORD}@127.0.0.1:{}/",
            self.server.port()
        )
    }

    /// A backend connected as the limited user, with its key prefix.
    pub(crate) async fn backend(&self) -> RedisBackend {
        RedisBackend::builder(self.url())
            .key_prefix(&self.prefix)
            .connect()
            .await
            .unwrap()
    }

    /// A connection as the server's default user (every key and command), for a test's fault
    /// injection and inspection.
    pub(crate) async fn admin(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }

    /// The `NOPERM` refusals the server logged (`ACL LOG`), one line each: what was refused
    /// (a key, a channel, a command) and where (`toplevel`, or `lua` inside a script). Empty
    /// when the user never went outside its limits, but for `INFO` (a dangerous command): a
    /// backend asks for the server's `run_id` only to log a restart, and goes on without it.
    pub(crate) async fn refusals(&self) -> Vec<String> {
        let entries: Vec<std::collections::HashMap<String, redis::Value>> = redis::cmd("ACL")
            .arg("LOG")
            .query_async(&mut self.admin().await)
            .await
            .unwrap();
        let text = |fields: &std::collections::HashMap<String, redis::Value>, name: &str| {
            fields
                .get(name)
                .and_then(|v| redis::from_redis_value_ref::<String>(v).ok())
                .unwrap_or_default()
        };
        entries
            .iter()
            .map(|fields| ["reason", "object", "context"].map(|name| text(fields, name)))
            .filter(|[reason, object, _]| !(reason == "command" && object == "info"))
            .map(|[reason, object, context]| format!("{reason} {object:?} refused in {context}"))
            .collect()
    }

    /// Fails the test if the user was ever refused: a key or channel outside its prefix.
    pub(crate) async fn assert_no_refusals(&self) {
        let refused = self.refusals().await;
        assert!(
            refused.is_empty(),
            "the ACL user limited to {}:* was refused: {refused:#?}",
            self.prefix
        );
    }
}

/// A server with an ACL user limited to `prefix` (see the module docs), and a backend
/// connected as that user with that key prefix: the stores made from the backend must work
/// with no `NOPERM` ([`AclRedis::assert_no_refusals`]). Keep the server while the backend is
/// used (dropping it kills it); it makes more backends for other instances.
pub(crate) async fn acl_user_backend(prefix: &str) -> (AclRedis, RedisBackend) {
    let acl = AclRedis::start(prefix).await;
    let backend = acl.backend().await;
    (acl, backend)
}
