-- lock-core's MySQL / MariaDB lock table and per-name fencing counters, for the default table
-- name (`lock_core_locks`); the same statements as `MySqlBackend::schema_statements`.
-- Idempotent. Copy it into your `sqlx migrate` (or other) migrations and connect with
-- `.create_schema(false)`. For another table name, replace `lock_core_locks` throughout.
CREATE TABLE IF NOT EXISTS lock_core_locks (
    lock_key    VARBINARY(128) NOT NULL PRIMARY KEY,
    name        VARCHAR(600) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    owner       CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    fence       BIGINT UNSIGNED NOT NULL,
    entry_count INT NOT NULL DEFAULT 1,
    owner_host  VARCHAR(255) NOT NULL DEFAULT '',
    owner_pid   INT NOT NULL DEFAULT 0,
    acquired_at DATETIME(6) NOT NULL,
    expires_at  DATETIME(6) NOT NULL
) ENGINE=InnoDB;
CREATE TABLE IF NOT EXISTS lock_core_locks_fence (
    lock_key   VARBINARY(128) NOT NULL PRIMARY KEY,
    fence      BIGINT UNSIGNED NOT NULL,
    touched_at DATETIME(6) NOT NULL DEFAULT '1970-01-01 00:00:00'
) ENGINE=InnoDB;
