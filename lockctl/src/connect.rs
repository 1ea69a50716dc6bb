//! The store a URL names, as a lock client under the application's namespace.

use lock_core::{
    EtcdBackend, LockClient, LockError, MySqlBackend, PostgresBackend, RedisBackend, Result,
    ZooKeeperBackend,
};

use crate::args::Args;

/// A client on the store of `--url` (or `LOCKCTL_URL`), in `--namespace`.
pub(crate) async fn client(args: &Args) -> Result<LockClient> {
    let url = args
        .url
        .clone()
        .or_else(|| std::env::var("LOCKCTL_URL").ok())
        .ok_or_else(|| {
            LockError::InvalidConfig("no store given: --url URL or LOCKCTL_URL".into())
        })?;
    let prefix = args.prefix.as_deref();
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| LockError::InvalidConfig(format!("{url:?} is not a URL (scheme://...)")))?;
    let builder = match scheme {
        "redis" | "rediss" | "redis+unix" | "unix" => {
            let mut builder = RedisBackend::builder(url.clone());
            if let Some(prefix) = prefix {
                builder = builder.key_prefix(prefix);
            }
            LockClient::builder(builder.connect().await?)
        }
        "redis+cluster" | "rediss+cluster" => {
            let tls = scheme.starts_with("rediss");
            let nodes = hosts(rest)
                .map(|host| format!("{}://{host}/", if tls { "rediss" } else { "redis" }));
            let mut builder = RedisBackend::builder_cluster(nodes);
            if let Some(prefix) = prefix {
                builder = builder.key_prefix(prefix);
            }
            LockClient::builder(builder.connect().await?)
        }
        "redis+sentinel" => {
            let (sentinels, service) = rest.split_once('/').ok_or_else(|| {
                LockError::InvalidConfig(
                    "redis+sentinel://host:port,.../SERVICE needs the service name".into(),
                )
            })?;
            let nodes = hosts(sentinels).map(|host| format!("redis://{host}/"));
            let mut builder = RedisBackend::builder_sentinel(nodes, service.trim_end_matches('/'));
            if let Some(prefix) = prefix {
                builder = builder.key_prefix(prefix);
            }
            LockClient::builder(builder.connect().await?)
        }
        "postgres" | "postgresql" => LockClient::builder(PostgresBackend::connect(&url).await?),
        "mysql" | "mariadb" => {
            let url = url.replacen("mariadb://", "mysql://", 1);
            LockClient::builder(MySqlBackend::connect(&url).await?)
        }
        "zookeeper" | "zk" => LockClient::builder(ZooKeeperBackend::connect(rest).await?),
        "etcd" | "etcds" => {
            let http = if scheme == "etcds" { "https" } else { "http" };
            let endpoints: Vec<String> = hosts(rest).map(|h| format!("{http}://{h}")).collect();
            let mut builder = EtcdBackend::builder(&endpoints.join(","));
            if let Some(prefix) = prefix {
                builder = builder.key_prefix(prefix);
            }
            LockClient::builder(builder.connect().await?)
        }
        other => {
            return Err(LockError::InvalidConfig(format!(
                "unknown store {other:?}: redis, rediss, redis+cluster, redis+sentinel, \
                 postgres, mysql, zookeeper or etcd"
            )))
        }
    };
    builder.namespace(args.namespace.clone()).build()
}

/// `host:port,host:port[/...]` → each `host:port`.
fn hosts(list: &str) -> impl Iterator<Item = &str> {
    list.split('/')
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|h| !h.is_empty())
}
