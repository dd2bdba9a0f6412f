//! Primary-key indexes written at checkpoints: an open maps them instead
//! of reading every head record, redoes the keys the WAL holds after the
//! checkpoint, finds no row for keys of transactions that never
//! committed, and falls back to rebuilding from the heads when a file is
//! missing, stale or damaged. Every path ends in the same answers.

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn config() -> Config {
    Config {
        delta_buffer_bytes: 32 << 10,
        ..Config::default()
    }
}

fn open(dir: &std::path::Path) -> Database {
    ndpdb_embedded::open_with(dir, config()).unwrap()
}

/// A new database in `dir` with the keyed table `t`.
fn create(dir: &std::path::Path) -> (Database, Session) {
    let db = open(dir);
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k BIGINT PRIMARY KEY, v TEXT)")
        .unwrap();
    (db, s)
}

fn count(s: &mut Session, sql: &str) -> i64 {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => match rows[0][0] {
            Value::BigInt(n) => n,
            ref v => panic!("{v:?}"),
        },
        o => panic!("{o:?}"),
    }
}

fn insert_range(s: &mut Session, from: i64, to: i64) {
    let mut sql = String::from("BEGIN;");
    for k in from..to {
        sql.push_str(&format!("INSERT INTO t VALUES ({k}, 'v{k}');"));
    }
    sql.push_str("COMMIT");
    s.execute(&sql).unwrap();
}

/// Keys `0..n` are there exactly once, a duplicate is refused, and the
/// index agrees with the heads.
fn check(db: &Database, n: i64) {
    db.verify_pk_indexes().unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), n);
    for k in [0, n / 2, n - 1] {
        assert_eq!(
            count(&mut s, &format!("SELECT count(*) FROM t WHERE k = {k}")),
            1
        );
        let e = s
            .execute(&format!("INSERT INTO t VALUES ({k}, 'dup')"))
            .unwrap_err();
        assert_eq!(e.code, SqlState::UNIQUE_VIOLATION);
    }
}

#[test]
fn open_reads_the_checkpointed_index_and_redoes_the_wal_tail() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut s) = create(dir.path());
        insert_range(&mut s, 0, 3000);
        db.checkpoint().unwrap();
    }
    // A clean reopen reads the file.
    let db = open(dir.path());
    assert_eq!(db.stat("recovery.pk_indexes_loaded"), 1);
    assert_eq!(db.stat("recovery.pk_indexes_rebuilt"), 0);
    check(&db, 3000);

    // Keys committed after the checkpoint, then a crash: the WAL redoes them.
    let mut s = Session::new(db.clone());
    insert_range(&mut s, 3000, 4000);
    s.execute("DELETE FROM t WHERE k < 10").unwrap();
    insert_range(&mut s, 0, 10);
    drop(s);
    db.close_like_a_crash();
    let db = open(dir.path());
    assert_eq!(db.stat("recovery.pk_indexes_loaded"), 1);
    check(&db, 4000);
}

/// Keys of transactions that never committed name VIDs without a
/// version: no row is found there, an insert of the key fills the VID,
/// and new keys never get those VIDs.
#[test]
fn keys_of_transactions_that_never_committed_find_no_row() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut s) = create(dir.path());
        insert_range(&mut s, 0, 100);
        // A transaction that inserts keys the checkpoint writes into the
        // index file, and never commits.
        let mut open = Session::new(db.clone());
        open.execute("BEGIN").unwrap();
        open.execute("INSERT INTO t VALUES (500, 'never'), (501, 'never')")
            .unwrap();
        db.checkpoint().unwrap();
        db.close_like_a_crash();
    }
    let db = open(dir.path());
    assert_eq!(db.stat("recovery.pk_indexes_loaded"), 1);
    check(&db, 100);
    // Their keys are free, and new keys get VIDs of their own.
    let mut s = Session::new(db.clone());
    insert_range(&mut s, 100, 600);
    check(&db, 600);
    assert_eq!(count(&mut s, "SELECT count(*) FROM t WHERE v = 'never'"), 0);
    drop(s);
    db.close_like_a_crash();
    check(&open(dir.path()), 600);
}

/// The index file of `dir` with extension `ext`.
fn index_file(dir: &std::path::Path, ext: &str) -> std::path::PathBuf {
    std::fs::read_dir(dir.join("pk"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == ext))
        .unwrap()
}

fn flip_byte_at(path: &std::path::Path, at: impl Fn(usize) -> usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = at(bytes.len());
    bytes[at] ^= 0x5a;
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn a_damaged_or_stale_index_file_is_rebuilt_from_the_heads() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut s) = create(dir.path());
        insert_range(&mut s, 0, 2000);
        db.checkpoint().unwrap();
    }
    // 2,000 keys: a delta file alone, checked whole at open.
    flip_byte_at(&index_file(dir.path(), "delta"), |n| n / 2);
    {
        let db = open(dir.path());
        assert_eq!(db.stat("recovery.pk_indexes_loaded"), 0);
        assert_eq!(db.stat("recovery.pk_indexes_rebuilt"), 1);
        check(&db, 2000);
    }
    // That open's checkpoint wrote the rebuilt index again.
    {
        let db = open(dir.path());
        assert_eq!(db.stat("recovery.pk_indexes_loaded"), 1);
        check(&db, 2000);
    }
    // A manifest of another checkpoint: the files are not trusted.
    std::fs::remove_file(dir.path().join("pk").join("MANIFEST")).unwrap();
    let db = open(dir.path());
    assert_eq!(db.stat("recovery.pk_indexes_rebuilt"), 1);
    check(&db, 2000);
}

/// A checkpoint writes the index files after its WAL record, outside the
/// gate commits take. A crash between the record and the manifest leaves
/// the manifest of the checkpoint before, beside files newer than it: the
/// open must not trust them, and rebuilds.
#[test]
fn a_crash_between_the_checkpoint_record_and_the_manifest_rebuilds() {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("pk").join("MANIFEST");
    let (db, mut s) = create(dir.path());
    insert_range(&mut s, 0, 1000);
    db.checkpoint().unwrap();
    let older = std::fs::read(&manifest).unwrap();
    insert_range(&mut s, 1000, 1500);
    db.checkpoint().unwrap();
    assert_ne!(std::fs::read(&manifest).unwrap(), older);
    std::fs::write(&manifest, &older).unwrap();
    insert_range(&mut s, 1500, 1600);
    drop(s);
    db.close_like_a_crash();
    let db = open(dir.path());
    assert_eq!(db.stat("recovery.pk_indexes_loaded"), 0);
    assert_eq!(db.stat("recovery.pk_indexes_rebuilt"), 1);
    check(&db, 1600);
}

/// A large index is a mapped base file whose data an open does not read:
/// damage there shows when a lookup reaches it (XX001, never a wrong
/// row), and the next open rebuilds the index.
#[test]
fn damage_in_a_mapped_base_fails_lookups_until_the_next_open_rebuilds() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (db, mut s) = create(dir.path());
        insert_range(&mut s, 0, 6000);
        db.checkpoint().unwrap();
        insert_range(&mut s, 6000, 6100);
    }
    assert!(index_file(dir.path(), "delta").exists());
    flip_byte_at(&index_file(dir.path(), "idx"), |n| n - 100);
    {
        let db = open(dir.path());
        assert_eq!(db.stat("recovery.pk_indexes_loaded"), 1);
        let e = db.verify_pk_indexes().unwrap_err();
        assert_eq!(e.code, SqlState::DATA_CORRUPTED);
        let mut s = Session::new(db.clone());
        let failed = (0..6000)
            .filter_map(|k| s.execute(&format!("SELECT v FROM t WHERE k = {k}")).err())
            .inspect(|e| assert_eq!(e.code, SqlState::DATA_CORRUPTED))
            .count();
        assert!(failed > 0 && failed < 6000, "{failed}");
    }
    let db = open(dir.path());
    assert_eq!(db.stat("recovery.pk_indexes_rebuilt"), 1);
    check(&db, 6100);
}

/// A key of a rolled-back insert names a VID that no version has; after a
/// restart the allocator hands that VID out again. The index file must
/// not keep the old key for it: a crash after the VID's reuse would
/// otherwise load two keys for one VID.
#[test]
fn a_vid_freed_at_open_is_not_claimed_by_its_old_key_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_db, mut s) = create(dir.path());
        s.execute("BEGIN; INSERT INTO t VALUES (58, 'never'); ROLLBACK")
            .unwrap();
    }
    let db = open(dir.path());
    let mut s = Session::new(db.clone());
    s.execute("INSERT INTO t VALUES (16, 'v16')").unwrap();
    drop(s);
    db.close_like_a_crash();
    let db = open(dir.path());
    db.verify_pk_indexes().unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(count(&mut s, "SELECT count(*) FROM t"), 1);
    s.execute("INSERT INTO t VALUES (58, 'now')").unwrap();
    assert_eq!(
        s.execute("INSERT INTO t VALUES (16, 'dup')")
            .unwrap_err()
            .code,
        SqlState::UNIQUE_VIOLATION
    );
    db.verify_pk_indexes().unwrap();
}

/// A key added by ALTER TABLE … ADD PRIMARY KEY survives reopening, both
/// before a checkpoint wrote its index (rebuilt from the heads, where a
/// deleted tuple with a live one's key must not take the key) and after.
#[test]
fn a_key_added_later_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open(dir.path());
        let mut s = Session::new(db.clone());
        s.execute("CREATE TABLE a (k BIGINT, v TEXT)").unwrap();
        // The deleted duplicate of k = 1 has the larger VID.
        s.execute("INSERT INTO a VALUES (1, 'new'), (2, 'b'), (1, 'old'), (3, 'c')")
            .unwrap();
        s.execute("DELETE FROM a WHERE v = 'old'").unwrap();
        s.execute("ALTER TABLE a ADD PRIMARY KEY (k)").unwrap();
        db.flush().unwrap();
        drop(s);
        db.close_like_a_crash();
    }
    for round in 0..2 {
        let db = open(dir.path());
        let how = if round == 0 {
            "recovery.pk_indexes_rebuilt"
        } else {
            "recovery.pk_indexes_loaded"
        };
        assert_eq!(db.stat(how), 1, "round {round}");
        let mut s = Session::new(db.clone());
        assert_eq!(count(&mut s, "SELECT count(*) FROM a"), 3, "round {round}");
        match s
            .execute("SELECT v FROM a WHERE k = 1")
            .unwrap()
            .pop()
            .unwrap()
        {
            Output::Rows { rows, .. } => {
                assert_eq!(rows, vec![vec![Value::Text("new".into())]], "round {round}")
            }
            o => panic!("{o:?}"),
        }
        let e = s.execute("INSERT INTO a VALUES (3, 'dup')").unwrap_err();
        assert_eq!(e.code, SqlState::UNIQUE_VIOLATION, "round {round}");
        db.verify_pk_indexes().unwrap();
        // The second round opens from the checkpointed index.
        db.checkpoint().unwrap();
    }
}
