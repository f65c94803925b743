//! Opening a SQLite file that is not ours: another application's database,
//! a table of ours in a shape we never created, a malformed or newer schema
//! version. Each is refused with a typed error BEFORE a byte changes: no WAL
//! switch, no tables, no schema-version table.
#![cfg(all(feature = "sqlite", feature = "postgres"))]

mod store_support;

use std::path::{Path, PathBuf};

use sandbox_reclaim::stores::sqlite::{INSTANCES_TABLE, SCHEMA_VERSION_TABLE};
use sandbox_reclaim::{SandboxInstanceStore, SqliteSandboxInstanceStore, StoreOpenError};
use sqlx::{ConnectOptions, Connection};
use store_support::{remove_db, temp_db_path};

/// Creates a file with `sql` on a plain connection (rollback journal, as
/// any other application would leave it), closed before returning.
async fn create_file(prefix: &str, sql: &str) -> PathBuf {
    let path = temp_db_path(prefix);
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).create_if_missing(true);
    let mut connection = options.connect().await.unwrap();
    sqlx::raw_sql(sql).execute(&mut connection).await.unwrap_or_else(|error| panic!("{sql}: {error}"));
    connection.close().await.unwrap();
    path
}

/// The journal mode as a fresh connection reads it.
async fn journal_mode(path: &Path) -> String {
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(path).connect().await.unwrap();
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode").fetch_one(&mut connection).await.unwrap();
    connection.close().await.unwrap();
    mode
}

/// Opens `path` expecting a refusal, and checks the file kept every byte
/// and its rollback journal (header bytes 18-19 are 1 in rollback mode, 2 in WAL).
async fn refused_untouched(path: &Path) -> StoreOpenError {
    let before = std::fs::read(path).unwrap();
    assert_eq!(&before[18..20], &[1, 1], "the test file starts in rollback-journal mode");
    let error = SqliteSandboxInstanceStore::open(path).await.expect_err("the file must be refused");
    assert_eq!(std::fs::read(path).unwrap(), before, "not a byte of the file changed");
    for side in ["-wal", "-shm", "-journal"] {
        assert!(!Path::new(&format!("{}{side}", path.display())).exists(), "no {side} file was created");
    }
    assert_eq!(journal_mode(path).await, "delete", "the file was not switched to WAL");
    error
}

/// Every table a file holds, sorted.
async fn tables(path: &Path) -> Vec<String> {
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(path).connect().await.unwrap();
    let sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name";
    let names = sqlx::query_scalar(sql).fetch_all(&mut connection).await.unwrap();
    connection.close().await.unwrap();
    names
}

#[tokio::test]
async fn another_applications_database_is_refused_untouched() {
    let path = create_file(
        "foreign",
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users (name) VALUES ('ada'); \
         CREATE VIEW names AS SELECT name FROM users;",
    )
    .await;
    let error = refused_untouched(&path).await;
    match &error {
        StoreOpenError::ForeignDatabase { path: refused, tables } => {
            assert_eq!(refused, &path);
            assert_eq!(tables, &["names", "users"]);
        }
        other => panic!("expected ForeignDatabase, got {other:?}"),
    }
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()) && message.contains("users"), "{message}");
    assert_eq!(tables(&path).await, ["users"], "none of our tables was added");
    remove_db(&path);
}

#[tokio::test]
async fn a_misshapen_instances_table_is_refused_untouched() {
    let path = create_file("misshapen", "CREATE TABLE sandbox_instances (id INTEGER PRIMARY KEY, blob BLOB);").await;
    let error = refused_untouched(&path).await;
    match &error {
        StoreOpenError::IncompatibleSchema { path: refused, table, reason } => {
            assert_eq!((refused, *table), (&path, INSTANCES_TABLE));
            assert!(reason.contains("id, blob"), "the reason shows the columns found: {reason}");
        }
        other => panic!("expected IncompatibleSchema, got {other:?}"),
    }
    assert!(error.to_string().contains("`sandbox_instances`"), "{error}");
    assert_eq!(tables(&path).await, ["sandbox_instances"], "no schema-version table was created");
    remove_db(&path);
}

#[tokio::test]
async fn a_malformed_schema_version_table_is_refused_untouched() {
    let sql = format!(
        "CREATE TABLE {SCHEMA_VERSION_TABLE} (version TEXT); INSERT INTO {SCHEMA_VERSION_TABLE} VALUES ('one');"
    );
    let path = create_file("bad_versions", &sql).await;
    match refused_untouched(&path).await {
        StoreOpenError::IncompatibleSchema { table, .. } => assert_eq!(table, SCHEMA_VERSION_TABLE),
        other => panic!("expected IncompatibleSchema, got {other:?}"),
    }
    remove_db(&path);

    let sql = format!(
        "CREATE TABLE {SCHEMA_VERSION_TABLE} (version INTEGER); INSERT INTO {SCHEMA_VERSION_TABLE} VALUES (0);"
    );
    let path = create_file("zero_version", &sql).await;
    match refused_untouched(&path).await {
        StoreOpenError::IncompatibleSchema { table, reason, .. } => {
            assert_eq!(table, SCHEMA_VERSION_TABLE);
            assert!(reason.contains("version 0"), "{reason}");
        }
        other => panic!("expected IncompatibleSchema, got {other:?}"),
    }
    remove_db(&path);
}

#[tokio::test]
async fn a_newer_schema_is_refused_before_any_write() {
    let path = temp_db_path("too_new");
    SqliteSandboxInstanceStore::open(&path).await.unwrap().close().await;
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(&path).connect().await.unwrap();
    let bump = format!("INSERT INTO {SCHEMA_VERSION_TABLE} (version, applied_at) VALUES (99, 0)");
    sqlx::query(&bump).execute(&mut connection).await.unwrap();
    connection.close().await.unwrap();
    let before = std::fs::read(&path).unwrap();

    match SqliteSandboxInstanceStore::open(&path).await {
        Err(StoreOpenError::SchemaTooNew { found: 99, supported: 5 }) => {}
        other => panic!("expected SchemaTooNew {{ found: 99, supported: 5 }}, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), before, "not a byte of the file changed");
    remove_db(&path);
}

#[tokio::test]
async fn empty_and_own_files_still_open() {
    // An empty file (touched, never written) becomes a store.
    let empty = temp_db_path("empty");
    std::fs::write(&empty, b"").unwrap();
    let store = SqliteSandboxInstanceStore::open(&empty).await.expect("an empty file is fine");
    assert!(store.get("k").await.unwrap().is_none());
    store.close().await;
    assert_eq!(journal_mode(&empty).await, "wal");
    remove_db(&empty);

    // Our own file that an operator added a table to stays ours.
    let shared = temp_db_path("shared");
    SqliteSandboxInstanceStore::open(&shared).await.unwrap().close().await;
    let mut connection = sqlx::sqlite::SqliteConnectOptions::new().filename(&shared).connect().await.unwrap();
    sqlx::query("CREATE TABLE notes (text TEXT)").execute(&mut connection).await.unwrap();
    connection.close().await.unwrap();
    let store = SqliteSandboxInstanceStore::open(&shared).await.expect("a schema version of ours vouches for the file");
    store.close().await;
    remove_db(&shared);
}

#[tokio::test]
async fn out_of_range_options_are_refused_before_the_file_exists() {
    use sandbox_reclaim::stores::sqlite::MAX_BUSY_TIMEOUT;
    use sandbox_reclaim::SqliteOptions;
    use std::time::Duration;

    let path = temp_db_path("options");
    let cases = [
        (
            SqliteOptions { max_connections: 0, ..SqliteOptions::default() },
            "maxConnections",
            "between 1 and 4294967295",
        ),
        // SQLite's busy timeout is an `int` of milliseconds: sqlx would panic on more.
        (
            SqliteOptions { busy_timeout: MAX_BUSY_TIMEOUT + Duration::from_millis(1), ..SqliteOptions::default() },
            "busyTimeout",
            "at most 2147483647 milliseconds",
        ),
    ];
    for (options, field, range) in cases {
        match SqliteSandboxInstanceStore::open_with(&path, options).await {
            Err(error @ StoreOpenError::InvalidOption { .. }) => {
                let message = error.to_string();
                assert!(message.contains(field) && message.contains(range), "{message}");
            }
            other => panic!("expected InvalidOption for {field}, got {other:?}"),
        }
    }
    assert!(!path.exists(), "a refused option must not create the file");
    let longest = SqliteOptions { busy_timeout: MAX_BUSY_TIMEOUT, ..SqliteOptions::default() };
    SqliteSandboxInstanceStore::open_with(&path, longest)
        .await
        .expect("the longest busy timeout is fine")
        .close()
        .await;
    remove_db(&path);
}
