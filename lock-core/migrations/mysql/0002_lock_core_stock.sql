-- lock-core's MySQL / MariaDB stock tables (`lock_core::stock::MySqlStock`), for the default
-- prefix (`lock_core_stock`); the same statements as `MySqlStock::schema_statements`.
-- Idempotent. Copy it into your migrations and connect with `.create_schema(false)`. For
-- another prefix, replace `lock_core_stock` throughout. Binary columns: SKUs and order ids
-- compare byte for byte, whatever the database's collation.
CREATE TABLE IF NOT EXISTS lock_core_stock_levels (
    sku       VARBINARY(600) NOT NULL PRIMARY KEY,
    available BIGINT NOT NULL,
    reserved  BIGINT NOT NULL,
    sold      BIGINT NOT NULL,
    received  BIGINT NOT NULL,
    version   BIGINT NOT NULL,
    CHECK (available >= 0 AND reserved >= 0 AND sold >= 0)
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS lock_core_stock_orders (
    sku           VARBINARY(600) NOT NULL,
    kind          BIGINT NOT NULL,
    order_id      VARBINARY(256) NOT NULL,
    quantity      BIGINT NOT NULL,
    outcome       BIGINT NOT NULL,
    outcome_value BIGINT NOT NULL,
    state         BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    recorded_at   BIGINT NOT NULL,
    PRIMARY KEY (sku, kind, order_id),
    INDEX lock_core_stock_orders_due (sku, kind, state, expires_at),
    INDEX lock_core_stock_orders_recorded (recorded_at)
) ENGINE=InnoDB;
