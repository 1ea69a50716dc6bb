//! The example apps' integration tests, written once for both frameworks: each app's
//! `tests/app.rs` names how to serve it in-process (and its binary, for the tests that start
//! processes) and calls the macro of its scenario, [`flash_sale_app_tests!`],
//! [`stampede_app_tests!`] or [`payments_app_tests!`]. The checks themselves are the
//! scenario modules' ([`checks`](crate::demo::inventory::checks), [`stampede`](crate::demo::stampede),
//! [`payments::checks`](crate::demo::payments::checks)), which the demos share.
//!
//! The tests are `#[tokio::test]`s, so an app's test crate needs tokio's `macros` and
//! `rt-multi-thread`, `example-support` (the app's service) and `lock-core` with
//! `test-support` (for the server URLs the Redis tests read).
//!
//! [`flash_sale_app_tests!`]: crate::flash_sale_app_tests
//! [`stampede_app_tests!`]: crate::stampede_app_tests
//! [`payments_app_tests!`]: crate::payments_app_tests

/// The flash-sale apps' integration tests. `serve` is the app's
/// `async fn(Shop) -> String` that serves the shop on a free loopback port and returns its
/// base URL; `binary` is the app's executable (`env!("CARGO_BIN_EXE_...")`), which the Redis
/// tests start as two processes.
///
/// - on memory, in-process: 1,000 concurrent buyers for 100 units sell exactly 100 with each
///   strategy; reservations expire back into stock; the bad-input table answers 400
///   problems, never a 5xx, with each strategy; the purchase is on `GET /metrics`;
/// - on Redis (`LOCK_TEST_REDIS_URL`), two processes: exactly the stock sold with each
///   strategy, and again while the Redis is killed and restarted;
/// - on PostgreSQL and MySQL (their test URLs, and the app's features of those names), the
///   SQL strategies in-process: exactly the stock sold, and the bad-input table;
/// - the admin console: with `--admin-token`, at `/admin/` behind the token; without, absent;
///   the binary refuses a short token.
///
/// ```ignore
/// async fn serve(shop: example_support::shop::Shop) -> String {
///     flash_sale_axum::spawn(shop).await.unwrap()
/// }
///
/// lock_harness::flash_sale_app_tests!(serve, env!("CARGO_BIN_EXE_flash-sale-axum"));
/// ```
#[macro_export]
macro_rules! flash_sale_app_tests {
    ($serve:path, $binary:expr) => {
        /// A shop on memory with `strategy`, `stock` units of `sku`, served; its base URL.
        async fn stocked_app(
            strategy: ::example_support::shop::Strategy,
            sku: &str,
            stock: u64,
        ) -> String {
            let shop = ::example_support::shop::Shop::start(
                ::example_support::shop::ShopConfig::memory(strategy),
            )
            .await
            .unwrap();
            shop.restock(sku, stock).await.unwrap();
            $serve(shop).await
        }

        /// 1,000 buyers for `shop`'s 100 units of `sku-x` (restocked here) sell exactly 100.
        async fn sells_exactly_100_from(shop: ::example_support::shop::Shop) {
            shop.restock("sku-x", 100).await.unwrap();
            let base = $serve(shop).await;
            passes($crate::demo::inventory::checks::sells_exactly(
                vec![base],
                "sku-x",
                100,
                1_000,
            ))
            .await;
        }

        /// Fails the test unless `check` passes within the checks' limit.
        async fn passes(check: impl ::std::future::Future<Output = Result<(), String>>) {
            ::tokio::time::timeout($crate::demo::inventory::checks::LIMIT, check)
                .await
                .expect("the check finished in time")
                .unwrap();
        }

        async fn sells_exactly_100(strategy: ::example_support::shop::Strategy) {
            let shop = ::example_support::shop::Shop::start(
                ::example_support::shop::ShopConfig::memory(strategy),
            )
            .await
            .unwrap();
            sells_exactly_100_from(shop).await;
        }

        async fn bad_input_is_refused(strategy: ::example_support::shop::Strategy) {
            let shop = ::example_support::shop::Shop::start(
                ::example_support::shop::ShopConfig::memory(strategy),
            )
            .await
            .unwrap();
            refuses_bad_input(shop, strategy.name()).await;
        }

        /// Seeds `shop`, serves it and runs the bad-input table against it.
        async fn refuses_bad_input(shop: ::example_support::shop::Shop, label: &str) {
            $crate::demo::inventory::bad_input::seed(&shop)
                .await
                .unwrap();
            let base = $serve(shop).await;
            let rows = $crate::demo::inventory::bad_input::check_all(&base)
                .await
                .unwrap_or_else(|e| panic!("{label}: {e}"));
            assert!(rows > 80, "the table shrank to {rows} rows");
        }

        /// Two processes of the app on the test Redis sell exactly the stock. Without a
        /// configured Redis it does nothing, unless the servers are required
        /// (`LOCK_TEST_REQUIRE_SERVERS`, as `cargo xtask test` sets): then it fails.
        async fn two_processes(strategy: ::example_support::shop::Strategy) {
            let Some(url) = ::lock_testing::server_url("LOCK_TEST_REDIS_URL").unwrap() else {
                return;
            };
            let app = ::std::path::PathBuf::from($binary);
            passes($crate::demo::inventory::checks::redis_sells_exactly(
                strategy,
                url,
                vec![app],
            ))
            .await;
        }

        /// Two processes of the app while a Redis of the test's own is killed and restarted.
        async fn redis_dropped(strategy: ::example_support::shop::Strategy) {
            if ::lock_testing::server_url("LOCK_TEST_REDIS_URL")
                .unwrap()
                .is_none()
            {
                return;
            }
            let app = ::std::path::PathBuf::from($binary);
            let name = app.file_name().unwrap().to_string_lossy().into_owned();
            let data = ::std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("redis-drop-{name}-{}", strategy.name()));
            ::std::fs::remove_dir_all(&data).ok();
            $crate::demo::inventory::checks::redis_dropped_mid_run(strategy, vec![app], data)
                .await
                .unwrap();
        }

        /// The SQL strategies (for-update, optimistic, conditional, reserve) on the test
        /// database `db` (`postgres` or `mysql`), in-process: 1,000 buyers for 100 units sell
        /// exactly 100, and the bad-input table answers 400 problems, never a 5xx. Without
        /// the database's server it does nothing unless the servers are required; a build
        /// of the app without its `postgres` / `mysql` feature says so and skips (CI builds
        /// the workspace with every feature).
        async fn sql_strategies(db: &str) {
            let variable = if db == "postgres" {
                "LOCK_TEST_POSTGRES_URL"
            } else {
                "LOCK_TEST_MYSQL_URL"
            };
            if ::lock_testing::server_url(variable).unwrap().is_none() {
                return;
            }
            let backend = ::example_support::backend::BackendKind::parse(db).unwrap();
            if !backend.has_shop() {
                eprintln!("SKIPPED: this build of the app has no {db} shop (its `{db}` feature)");
                return;
            }
            for strategy in ::example_support::shop::Strategy::SQL {
                let start = |namespace: String| {
                    let args = [
                        "--strategy",
                        strategy.name(),
                        "--backend",
                        db,
                        "--namespace",
                    ];
                    let args = args.into_iter().map(str::to_owned).chain([namespace]);
                    ::example_support::shop::Shop::start(
                        ::example_support::shop::ShopConfig::from_args(args).unwrap(),
                    )
                };
                let shop = start($crate::demo::inventory::unique("app-sql"))
                    .await
                    .unwrap_or_else(|e| panic!("{db} {}: {e}", strategy.name()));
                sells_exactly_100_from(shop).await;
                let shop = start($crate::demo::inventory::unique("app-sql-bad"))
                    .await
                    .unwrap();
                refuses_bad_input(shop, &format!("{db} {}", strategy.name())).await;
            }
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_sql_strategies_on_postgres_sell_exactly_and_refuse_bad_input() {
            sql_strategies("postgres").await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_sql_strategies_on_mysql_sell_exactly_and_refuse_bad_input() {
            sql_strategies("mysql").await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_lock_strategy_sells_exactly_the_stock() {
            sells_exactly_100(::example_support::shop::Strategy::Lock).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_atomic_strategy_sells_exactly_the_stock() {
            sells_exactly_100(::example_support::shop::Strategy::Atomic).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_reserve_strategy_sells_exactly_the_stock() {
            sells_exactly_100(::example_support::shop::Strategy::Reserve).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn reservations_expire_back_into_stock_and_late_confirms_are_refused() {
            let base = stocked_app(::example_support::shop::Strategy::Reserve, "sku-r", 2).await;
            passes($crate::demo::inventory::checks::reservations_expire(
                &base, "sku-r",
            ))
            .await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_lock_strategy_refuses_bad_input_with_400_problems() {
            bad_input_is_refused(::example_support::shop::Strategy::Lock).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_atomic_strategy_refuses_bad_input_with_400_problems() {
            bad_input_is_refused(::example_support::shop::Strategy::Atomic).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_reserve_strategy_refuses_bad_input_with_400_problems() {
            bad_input_is_refused(::example_support::shop::Strategy::Reserve).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_admin_console_is_mounted_behind_the_token_only_when_given() {
            let config = ::example_support::shop::ShopConfig::from_args(
                ["--admin-token", $crate::demo::admin::TOKEN].map(String::from),
            )
            .unwrap();
            let shop = ::example_support::shop::Shop::start(config).await.unwrap();
            passes($crate::demo::admin::console_behind_the_token(
                &$serve(shop).await,
            ))
            .await;
            let base = stocked_app(::example_support::shop::Strategy::Atomic, "sku-a", 1).await;
            passes($crate::demo::admin::no_console(&base)).await;
            passes($crate::demo::admin::short_token_refused(
                ::std::path::Path::new($binary),
            ))
            .await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn metrics_show_the_locked_purchase() {
            let base = stocked_app(::example_support::shop::Strategy::Lock, "sku-m", 1).await;
            $crate::demo::inventory::checks::metrics_show_the_locked_purchase(&base).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_lock_strategy_sells_exactly_the_stock_across_processes() {
            two_processes(::example_support::shop::Strategy::Lock).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_atomic_strategy_sells_exactly_the_stock_across_processes() {
            two_processes(::example_support::shop::Strategy::Atomic).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_reserve_strategy_sells_exactly_the_stock_across_processes() {
            two_processes(::example_support::shop::Strategy::Reserve).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_lock_strategy_survives_a_redis_restart() {
            redis_dropped(::example_support::shop::Strategy::Lock).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_atomic_strategy_survives_a_redis_restart() {
            redis_dropped(::example_support::shop::Strategy::Atomic).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_reserve_strategy_survives_a_redis_restart() {
            redis_dropped(::example_support::shop::Strategy::Reserve).await;
        }
    };
}

/// The stampede apps' integration tests: each check of [`stampede`](crate::demo::stampede) as a
/// test of its own, on a fresh app in-process on the memory backend, within 60 s, and the
/// cache's work on `GET /metrics`. `serve` is the app's `async fn(ProductService) -> String`
/// that serves the service on a free loopback port and returns its base URL.
///
/// ```ignore
/// async fn serve(service: example_support::product::ProductService) -> String {
///     stampede_axum::spawn(service).await.unwrap()
/// }
///
/// lock_harness::stampede_app_tests!(serve);
/// ```
#[macro_export]
macro_rules! stampede_app_tests {
    ($serve:path) => {
        /// A fresh app; its base URL.
        async fn fresh_app() -> String {
            // Fresh for a minute: nothing expires while a test runs.
            let config = ::example_support::product::ProductConfig::from_args(
                ["--fresh-ms", "60000"].map(str::to_owned),
            )
            .unwrap();
            $serve(
                ::example_support::product::ProductService::start(&config)
                    .await
                    .unwrap(),
            )
            .await
        }

        /// Fails the test unless `check` passes within the limit.
        async fn passes(check: impl ::std::future::Future<Output = Result<(), String>>) {
            const LIMIT: ::std::time::Duration = ::std::time::Duration::from_secs(60);
            ::tokio::time::timeout(LIMIT, check).await.unwrap().unwrap();
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_cold_product_under_200_concurrent_requests_reaches_the_origin_once() {
            let base = fresh_app().await;
            passes($crate::demo::stampede::cold_key_collapses(&[base], 200)).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn bad_ids_are_400_problems_that_never_reach_the_origin() {
            let base = fresh_app().await;
            passes($crate::demo::stampede::bad_ids_are_refused(&base)).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_second_request_is_a_hit() {
            let base = fresh_app().await;
            passes($crate::demo::stampede::second_request_hits(&base)).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_admin_console_is_mounted_behind_the_token_only_when_given() {
            let config = ::example_support::product::ProductConfig::from_args(
                ["--admin-token", $crate::demo::admin::TOKEN].map(String::from),
            )
            .unwrap();
            let service = ::example_support::product::ProductService::start(&config)
                .await
                .unwrap();
            passes($crate::demo::admin::console_behind_the_token(
                &$serve(service).await,
            ))
            .await;
            passes($crate::demo::admin::no_console(&fresh_app().await)).await;
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn metrics_show_the_computed_product() {
            let base = $serve(
                ::example_support::product::ProductService::start(
                    &::example_support::product::ProductConfig::memory(),
                )
                .await
                .unwrap(),
            )
            .await;
            $crate::demo::stampede::metrics_show_the_computed_product(&base).await;
        }
    };
}

/// The payments apps' integration tests, on memory with no handler delay: in-process, a
/// duplicate is replayed, a key reused with another body is 422, no user is 401 and one
/// user's key is not another's; the app's `binary` (`env!("CARGO_BIN_EXE_...")`) started as
/// a process answers the same; the payment is on `GET /metrics`. `serve` is the app's
/// `async fn(PaymentService) -> String` that serves the service on a free loopback port and
/// returns its base URL.
///
/// ```ignore
/// async fn serve(service: example_support::payments::PaymentService) -> String {
///     payments_axum::spawn(service).await.unwrap()
/// }
///
/// lock_harness::payments_app_tests!(serve, env!("CARGO_BIN_EXE_payments-axum"));
/// ```
#[macro_export]
macro_rules! payments_app_tests {
    ($serve:path, $binary:expr) => {
        /// A payment service on memory with no handler delay.
        async fn service() -> ::example_support::payments::PaymentService {
            let mut config = ::example_support::payments::PaymentsConfig::memory();
            config.handler_delay = ::std::time::Duration::ZERO;
            ::example_support::payments::PaymentService::start(&config)
                .await
                .unwrap()
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn duplicates_replay_reused_keys_422_and_keys_belong_to_their_user() {
            let service = service().await;
            let base = $serve(service.clone()).await;
            $crate::demo::payments::checks::idempotent_answers(&[base], Some(service.ledger()))
                .await
                .unwrap();
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_binary_serves_idempotent_payments() {
            $crate::demo::payments::checks::binary_answers(::std::path::PathBuf::from($binary))
                .await
                .unwrap();
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn the_admin_console_is_mounted_behind_the_token_only_when_given() {
            let config = ::example_support::payments::PaymentsConfig::from_args(
                ["--admin-token", $crate::demo::admin::TOKEN].map(String::from),
            )
            .unwrap();
            let guarded = ::example_support::payments::PaymentService::start(&config)
                .await
                .unwrap();
            let base = $serve(guarded).await;
            $crate::demo::admin::console_behind_the_token(&base)
                .await
                .unwrap();
            let base = $serve(service().await).await;
            $crate::demo::admin::no_console(&base).await.unwrap();
            $crate::demo::admin::short_token_refused(::std::path::Path::new($binary))
                .await
                .unwrap();
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn metrics_show_the_payment() {
            let base = $serve(service().await).await;
            $crate::demo::payments::checks::metrics_show_the_payment(&base).await;
        }
    };
}
