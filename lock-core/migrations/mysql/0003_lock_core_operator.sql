-- lock-core's operator's view of the MySQL / MariaDB lock table, for the default table name
-- (`lock_core_locks`): the holder's label beside each lease (`label`), and the audit trail of
-- forced releases (`lock_core_locks_audit`). Run it after 0001, on one connection (the column
-- is added through a session variable and a prepared statement: MySQL has no `ADD COLUMN IF
-- NOT EXISTS`); the same statements as the end of `MySqlBackend::schema_statements`
-- (`MySqlBackend::OPERATOR_MIGRATION`). Idempotent: the column is added only where missing,
-- as a nullable last column (an instant change on MySQL 8 and MariaDB 10.3+). For another
-- table name, replace `lock_core_locks` throughout.
SET @lock_core_ddl = IF(EXISTS(SELECT 1 FROM information_schema.columns
        WHERE table_schema = DATABASE() AND table_name = 'lock_core_locks'
          AND column_name = 'label'),
    'SELECT 1',
    'ALTER TABLE lock_core_locks ADD COLUMN label VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL');
PREPARE lock_core_ddl FROM @lock_core_ddl;
EXECUTE lock_core_ddl;
DEALLOCATE PREPARE lock_core_ddl;
CREATE TABLE IF NOT EXISTS lock_core_locks_audit (
    id         BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at         DATETIME(6) NOT NULL,
    lock_key   VARBINARY(128) NOT NULL,
    name       VARCHAR(600) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    primitive  VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    operator   VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    reason     VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    old_owner  CHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    old_kind   VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    old_label  VARCHAR(1024) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
    old_token  BIGINT UNSIGNED NOT NULL,
    new_token  BIGINT UNSIGNED NOT NULL,
    expires_at DATETIME(6) NOT NULL,
    INDEX audit_key (lock_key, id),
    INDEX audit_expires_at (expires_at)
) ENGINE=InnoDB;
