//! Media recovery (update NDP §6.2): an online base backup, the device's
//! store lost, `ndpdb_embedded::restore` from the backup, the host's WAL and the
//! overflow logs. Every committed row comes back with identical content;
//! nothing uncommitted does.

use std::path::Path;

use ndpdb_formats::{SqlState, Value};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};

fn config() -> Config {
    Config {
        autovacuum: false,
        ..Config::default()
    }
}

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<String>> {
    match s
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .pop()
    {
        Some(Output::Rows { rows, .. }) => rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| match v {
                        Value::Null => "NULL".into(),
                        v => v.to_pg_text().unwrap_or_default(),
                    })
                    .collect()
            })
            .collect(),
        o => panic!("{sql}: expected rows, got {o:?}"),
    }
}

fn one(s: &mut Session, sql: &str) -> String {
    rows(s, sql).remove(0).remove(0)
}

fn ok(s: &mut Session, sql: &str) {
    s.execute(sql).unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

fn setup(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    ok(
        &mut s,
        "CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL, pad TEXT)",
    );
    let pad = "x".repeat(200);
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let vals: Vec<String> = chunk
            .iter()
            .map(|k| format!("({k}, {k}, '{pad}')"))
            .collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(", ")));
    }
    db.flush().unwrap();
    s
}

fn restore_err(dir: &Path, backup: &Path) -> ndpdb_host::Error {
    match ndpdb_embedded::restore(dir, backup, config()) {
        Ok(_) => panic!("restore from {} succeeded", backup.display()),
        Err(e) => e,
    }
}

fn files_in(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |d| d.count())
}

/// Everything the table holds, read on the host.
fn content(db: &Database) -> Vec<Vec<String>> {
    let mut s = Session::new(db.clone());
    ok(&mut s, "SET ndp = off");
    rows(&mut s, "SELECT k, c, pad FROM t ORDER BY k")
}

#[test]
fn a_lost_device_store_is_rebuilt_from_a_backup_the_wal_and_the_overflow_logs() {
    let dir = tempfile::tempdir().unwrap();
    let backups = tempfile::tempdir().unwrap();
    let backup = backups.path().join("base");
    let expected;
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 3000);
        ok(&mut s, "SET ndp = on");
        ok(&mut s, "SET ndp_logging = extended");
        ok(&mut s, "UPDATE t SET c = c + 1");
        ok(&mut s, "UPDATE t SET pad = 'host' WHERE k = 5");

        // Online: host transactions commit while the backup copies.
        let writer = {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut w = Session::new(db);
                for i in 0..300 {
                    ok(
                        &mut w,
                        &format!("UPDATE t SET c = c + 100 WHERE k = {}", (i * 7) % 3000),
                    );
                }
            })
        };
        let report = db.backup(&backup, &|_, _| {}).unwrap();
        writer.join().unwrap();
        assert!(report.label.pages > 0);
        assert_eq!(db.backup_horizon(), Some(report.label.checkpoint));

        // After the backup: host and NDP updates and deletes, inserts, a
        // checkpoint (the WAL from the backup's checkpoint stays), GC.
        let pad = "y".repeat(100);
        let vals: Vec<String> = (3000..3500).map(|k| format!("({k}, 1, '{pad}')")).collect();
        ok(&mut s, &format!("INSERT INTO t VALUES {}", vals.join(", ")));
        ok(&mut s, "UPDATE t SET c = c * 2 WHERE k % 3 = 0");
        ok(&mut s, "DELETE FROM t WHERE k % 7 = 0");
        db.checkpoint().unwrap();
        // VACUUM FULL: the run copies live versions to new pages, which
        // only its overflow log holds for a restore.
        let gc = db.vacuum(Some("t"), true).unwrap();
        assert!(gc.relocated > 0 && gc.tuples_removed > 0, "{gc:?}");
        ok(&mut s, "UPDATE t SET c = c - 1 WHERE k % 5 = 1");
        ok(&mut s, "UPDATE t SET pad = 'late' WHERE k = 11");
        assert!(files_in(&dir.path().join("overflow")) >= 3);
        assert!(
            files_in(&dir.path().join("wal")) >= 2,
            "segments from the backup's checkpoint on are kept"
        );

        // Uncommitted when the device is lost: a host and an NDP update
        // (on few rows: the shared lock table's buckets are shared by
        // many tuples, and the device job would wait on a host lock that
        // hashes to the bucket of one of its rows).
        let mut a = Session::new(db.clone());
        ok(&mut a, "BEGIN");
        ok(&mut a, "INSERT INTO t VALUES (9000, -1, 'uncommitted')");
        ok(&mut a, "UPDATE t SET c = -1 WHERE k = 1");
        let mut b = Session::new(db.clone());
        ok(&mut b, "SET ndp = on");
        ok(&mut b, "SET ndp_logging = extended");
        ok(&mut b, "BEGIN");
        ok(&mut b, "UPDATE t SET c = -2 WHERE k >= 2000");
        expected = {
            let mut r = Session::new(db.clone());
            ok(&mut r, "SET ndp = off");
            rows(&mut r, "SELECT k, c, pad FROM t ORDER BY k")
        };
        assert_eq!(expected.len(), 3500 - 500);
        assert!(expected.iter().all(|r| r[1] != "-1" && r[1] != "-2"));
        db.close_like_a_crash();
        drop((a, b, s));
    }
    std::fs::remove_dir_all(dir.path().join("device")).unwrap();

    let db = ndpdb_embedded::restore(dir.path(), &backup, config()).unwrap();
    let report = db.recovery_report();
    // Three update jobs and the GC run.
    assert_eq!(report.overflow_logs_written_back, 4, "{report:?}");
    assert_eq!(content(&db), expected);
    db.verify_pk_indexes().unwrap();
    // The device answers from the rebuilt store as the host does.
    let mut s = Session::new(db.clone());
    ok(&mut s, "SET ndp = on");
    let on_device = rows(&mut s, "SELECT count(*), sum(c) FROM t WHERE c >= 0");
    ok(&mut s, "SET ndp = off");
    assert_eq!(
        rows(&mut s, "SELECT count(*), sum(c) FROM t WHERE c >= 0"),
        on_device
    );
    // It is an ordinary database again: writes, GC, crash recovery.
    ok(&mut s, "SET ndp = on");
    ok(&mut s, "SET ndp_logging = extended");
    ok(&mut s, "UPDATE t SET c = c + 1 WHERE k % 2 = 0");
    ok(&mut s, "UPDATE t SET pad = 'after' WHERE k = 2");
    db.vacuum(Some("t"), true).unwrap();
    let after = content(&db);
    drop(s);
    db.close_like_a_crash();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    assert_eq!(content(&db), after);
    let mut s = Session::new(db.clone());
    assert_eq!(one(&mut s, "SELECT pad FROM t WHERE k = 2"), "after");
}

#[test]
fn a_restore_refuses_what_it_cannot_rebuild_and_backups_release_old_log() {
    let dir = tempfile::tempdir().unwrap();
    let backups = tempfile::tempdir().unwrap();
    let (first, second) = (backups.path().join("1"), backups.path().join("2"));
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 2000);
        db.backup(&first, &|_, _| {}).unwrap();
        let e = db.backup(&first, &|_, _| {}).unwrap_err();
        assert_eq!(e.code, SqlState::DUPLICATE_FILE, "{e:?}");
        ok(&mut s, "SET ndp = on");
        ok(&mut s, "SET ndp_logging = extended");
        ok(&mut s, "UPDATE t SET c = c + 1");
        db.checkpoint().unwrap();
        assert_eq!(files_in(&dir.path().join("overflow")), 1);
        assert_eq!(files_in(&dir.path().join("wal")), 2);
        // A newer backup, taken from a session as a served database is,
        // covers that log: the older segments and the overflow log go.
        let call = format!("SELECT ndpdb_backup('{}')", second.display());
        ok(&mut s, "BEGIN");
        let e = s.execute(&call).unwrap_err();
        assert_eq!(e.code, SqlState::ACTIVE_SQL_TRANSACTION, "{e:?}");
        ok(&mut s, "ROLLBACK");
        let lsn: u64 = one(&mut s, &call).parse().unwrap();
        assert_eq!(db.backup_horizon().map(|l| l.0), Some(lsn));
        assert_eq!(files_in(&dir.path().join("overflow")), 0);
        assert_eq!(files_in(&dir.path().join("wal")), 1);
        // While a backup is kept, jobs log their pages whatever the
        // session asks for.
        ok(&mut s, "SET ndp_logging = basic");
        ok(&mut s, "UPDATE t SET c = c + 1 WHERE k < 1000");
        assert_eq!(files_in(&dir.path().join("overflow")), 1);
    }
    // A committed job logged without its pages (as an older build wrote
    // them) cannot be restored.
    {
        let (wal, _) = ndpdb_wal::Wal::open(&dir.path().join("wal")).unwrap();
        let txid = ndpdb_formats::TxId(1 << 40);
        let lsn = wal.append(&[
            ndpdb_wal::WalRecord::EndNdp {
                txid,
                table: ndpdb_formats::TableId(1),
                start: None,
                overflow: None,
                delta: ndpdb_formats::delta_maps::DeltaMaps {
                    l2p: vec![(ndpdb_formats::Lpn(1 << 30), ndpdb_formats::Ppn(1 << 20))],
                    vids: Vec::new(),
                },
            },
            ndpdb_wal::WalRecord::Commit { txid },
        ]);
        wal.sync(lsn).unwrap();
    }
    let e = restore_err(dir.path(), &second);
    assert_eq!(e.code, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{e:?}");
    assert!(e.message.contains("rebuilds a lost device store"), "{e:?}");
    std::fs::remove_dir_all(dir.path().join("device")).unwrap();

    let e = restore_err(dir.path(), &first);
    assert_eq!(e.code, SqlState::UNDEFINED_FILE, "{e:?}");
    let e = restore_err(dir.path(), &second);
    assert_eq!(e.code, SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE, "{e:?}");
    assert!(e.message.contains("ndp_logging = extended"), "{e:?}");
    assert!(
        !dir.path().join("device").exists(),
        "a failed restore leaves no half-built store"
    );
    let e = restore_err(dir.path(), backups.path());
    assert_eq!(e.code, SqlState::UNDEFINED_FILE, "not a backup: {e:?}");
}
