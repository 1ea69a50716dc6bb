-- lock-core's PostgreSQL stock tables (`lock_core::stock::PostgresStock`), for the default
-- prefix (`lock_core_stock`); the same statements as `PostgresStock::schema_statements`.
-- Idempotent. Copy it into your `sqlx migrate` (or other) migrations and connect with
-- `.create_schema(false)`. For another prefix, replace `lock_core_stock` throughout.
CREATE TABLE IF NOT EXISTS lock_core_stock_levels (
    sku       text COLLATE "C" PRIMARY KEY,
    available bigint NOT NULL,
    reserved  bigint NOT NULL,
    sold      bigint NOT NULL,
    received  bigint NOT NULL,
    version   bigint NOT NULL,
    CHECK (available >= 0 AND reserved >= 0 AND sold >= 0)
);
CREATE TABLE IF NOT EXISTS lock_core_stock_orders (
    sku           text COLLATE "C" NOT NULL,
    kind          bigint NOT NULL,
    order_id      text COLLATE "C" NOT NULL,
    quantity      bigint NOT NULL,
    outcome       bigint NOT NULL,
    outcome_value bigint NOT NULL,
    state         bigint NOT NULL,
    expires_at    bigint NOT NULL,
    recorded_at   bigint NOT NULL,
    PRIMARY KEY (sku, kind, order_id)
);
CREATE INDEX IF NOT EXISTS lock_core_stock_orders_due
    ON lock_core_stock_orders (sku, kind, state, expires_at);
CREATE INDEX IF NOT EXISTS lock_core_stock_orders_recorded
    ON lock_core_stock_orders (recorded_at);
