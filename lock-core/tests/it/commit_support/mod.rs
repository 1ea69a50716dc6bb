//! The effects of `idempotency_commit`'s requests: a row per execution in a table of the
//! test's own, in PostgreSQL or MySQL, written in a transaction that also writes the answer.

use lock_core::idempotency::{ClaimInfo, Committed};
use lock_core::results::StoredResponse;
use lock_core::sql::RecoveryPoints;
use lock_core::Result as LockResult;
use lock_testing::server_url;
use sqlx::{MySqlPool, PgPool};

const EFFECTS: &str = "idempotency_commit_effect_rows";

/// The database the effects are written to.
#[derive(Clone)]
pub(crate) enum Effects {
    Postgres(PgPool),
    MySql(MySqlPool),
}

/// An open transaction on [`Effects`].
pub(crate) enum Tx {
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    MySql(sqlx::Transaction<'static, sqlx::MySql>),
}

impl Effects {
    /// The server of `LOCK_TEST_POSTGRES_URL` or `LOCK_TEST_MYSQL_URL`, with the effects
    /// table; `None` when it is not configured (a loud skip, or a failure under CI).
    pub(crate) async fn connect(mysql: bool) -> Option<Self> {
        if mysql {
            let url = server_url("LOCK_TEST_MYSQL_URL").unwrap()?;
            let pool = MySqlPool::connect(&url).await.unwrap();
            sqlx::raw_sql(&format!(
                "CREATE TABLE IF NOT EXISTS {EFFECTS} (k VARCHAR(255) NOT NULL, fence BIGINT NOT NULL)"
            ))
            .execute(&pool)
            .await
            .unwrap();
            Some(Self::MySql(pool))
        } else {
            let url = server_url("LOCK_TEST_POSTGRES_URL").unwrap()?;
            let pool = PgPool::connect(&url).await.unwrap();
            sqlx::raw_sql(&format!(
                "SELECT pg_advisory_xact_lock(7101); CREATE TABLE IF NOT EXISTS {EFFECTS} (k text NOT NULL, fence bigint NOT NULL)"
            ))
            .execute(&pool)
            .await
            .unwrap();
            Some(Self::Postgres(pool))
        }
    }

    /// The PostgreSQL pool (for the tests whose records are in PostgreSQL).
    pub(crate) fn postgres(&self) -> &PgPool {
        match self {
            Self::Postgres(pool) => pool,
            Self::MySql(_) => panic!("the effects are in MySQL"),
        }
    }

    /// Recovery points in this database.
    pub(crate) async fn recovery_points(&self) -> RecoveryPoints {
        match self {
            Self::Postgres(pool) => RecoveryPoints::from_pool(pool.clone()).await.unwrap(),
            Self::MySql(pool) => RecoveryPoints::from_pool(pool.clone()).await.unwrap(),
        }
    }

    pub(crate) async fn begin(&self) -> Tx {
        match self {
            Self::Postgres(pool) => Tx::Postgres(pool.begin().await.unwrap()),
            Self::MySql(pool) => Tx::MySql(pool.begin().await.unwrap()),
        }
    }

    /// The rows of effect `key`.
    pub(crate) async fn count(&self, key: &str) -> i64 {
        match self {
            Self::Postgres(pool) => {
                sqlx::query_scalar(&format!("SELECT count(*) FROM {EFFECTS} WHERE k = $1"))
                    .bind(key)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
            Self::MySql(pool) => {
                sqlx::query_scalar(&format!("SELECT count(*) FROM {EFFECTS} WHERE k = ?"))
                    .bind(key)
                    .fetch_one(pool)
                    .await
                    .unwrap()
            }
        }
    }

    /// Whether session `id` waits for a lock.
    pub(crate) async fn waits_for_a_lock(&self, id: i64) -> bool {
        match self {
            Self::Postgres(pool) => sqlx::query_scalar(
                "SELECT coalesce(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1",
            )
            .bind(i32::try_from(id).unwrap())
            .fetch_one(pool)
            .await
            .unwrap(),
            Self::MySql(pool) => {
                let waiting: i64 = sqlx::query_scalar(
                    "SELECT count(*) FROM information_schema.innodb_trx \
                     WHERE trx_mysql_thread_id = ? AND trx_state = 'LOCK WAIT'",
                )
                .bind(id)
                .fetch_one(pool)
                .await
                .unwrap();
                waiting > 0
            }
        }
    }
}

impl Tx {
    /// The row of one execution of effect `key`.
    pub(crate) async fn insert_effect(&mut self, key: &str, fence: u64) {
        let fence = i64::try_from(fence).unwrap();
        match self {
            Self::Postgres(tx) => {
                sqlx::query(&format!("INSERT INTO {EFFECTS} (k, fence) VALUES ($1, $2)"))
                    .bind(key)
                    .bind(fence)
                    .execute(&mut **tx)
                    .await
                    .unwrap();
            }
            Self::MySql(tx) => {
                sqlx::query(&format!("INSERT INTO {EFFECTS} (k, fence) VALUES (?, ?)"))
                    .bind(key)
                    .bind(fence)
                    .execute(&mut **tx)
                    .await
                    .unwrap();
            }
        }
    }

    pub(crate) async fn commit_in(
        &mut self,
        claim: &ClaimInfo,
        answer: &StoredResponse,
    ) -> LockResult<Committed> {
        match self {
            Self::Postgres(tx) => claim.commit_in(tx, answer).await,
            Self::MySql(tx) => claim.commit_in(tx, answer).await,
        }
    }

    pub(crate) async fn commit(self) {
        match self {
            Self::Postgres(tx) => tx.commit().await.unwrap(),
            Self::MySql(tx) => tx.commit().await.unwrap(),
        }
    }

    /// The database session this transaction runs on.
    pub(crate) async fn session(&mut self) -> i64 {
        match self {
            Self::Postgres(tx) => {
                let pid: i32 = sqlx::query_scalar("SELECT pg_backend_pid()")
                    .fetch_one(&mut **tx)
                    .await
                    .unwrap();
                i64::from(pid)
            }
            Self::MySql(tx) => {
                let id: u64 = sqlx::query_scalar("SELECT CONNECTION_ID()")
                    .fetch_one(&mut **tx)
                    .await
                    .unwrap();
                i64::try_from(id).unwrap()
            }
        }
    }
}
