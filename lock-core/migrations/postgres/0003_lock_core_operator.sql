-- lock-core's operator's view of the PostgreSQL lock table, for the default table name
-- (`lock_core_locks`): the holder's label beside each lease (`label`, and `label_owner`, the
-- owner that wrote it: a grant by a client of an older version leaves both as they were, and
-- readers show a label only where `label_owner` is the row's owner), and the audit trail of
-- forced releases (`lock_core_locks_audit`). Run it after 0001; the same statements as the
-- end of `PostgresBackend::schema_statements` (`PostgresBackend::OPERATOR_MIGRATION`).
-- Idempotent, and cheap to run again: the columns are added only where missing (an `ALTER
-- TABLE` takes the lock table's strongest lock even when it has nothing to add), as nullable
-- columns without a default, which rewrites nothing. For another table name, replace
-- `lock_core_locks` throughout.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_attribute
                   WHERE attrelid = to_regclass('lock_core_locks')
                     AND attname = 'label_owner' AND NOT attisdropped) THEN
        ALTER TABLE lock_core_locks
            ADD COLUMN IF NOT EXISTS label text,
            ADD COLUMN IF NOT EXISTS label_owner text;
    END IF;
END
$$;
CREATE TABLE IF NOT EXISTS lock_core_locks_audit (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL,
    lock_key   text COLLATE "C" NOT NULL,
    name       text NOT NULL,
    primitive  text NOT NULL,
    operator   text NOT NULL,
    reason     text NOT NULL,
    old_owner  text NOT NULL,
    old_kind   text NOT NULL,
    old_label  text,
    old_token  bigint NOT NULL,
    new_token  bigint NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS lock_core_locks_audit_key ON lock_core_locks_audit (lock_key, id);
CREATE INDEX IF NOT EXISTS lock_core_locks_audit_exp ON lock_core_locks_audit (expires_at);
