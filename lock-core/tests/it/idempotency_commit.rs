//! An idempotent request's effect and its answer committed together
//! (`ClaimInfo::commit_in`), in each configuration:
//!
//! - records in a `PostgresResultStore` on the effect's database: the in-flight record becomes
//!   the completed one in the handler's transaction;
//! - records on Redis, `RecoveryPoints` in the effect's PostgreSQL;
//! - records on Redis, `RecoveryPoints` in the effect's MySQL.
//!
//! Each test makes an effect (a row in a table of its own) and then ends the claim *without*
//! completing it through the layer, as a process that dies right after its commit would: the
//! retry must replay the committed answer, and the effect table must hold one row.
//! Overlapping executions (a holder paused past its lease) must not both commit.
//!
//! Needs `LOCK_TEST_POSTGRES_URL`, `LOCK_TEST_MYSQL_URL` and `LOCK_TEST_REDIS_URL`;
//! `cargo xtask test` sets them and makes a missing server a failure.

use std::time::Duration;

use lock_core::idempotency::{
    Begin, ClaimInfo, Committed, Completion, Fingerprint, Idempotency, InFlight,
};
use lock_core::redis::RedisResultStore;
use lock_core::results::StoredResponse;
use lock_core::sql::PostgresResultStore;
use lock_core::sql::RecoveryPoints;
use lock_core::{FencingToken, LeaseMode, LockError, PostgresBackend, RedisBackend};
use lock_testing::{server_url, unique};
use tokio::time::timeout;

use crate::commit_support::Effects;

const BOUND: Duration = Duration::from_secs(30);

/// Where the records are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Records {
    /// In a `PostgresResultStore` on the effect's database (PostgreSQL).
    Postgres,
    /// On Redis, with recovery points in the effect's PostgreSQL.
    RedisWithPostgresPoints,
    /// On Redis, with recovery points in the effect's MySQL.
    RedisWithMySqlPoints,
}

struct Setup {
    effects: Effects,
    records: Records,
    namespace: String,
}

impl Setup {
    async fn new(records: Records) -> Option<Self> {
        if records != Records::Postgres {
            server_url("LOCK_TEST_REDIS_URL").unwrap()?;
        }
        let effects = Effects::connect(records == Records::RedisWithMySqlPoints).await?;
        Some(Self {
            effects,
            records,
            namespace: unique("commit"),
        })
    }

    /// One more instance (its own connections) holding claims with `lease`.
    async fn instance(&self, lease: LeaseMode) -> Idempotency {
        if self.records == Records::Postgres {
            let pool = self.effects.postgres();
            let backend = PostgresBackend::from_pool(pool.clone()).await.unwrap();
            let store = PostgresResultStore::from_pool(pool.clone()).await.unwrap();
            return Idempotency::builder(store, backend)
                .namespace(&self.namespace)
                .lease(lease)
                .build()
                .unwrap();
        }
        let url = server_url("LOCK_TEST_REDIS_URL").unwrap().unwrap();
        let backend = RedisBackend::connect(&url).await.unwrap();
        let store = RedisResultStore::from_backend(&backend).await.unwrap();
        Idempotency::builder(store, backend)
            .namespace(&self.namespace)
            .lease(lease)
            .recovery_points(self.effects.recovery_points().await)
            .build()
            .unwrap()
    }

    /// The effect of `claim` and its answer in one transaction; commits only when the answer
    /// was recorded. Returns what `commit_in` said.
    async fn pay(&self, claim: &ClaimInfo, body: &str) -> Committed {
        let mut transaction = self.effects.begin().await;
        transaction
            .insert_effect(&self.effect_key(&claim.key), claim.fencing_token.get())
            .await;
        let committed = transaction.commit_in(claim, &receipt(body)).await.unwrap();
        if committed == Committed::Recorded {
            transaction.commit().await;
        }
        committed
    }

    fn effect_key(&self, key: &str) -> String {
        format!("{}/{key}", self.namespace)
    }

    async fn effects(&self, key: &str) -> i64 {
        self.effects.count(&self.effect_key(key)).await
    }
}

fn receipt(body: &str) -> StoredResponse {
    StoredResponse::new(
        201,
        vec![
            ("content-type".into(), b"text/plain".to_vec()),
            ("content-length".into(), b"99".to_vec()),
        ],
        body.as_bytes().to_vec(),
    )
}

fn payment(cents: u32) -> Fingerprint {
    Fingerprint::builder("POST", "/payments")
        .body(cents.to_string().as_bytes())
        .finish()
}

/// `commit_in` refused: a configuration error, for the caller to roll back.
fn assert_refused(refused: Result<Committed, LockError>) {
    assert!(
        matches!(refused, Err(LockError::InvalidConfig(_))),
        "{refused:?}"
    );
}

async fn run(idempotency: &Idempotency, key: &str, cents: u32) -> lock_core::idempotency::Claim {
    match idempotency
        .begin("alice", key, payment(cents), InFlight::Conflict)
        .await
        .unwrap()
    {
        Begin::Run(claim) => claim,
        other => panic!("the request runs, got {other:?}"),
    }
}

/// The effect committed with its answer; the process then ends the claim without completing
/// it through the layer (dropped here: it died, or was cancelled, right after the commit).
/// The retry replays the committed answer; one effect.
async fn a_retry_after_the_commit_replays(setup: Setup) {
    let instance = setup.instance(LeaseMode::default()).await;
    let key = unique("after-commit");
    let claim = run(&instance, &key, 100).await;
    assert_eq!(
        setup.pay(claim.info(), "paid once").await,
        Committed::Recorded
    );
    drop(claim);
    let retry = setup.instance(LeaseMode::default()).await;
    // Waits for the dropped claim's lease (released in the background, as a dead process's
    // would run out), then claims.
    match retry
        .begin(
            "alice",
            &key,
            payment(100),
            InFlight::Wait(Duration::from_secs(10)),
        )
        .await
        .unwrap()
    {
        Begin::Replay(done) => {
            assert_eq!(done.response.body, b"paid once");
            let names: Vec<&str> = done
                .response
                .headers
                .iter()
                .map(|(n, _)| n.as_str())
                .collect();
            assert_eq!(names, ["content-type"], "no content-length replayed");
        }
        other => panic!("the retry replays, got {other:?}"),
    }
    // Once more, from the record this time (completed by the recovery on Redis).
    assert!(matches!(
        retry
            .begin("alice", &key, payment(100), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Replay(_)
    ));
    // Another body under the key is refused, not run.
    assert!(matches!(
        retry
            .begin("alice", &key, payment(999), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Mismatch
    ));
    assert_eq!(setup.effects(&key).await, 1);
}

/// The layer's completion after the handler committed (the process lived on) finds the
/// committed answer and reports it as this claim's, not as a newer claim's.
async fn the_completion_after_a_commit_is_the_committed_answer(setup: Setup) {
    let instance = setup.instance(LeaseMode::default()).await;
    let key = unique("then-complete");
    let claim = run(&instance, &key, 11).await;
    assert_eq!(
        setup.pay(claim.info(), "committed").await,
        Committed::Recorded
    );
    match claim.complete(receipt("committed")).await.unwrap() {
        Completion::Stored(done) => assert_eq!(done.response.body, b"committed"),
        other => panic!("stored as this claim's answer, got {other:?}"),
    }
    assert_eq!(instance.stats().superseded, 0);
    assert!(matches!(
        instance
            .begin("alice", &key, payment(11), InFlight::Conflict)
            .await
            .unwrap(),
        Begin::Replay(_)
    ));
    assert_eq!(setup.effects(&key).await, 1);
}

/// The transaction rolled back: nothing was recorded, and the retry runs.
async fn a_rolled_back_transaction_records_nothing(setup: Setup) {
    let instance = setup.instance(LeaseMode::default()).await;
    let key = unique("rolled-back");
    let claim = run(&instance, &key, 5).await;
    let mut transaction = setup.effects.begin().await;
    assert_eq!(
        transaction
            .commit_in(claim.info(), &receipt("never"))
            .await
            .unwrap(),
        Committed::Recorded
    );
    drop(transaction);
    // The handler failed: the layer gives the key back.
    claim.release().await.unwrap();
    let claim = run(&instance, &key, 5).await;
    assert_eq!(setup.pay(claim.info(), "second").await, Committed::Recorded);
    assert_eq!(setup.effects(&key).await, 1);
}

/// A holder paused past its lease, and the retry that took over: whichever commits first
/// makes the one effect; the other is told to roll back.
async fn overlapping_executions_commit_once(setup: Setup, paused_commits_first: bool) {
    let paused = setup
        .instance(LeaseMode::fixed(Duration::from_millis(300)))
        .await;
    let retrying = setup.instance(LeaseMode::default()).await;
    let key = unique("overlap");
    let zombie = run(&paused, &key, 7).await;
    let Begin::Run(retry) = retrying
        .begin(
            "alice",
            &key,
            payment(7),
            InFlight::Wait(Duration::from_secs(10)),
        )
        .await
        .unwrap()
    else {
        panic!("the retry takes over once the paused holder's lease ran out");
    };
    assert!(retry.info().fencing_token > zombie.info().fencing_token);
    let (first, second) = if paused_commits_first {
        (&zombie, &retry)
    } else {
        (&retry, &zombie)
    };
    let first_said = setup.pay(first.info(), "first").await;
    let second_said = setup.pay(second.info(), "second").await;
    match setup.records {
        // The record's fence decides: the retry's claim replaced the paused one's record.
        Records::Postgres => {
            let (zombie_said, retry_said) = if paused_commits_first {
                (first_said, second_said)
            } else {
                (second_said, first_said)
            };
            assert_eq!(retry_said, Committed::Recorded);
            match (paused_commits_first, zombie_said) {
                // The record was the retry's in-flight one.
                (true, Committed::Superseded(None)) => {}
                // The record was already the retry's completed one.
                (false, Committed::Superseded(Some(done))) => {
                    assert_eq!(done.response.body, b"first");
                }
                (_, other) => panic!("the paused holder is told to roll back, got {other:?}"),
            }
        }
        // The recovery point's key decides: the first commit wins.
        Records::RedisWithPostgresPoints | Records::RedisWithMySqlPoints => {
            assert_eq!(first_said, Committed::Recorded);
            match second_said {
                Committed::Superseded(Some(done)) => assert_eq!(done.response.body, b"first"),
                other => panic!("the second execution is told to roll back, got {other:?}"),
            }
        }
    }
    assert_eq!(setup.effects(&key).await, 1);
}

async fn paused_holder_commits_first(setup: Setup) {
    overlapping_executions_commit_once(setup, true).await;
}

async fn retry_commits_first(setup: Setup) {
    overlapping_executions_commit_once(setup, false).await;
}

/// The first execution's transaction is still open when the second one's write comes: the
/// second waits for it, then learns it lost.
async fn a_commit_waits_for_the_open_one(setup: Setup) {
    let instance = setup.instance(LeaseMode::default()).await;
    let key = unique("open");
    let claim = run(&instance, &key, 3).await;
    let mut open = setup.effects.begin().await;
    assert_eq!(
        open.commit_in(claim.info(), &receipt("open"))
            .await
            .unwrap(),
        Committed::Recorded
    );
    // A second execution: the same info, through the recovery point's key or the record row.
    let (session, second_session) = tokio::sync::oneshot::channel();
    let second = {
        let (effects, info) = (setup.effects.clone(), claim.info().clone());
        tokio::spawn(async move {
            let mut transaction = effects.begin().await;
            session.send(transaction.session().await).unwrap();
            transaction
                .commit_in(&info, &receipt("second"))
                .await
                .unwrap()
        })
    };
    // The second write waits for the open transaction: its session shows a lock wait.
    let id = second_session.await.unwrap();
    while !setup.effects.waits_for_a_lock(id).await {
        assert!(
            !second.is_finished(),
            "the second write must wait for the open one"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    open.commit().await;
    match second.await.unwrap() {
        Committed::Superseded(Some(done)) => assert_eq!(done.response.body, b"open"),
        other => panic!("the second learns the first committed, got {other:?}"),
    }
}

/// Payments of different keys commit at the same moment, each in its own transaction, a
/// round after another: every one is recorded, none fails (on MySQL a delete of a missing
/// point before the insert took gap locks two transactions could share, and their inserts
/// deadlocked: the database rolled one back, effect and all).
async fn payments_of_different_keys_commit_at_once(setup: Setup) {
    let setup = std::sync::Arc::new(setup);
    let instance = setup.instance(LeaseMode::default()).await;
    for round in 0..10 {
        let mut claims = Vec::new();
        for n in 0..8 {
            let key = unique(&format!("together-{round}-{n}"));
            claims.push(run(&instance, &key, 5).await);
        }
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(claims.len()));
        let payments: Vec<_> = claims
            .iter()
            .map(|claim| {
                let (setup, barrier, info) = (setup.clone(), barrier.clone(), claim.info().clone());
                tokio::spawn(async move {
                    let mut transaction = setup.effects.begin().await;
                    transaction
                        .insert_effect(&setup.effect_key(&info.key), info.fencing_token.get())
                        .await;
                    barrier.wait().await;
                    let committed = transaction.commit_in(&info, &receipt("paid")).await;
                    if matches!(committed, Ok(Committed::Recorded)) {
                        transaction.commit().await;
                    }
                    committed.map_err(|error| error.to_string())
                })
            })
            .collect();
        for payment in payments {
            assert_eq!(
                payment.await.unwrap(),
                Ok(Committed::Recorded),
                "round {round}"
            );
        }
        for claim in claims {
            assert_eq!(setup.effects(&claim.info().key).await, 1);
        }
    }
}

/// The tests of one configuration, in a module of their own: each on a [`Setup`] of its own
/// (none, and nothing run, when a server is missing and may be).
macro_rules! tests_for {
    ($module:ident, $records:expr, [$($name:ident => $body:ident;)*]) => {
        mod $module {
            use super::*;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    timeout(BOUND, async {
                        if let Some(setup) = Setup::new($records).await {
                            super::$body(setup).await;
                        }
                    })
                    .await
                    .unwrap();
                }
            )*
        }
    };
}

/// Every test of the list, in each configuration.
macro_rules! every_configuration {
    ($tests:tt) => {
        tests_for!(postgres_records, Records::Postgres, $tests);
        tests_for!(
            redis_records_with_postgres_points,
            Records::RedisWithPostgresPoints,
            $tests
        );
        tests_for!(
            redis_records_with_mysql_points,
            Records::RedisWithMySqlPoints,
            $tests
        );
    };
}

every_configuration!([
    a_retry_after_the_commit_replays => a_retry_after_the_commit_replays;
    a_rolled_back_transaction_records_nothing => a_rolled_back_transaction_records_nothing;
    the_completion_after_a_commit_is_the_committed_answer => the_completion_after_a_commit_is_the_committed_answer;
    the_paused_holder_commits_first_and_once => paused_holder_commits_first;
    the_retry_commits_first_and_once => retry_commits_first;
    a_commit_waits_for_the_open_one => a_commit_waits_for_the_open_one;
    payments_of_different_keys_commit_at_once => payments_of_different_keys_commit_at_once;
]);

/// Records on Redis lost (a restart without persistence, a `forget`): the recovery point still
/// answers for the request, and refuses another request under the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_record_is_recovered_from_its_point() {
    let Some(setup) = Setup::new(Records::RedisWithPostgresPoints).await else {
        return;
    };
    timeout(BOUND, async {
        let instance = setup.instance(LeaseMode::default()).await;
        let key = unique("lost-record");
        let claim = run(&instance, &key, 42).await;
        assert_eq!(setup.pay(claim.info(), "kept").await, Committed::Recorded);
        claim.release().await.unwrap();
        instance.forget("alice", &key).await.unwrap();
        assert!(matches!(
            instance
                .begin("alice", &key, payment(43), InFlight::Conflict)
                .await
                .unwrap(),
            Begin::Mismatch
        ));
        instance.forget("alice", &key).await.unwrap();
        match instance
            .begin("alice", &key, payment(42), InFlight::Conflict)
            .await
            .unwrap()
        {
            Begin::Replay(done) => assert_eq!(done.response.body, b"kept"),
            other => panic!("replayed from the point, got {other:?}"),
        }
        assert_eq!(setup.effects(&key).await, 1);
        assert!(instance.stats().replayed >= 1);
    })
    .await
    .unwrap();
}

/// Without a place to write to, or with an info made by hand, `commit_in` is a typed error,
/// and the caller rolls back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_place_to_commit_is_a_typed_error() {
    let Some(setup) = Setup::new(Records::Postgres).await else {
        return;
    };
    timeout(BOUND, async {
        let memory = Idempotency::memory("commit-memory").unwrap();
        let claim = run(&memory, "k", 1).await;
        let mut transaction = setup.effects.postgres().begin().await.unwrap();
        let refused = claim
            .info()
            .commit_in(&mut transaction, &receipt("x"))
            .await;
        assert_refused(refused);
        let by_hand = ClaimInfo::new("alice", "k", FencingToken::new(1));
        let refused = by_hand.commit_in(&mut transaction, &receipt("x")).await;
        assert_refused(refused);
        // A PostgreSQL store whose record is not there (forgotten): refused, nothing written.
        let instance = setup.instance(LeaseMode::default()).await;
        let key = unique("forgotten");
        let claim = run(&instance, &key, 1).await;
        instance.forget("alice", &key).await.unwrap();
        let refused = claim
            .info()
            .commit_in(&mut transaction, &receipt("x"))
            .await;
        assert_refused(refused);
    })
    .await
    .unwrap();
}

/// Records in PostgreSQL: the completed record is pushed when the transaction commits, so a
/// duplicate waiting for it gets the replay while the claim is still held (before the layer's
/// own completion).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_duplicate_gets_the_committed_answer_pushed() {
    let Some(setup) = Setup::new(Records::Postgres).await else {
        return;
    };
    timeout(BOUND, async {
        let instance = setup.instance(LeaseMode::default()).await;
        let other = setup.instance(LeaseMode::default()).await;
        let key = unique("pushed");
        let claim = run(&instance, &key, 77).await;
        let duplicate = {
            let key = key.clone();
            tokio::spawn(async move {
                other
                    .begin(
                        "alice",
                        &key,
                        payment(77),
                        InFlight::Wait(Duration::from_secs(20)),
                    )
                    .await
                    .unwrap()
            })
        };
        assert_eq!(setup.pay(claim.info(), "pushed").await, Committed::Recorded);
        match duplicate.await.unwrap() {
            Begin::Replay(done) => assert_eq!(done.response.body, b"pushed"),
            other => panic!("the duplicate gets the committed answer, got {other:?}"),
        }
        drop(claim);
    })
    .await
    .unwrap();
}

/// Recovery points in one database and the effect's transaction in another: refused, as are
/// records in PostgreSQL with a MySQL transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_on_another_database_is_refused() {
    let (Some(mysql), Some(postgres)) = (
        Setup::new(Records::RedisWithMySqlPoints).await,
        Setup::new(Records::Postgres).await,
    ) else {
        return;
    };
    timeout(BOUND, async {
        let on_mysql = mysql.instance(LeaseMode::default()).await;
        let claim = run(&on_mysql, &unique("crossed"), 1).await;
        let mut transaction = postgres.effects.begin().await;
        let refused = transaction.commit_in(claim.info(), &receipt("x")).await;
        assert_refused(refused);
        let on_postgres = postgres.instance(LeaseMode::default()).await;
        let claim = run(&on_postgres, &unique("crossed"), 1).await;
        let mut transaction = mysql.effects.begin().await;
        let refused = transaction.commit_in(claim.info(), &receipt("x")).await;
        assert_refused(refused);
    })
    .await
    .unwrap();
}

/// Expired points are purged; live ones stay.
async fn expired_points_are_purged(records: Records) {
    let Some(setup) = Setup::new(records).await else {
        return;
    };
    let table = unique("points").replace('-', "_");
    let points = match &setup.effects {
        Effects::Postgres(pool) => {
            let builder = RecoveryPoints::builder_from_pool(pool.clone());
            builder.table(&table).connect().await
        }
        Effects::MySql(pool) => {
            let builder = RecoveryPoints::builder_from_pool(pool.clone());
            builder.table(&table).connect().await
        }
    }
    .unwrap();
    let url = server_url("LOCK_TEST_REDIS_URL").unwrap().unwrap();
    let backend = RedisBackend::connect(&url).await.unwrap();
    let store = RedisResultStore::from_backend(&backend).await.unwrap();
    let short = Idempotency::builder(store, backend)
        .namespace(&setup.namespace)
        .retention(Duration::from_millis(50))
        .recovery_points(points.clone())
        .build()
        .unwrap();
    let claim = run(&short, &unique("short"), 1).await;
    assert_eq!(setup.pay(claim.info(), "brief").await, Committed::Recorded);
    let live = setup.instance(LeaseMode::default()).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(points.purge_expired().await.unwrap(), 1);
    assert_eq!(points.purge_expired().await.unwrap(), 0);
    drop(live);
    let drop_table = format!("DROP TABLE {table}");
    match &setup.effects {
        Effects::Postgres(pool) => sqlx::query(&drop_table).execute(pool).await.map(drop),
        Effects::MySql(pool) => sqlx::query(&drop_table).execute(pool).await.map(drop),
    }
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_postgres_points_are_purged() {
    timeout(
        BOUND,
        expired_points_are_purged(Records::RedisWithPostgresPoints),
    )
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_mysql_points_are_purged() {
    timeout(
        BOUND,
        expired_points_are_purged(Records::RedisWithMySqlPoints),
    )
    .await
    .unwrap();
}
