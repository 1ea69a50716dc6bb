-- lock-core's PostgreSQL lock table and fencing sequence, for the default table name
-- (`lock_core_locks`); the same statements as `PostgresBackend::schema_statements`.
-- Idempotent. Copy it into your `sqlx migrate` (or other) migrations and connect with
-- `.create_schema(false)`. For another table name, replace `lock_core_locks` throughout.
CREATE TABLE IF NOT EXISTS lock_core_locks (
    lock_key    text COLLATE "C" PRIMARY KEY,
    name        text NOT NULL,
    owner       text NOT NULL,
    fence       bigint NOT NULL,
    entry_count integer NOT NULL DEFAULT 1,
    owner_host  text NOT NULL DEFAULT '',
    owner_pid   integer NOT NULL DEFAULT 0,
    acquired_at timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS lock_core_locks_fence AS bigint;
