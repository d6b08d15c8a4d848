import SeedSyncModel

/// The SQL that turns every committed write to the served tables into change sets, whoever makes
/// it: `seed-server`, psql, the team's own application.
///
/// ## Bookkeeping, in the `seedsync` schema
/// - `seedsync._state`: one row (format, schema JSON, the tables' PostgreSQL schema, `revision`,
///   `min_revision`).
/// - `seedsync._changes (revision, type, key, op, data, scope, from_scope)`: the change log, a
///   row per changed row: `op` is `c` (created), `u` (updated), `d` (deleted) or `x` (created and
///   deleted again in the same transaction: nothing to send), `data` the row as `to_json` gave it
///   when written. For a scoped type, `scope` is the row's scope value after the transaction (not
///   for a deleted row) and `from_scope` the one before it (the first the transaction saw, kept
///   through later statements), both as text (the form grants compare, `ScopeGrant`); a shared
///   type's rows have neither. The
///   change log reader turns `from_scope` into the change set's `from` (`TypeChanges.from`) for a
///   deleted row and a row whose scope value changed, of a type scoped by a field; and a scoped
///   read finds the revisions it sees by both (``scopeIndexes``).
/// - `seedsync."_rows_<type>" (key, revision)`: the revision of every current row (the team's
///   tables get no column), and `seedsync."_log_<type>"()`, the capture function. Every name starts
///   with `_`, so none shadows a team's table for a role named `seedsync`.
///
/// ## One transaction, one revision, in commit order
/// Each served table has statement-level triggers. `BEFORE` any write (or `TRUNCATE`), the
/// transaction locks the state row (`FOR UPDATE`) and holds it until it ends. `AFTER` a statement
/// that changed rows, the first time in the transaction, it raises `_state.revision` by one and
/// remembers the number in a transaction-local setting (`seedsync.revision`); every later
/// statement of the transaction logs its rows under that number. So writers run one at a time
/// from their first write to their commit: the revision a transaction takes is the one after the
/// last committed, it becomes visible in the same instant as its rows, and a transaction that
/// rolls back (or whose connection is killed) takes its increment with it: no gap, no trace.
/// See `docs/POSTGRESQL.md` for why this is correct and what it costs.
///
/// ## Bulk revisions
/// `TRUNCATE`, `seed-server load` and attaching tables with rows are bulk revisions: the change
/// log is emptied and `min_revision` moves to the new revision, so clients re-seed; the rest of
/// that transaction updates row revisions only (`seedsync.bulk` is set).
///
/// ## Values
/// Rows are logged with `to_json`, whose text does not depend on the session when the capture
/// functions pin `TimeZone`, `bytea_output` and `extra_float_digits`; the store's own sessions
/// use the same settings (``sessionSettings``). Snapshot pages read typed columns and write the
/// same wire values (see ``WireRow``).
package enum CaptureSQL {
    /// The settings every store session and capture function runs with.
    static let sessionSettings: [(String, String)] = [
        ("TimeZone", "UTC"), ("bytea_output", "hex"), ("extra_float_digits", "1"), ("IntervalStyle", "iso_8601"),
    ]

    /// Pins ``sessionSettings`` on a table's capture function, for stores whose functions were made
    /// before a setting joined them (`IntervalStyle`, for `interval` columns); run when a store opens.
    static func pinSettings(_ table: PostgresTableSQL) -> [String] {
        sessionSettings.map { "ALTER FUNCTION \(table.captureFunction)() SET \(quote($0.0)) = \(literal($0.1))" }
    }

    /// The version of the bookkeeping layout, kept in `_state.format`.
    static let format = 1

    /// Creates the `seedsync` schema, its tables and the shared functions.
    static let setup: [String] = [
        "CREATE SCHEMA seedsync",
        """
        CREATE TABLE seedsync._state (
          id integer PRIMARY KEY CHECK (id = 1),
          format integer NOT NULL,
          schema text NOT NULL,
          table_schema text NOT NULL,
          revision bigint NOT NULL,
          min_revision bigint NOT NULL
        )
        """,
        """
        CREATE TABLE seedsync._changes (
          revision bigint NOT NULL,
          type text NOT NULL,
          key text NOT NULL,
          op "char" NOT NULL,
          data text,
          scope text,
          from_scope text,
          PRIMARY KEY (revision, type, key)
        )
        """,
        """
        CREATE FUNCTION seedsync._lock() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
        BEGIN
          PERFORM 1 FROM seedsync._state WHERE id = 1 FOR UPDATE;
          RETURN NULL;
        END $$
        """,
        revisionFunction,
        """
        CREATE FUNCTION seedsync._bulk() RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
        DECLARE r bigint := seedsync._revision();
        BEGIN
          IF current_setting('seedsync.bulk', true) IS DISTINCT FROM 'on' THEN
            UPDATE seedsync._state SET min_revision = r WHERE id = 1;
            DELETE FROM seedsync._changes WHERE revision <= r;
            PERFORM set_config('seedsync.bulk', 'on', true);
          END IF;
          RETURN r;
        END $$
        """,
        """
        CREATE FUNCTION seedsync._logging() RETURNS boolean LANGUAGE sql STABLE AS $$
          SELECT current_setting('seedsync.bulk', true) IS DISTINCT FROM 'on'
        $$
        """,
    ]

    /// The channel ``revisionFunction`` notifies with each new revision.
    static let revisionChannel = "seedsync_revision"

    /// Takes the transaction's revision on its first captured write: raises `_state.revision` and
    /// notifies ``revisionChannel`` with the number, which PostgreSQL delivers when (and only if)
    /// the transaction commits, so every listening `seed-server` wakes its held requests. `OR
    /// REPLACE`: a store opened by a newer server gets the notification too.
    package static let revisionFunction = """
        CREATE OR REPLACE FUNCTION seedsync._revision() RETURNS bigint LANGUAGE plpgsql
          SET search_path = pg_catalog, pg_temp AS $$
        DECLARE r bigint := nullif(current_setting('seedsync.revision', true), '')::bigint;
        BEGIN
          IF r IS NULL THEN
            UPDATE seedsync._state SET revision = revision + 1 WHERE id = 1 RETURNING revision INTO r;
            PERFORM set_config('seedsync.revision', r::text, true);
            PERFORM pg_notify('\(revisionChannel)', r::text);
          END IF;
          RETURN r;
        END $$
        """

    /// Adds `scope` and `from_scope` to the change log of a store made before scopes (which
    /// serves no scope: they stay empty), without locking the log when they are there already (an
    /// `ALTER TABLE` would, even with `IF NOT EXISTS`).
    static let addScopeColumns = """
        DO $$ BEGIN
          IF NOT EXISTS (SELECT FROM pg_attribute WHERE attrelid = 'seedsync._changes'::regclass
                         AND attname = 'from_scope' AND NOT attisdropped) THEN
            ALTER TABLE seedsync._changes ADD COLUMN scope text, ADD COLUMN from_scope text;
          END IF;
        END $$
        """

    /// The indexes a scoped read finds its revisions by, made with a store whose schema has a
    /// scope (a scope cannot be added later): the log's rows by scope value after and before, and
    /// the shared types' rows, each with the revision, so a reader of some values reads the
    /// revisions those values and the shared types changed, not the whole log.
    static let scopeIndexes: [String] = [
        "CREATE INDEX _changes_scope ON seedsync._changes (scope, revision) WHERE scope IS NOT NULL",
        "CREATE INDEX _changes_from_scope ON seedsync._changes (from_scope, revision) WHERE from_scope IS NOT NULL",
        "CREATE INDEX _changes_shared ON seedsync._changes (revision) WHERE scope IS NULL AND from_scope IS NULL",
    ]

    /// The idempotency records of pushed change sets (the first result of every id, kept for the
    /// retention) and, per integer-keyed type without a sequence, the largest key deleted or given
    /// to a pushed row. Created with the store, and when a store made before them is opened.
    static let pushRecords: [String] = [
        "CREATE TABLE IF NOT EXISTS seedsync._pushes (id text PRIMARY KEY, result text, pushed_at timestamptz NOT NULL DEFAULT now())",
        "CREATE INDEX IF NOT EXISTS _pushes_pushed_at ON seedsync._pushes (pushed_at)",
        "CREATE TABLE IF NOT EXISTS seedsync._keys (type text PRIMARY KEY, last bigint NOT NULL)",
    ]

    /// The row-revision table, the capture function and the triggers of one served table.
    static func attach(_ table: PostgresTableSQL) -> [String] {
        [
            "CREATE TABLE \(table.revisions) (key \(table.keyColumnType) PRIMARY KEY, revision bigint NOT NULL)",
            captureFunction(table),
            """
            CREATE TRIGGER seedsync_lock BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON \(table.table)
              FOR EACH STATEMENT EXECUTE FUNCTION seedsync._lock()
            """,
            """
            CREATE TRIGGER seedsync_insert AFTER INSERT ON \(table.table) REFERENCING NEW TABLE AS n
              FOR EACH STATEMENT EXECUTE FUNCTION \(table.captureFunction)()
            """,
            """
            CREATE TRIGGER seedsync_update AFTER UPDATE ON \(table.table) REFERENCING OLD TABLE AS o NEW TABLE AS n
              FOR EACH STATEMENT EXECUTE FUNCTION \(table.captureFunction)()
            """,
            """
            CREATE TRIGGER seedsync_delete AFTER DELETE ON \(table.table) REFERENCING OLD TABLE AS o
              FOR EACH STATEMENT EXECUTE FUNCTION \(table.captureFunction)()
            """,
            """
            CREATE TRIGGER seedsync_truncate AFTER TRUNCATE ON \(table.table)
              FOR EACH STATEMENT EXECUTE FUNCTION \(table.captureFunction)()
            """,
        ]
    }

    /// Drops what is left of one table's capture: its triggers, row revisions and capture function
    /// (before ``attach(_:)`` makes them again, see `PostgresSyncStore.reattach(_:)`).
    static func detach(_ table: PostgresTableSQL) -> [String] {
        ["lock", "insert", "update", "delete", "truncate"].map {
            "DROP TRIGGER IF EXISTS seedsync_\($0) ON \(table.table)"
        } + ["DROP TABLE IF EXISTS \(table.revisions)", "DROP FUNCTION IF EXISTS \(table.captureFunction)()"]
    }

    /// Gives every row present now the revision `$1` (the bulk revision of an attach).
    static func adopt(_ table: PostgresTableSQL) -> String {
        "INSERT INTO \(table.revisions) (key, revision) SELECT \(table.key), $1 FROM \(table.table)"
    }

    /// The capture function of one table: its branches log the statement's rows under the
    /// transaction's revision, merged with what the transaction logged before (a row created then
    /// updated stays `c`, deleted then created again becomes `u`, created then deleted `x`).
    private static func captureFunction(_ table: PostgresTableSQL) -> String {
        let type = literal(table.type.name)
        let key = table.key
        // The row's scope value after and before the statement (a scoped type).
        let scopedBy = table.type.scopedBy.map(quote)
        let scope = scopedBy.map { "n.\($0)::text" } ?? "NULL"
        let from = scopedBy.map { "o.\($0)::text" } ?? "NULL"
        let keepFrom = "from_scope = coalesce(c.from_scope, excluded.from_scope)"
        let settings = sessionSettings.map { "SET \(quote($0.0)) = \(literal($0.1))" }.joined(separator: " ")
        return """
            CREATE FUNCTION \(table.captureFunction)() RETURNS trigger LANGUAGE plpgsql
              SET search_path = pg_catalog, pg_temp \(settings) AS $$
            DECLARE r bigint;
            BEGIN
              IF TG_OP = 'TRUNCATE' THEN
                PERFORM seedsync._bulk();
                DELETE FROM \(table.revisions);
                RETURN NULL;
              END IF;
              IF TG_OP = 'DELETE' THEN
                IF NOT EXISTS (SELECT FROM o) THEN RETURN NULL; END IF;
                r := seedsync._revision();
                IF seedsync._logging() THEN
                  INSERT INTO seedsync._changes AS c (revision, type, key, op, data, scope, from_scope)
                    SELECT r, \(type), o.\(key)::text, 'd', NULL, NULL, \(from) FROM o
                    ON CONFLICT (revision, type, key) DO UPDATE
                    SET op = CASE c.op WHEN 'c' THEN 'x' ELSE 'd' END, data = NULL, scope = NULL, \(keepFrom);
                END IF;
                DELETE FROM \(table.revisions) v USING o WHERE v.key = o.\(key);
                RETURN NULL;
              END IF;
              IF NOT EXISTS (SELECT FROM n) THEN RETURN NULL; END IF;
              r := seedsync._revision();
              IF TG_OP = 'INSERT' THEN
                IF seedsync._logging() THEN
                  INSERT INTO seedsync._changes AS c (revision, type, key, op, data, scope)
                    SELECT r, \(type), n.\(key)::text, 'c', to_json(n)::text, \(scope) FROM n
                    ON CONFLICT (revision, type, key) DO UPDATE
                    SET op = CASE c.op WHEN 'x' THEN 'c' ELSE 'u' END, data = excluded.data, scope = excluded.scope;
                END IF;
              ELSE
                IF seedsync._logging() THEN
                  INSERT INTO seedsync._changes AS c (revision, type, key, op, data, scope, from_scope)
                    SELECT r, \(type), n.\(key)::text, CASE WHEN o.\(key) IS NULL THEN 'c' ELSE 'u' END, to_json(n)::text,
                      \(scope), \(from)
                    FROM n LEFT JOIN o ON o.\(key) = n.\(key)
                    ON CONFLICT (revision, type, key) DO UPDATE
                    SET op = CASE c.op WHEN 'd' THEN 'u' WHEN 'x' THEN 'c' ELSE c.op END, data = excluded.data,
                      scope = excluded.scope, \(keepFrom);
                  INSERT INTO seedsync._changes AS c (revision, type, key, op, data, scope, from_scope)
                    SELECT r, \(type), o.\(key)::text, 'd', NULL, NULL, \(from) FROM o LEFT JOIN n ON n.\(key) = o.\(key) WHERE n.\(key) IS NULL
                    ON CONFLICT (revision, type, key) DO UPDATE
                    SET op = CASE c.op WHEN 'c' THEN 'x' ELSE 'd' END, data = NULL, scope = NULL, \(keepFrom);
                END IF;
                DELETE FROM \(table.revisions) v USING o LEFT JOIN n ON n.\(key) = o.\(key)
                  WHERE n.\(key) IS NULL AND v.key = o.\(key);
              END IF;
              INSERT INTO \(table.revisions) AS v (key, revision) SELECT n.\(key), r FROM n
                ON CONFLICT (key) DO UPDATE SET revision = excluded.revision;
              RETURN NULL;
            END $$
            """
    }
}

/// `"name"`: schema names match `^[a-z][a-z0-9_]{0,62}$` (checked by `DatasetSchema.validate()`),
/// so quoting is enough; values are always bound.
func quote(_ name: String) -> String { "\"\(name)\"" }

/// `'text'` for the few constants the setup SQL embeds (type names, settings): no quote inside.
func literal(_ text: String) -> String {
    precondition(!text.contains("'"), "literal with a quote")
    return "'\(text)'"
}
