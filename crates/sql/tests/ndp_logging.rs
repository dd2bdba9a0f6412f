//! NDP logging modes (update NDP §6): `SET ndp_logging = off | basic |
//! extended`. With `extended` each update job's overflow log — its new
//! pages — is on the host, fsync'd, before the commit is acknowledged,
//! and its End-NDP record names it by size and checksum.

use ndpdb_formats::page::PageRef;
use ndpdb_formats::{SqlState, Value};
use ndpdb_host::ndp::overflow_log::{self, OverflowRef};
use ndpdb_host::{Config, Database};
use ndpdb_sql::{Output, Session};
use ndpdb_wal::{Wal, WalRecord};

fn config() -> Config {
    Config {
        autovacuum: false,
        ..Config::default()
    }
}

fn one(s: &mut Session, sql: &str) -> String {
    match s
        .execute(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .pop()
    {
        Some(Output::Rows { rows, .. }) => match &rows[0][0] {
            Value::Null => "NULL".into(),
            v => v.to_pg_text().unwrap_or_default(),
        },
        o => panic!("{sql}: expected rows, got {o:?}"),
    }
}

fn setup(db: &Database, n: i64) -> Session {
    let mut s = Session::new(db.clone());
    s.execute("CREATE TABLE t (k INT PRIMARY KEY, c BIGINT NOT NULL, pad TEXT)")
        .unwrap();
    let pad = "x".repeat(200);
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let vals: Vec<String> = chunk.iter().map(|k| format!("({k}, 0, '{pad}')")).collect();
        s.execute(&format!("INSERT INTO t VALUES {}", vals.join(", ")))
            .unwrap();
    }
    db.flush().unwrap();
    s
}

fn overflow_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir.join("overflow"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn ndp_logging_is_a_setting() {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db);
    assert_eq!(one(&mut s, "SHOW ndp_logging"), "basic");
    for v in ["off", "extended", "basic"] {
        s.execute(&format!("SET ndp_logging = {v}")).unwrap();
        assert_eq!(one(&mut s, "SHOW ndp_logging"), v);
    }
    let e = s.execute("SET ndp_logging = verbose").unwrap_err();
    assert_eq!(e.code, SqlState::INVALID_PARAMETER_VALUE);
    assert!(e.message.contains("off, basic or extended"), "{e:?}");
}

/// The overflow log holds every page the job wrote, with every new
/// version on it; End-NDP names it; a rolled-back job leaves no file; a
/// checkpoint (which makes the device's maps hold the pages) removes it.
#[test]
fn extended_logging_moves_each_jobs_pages_to_the_host_before_commit() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
        let mut s = setup(&db, 3000);
        s.execute("SET ndp = on").unwrap();
        s.execute("SET ndp_logging = extended").unwrap();

        s.execute("BEGIN").unwrap();
        s.execute("UPDATE t SET c = 7").unwrap();
        s.execute("ROLLBACK").unwrap();
        assert!(overflow_files(dir.path()).is_empty(), "rolled back: no log");
        assert_eq!(db.stat("ndp.overflow_bytes"), 0);

        s.execute("BEGIN").unwrap();
        s.execute("UPDATE t SET c = c + 1 WHERE k % 2 = 0").unwrap();
        // Written while the job ran; finished (count, CRC, fsync) at commit.
        assert!(overflow_files(dir.path()).len() <= 1);
        s.execute("COMMIT").unwrap();
        assert_eq!(overflow_files(dir.path()).len(), 1);
        assert!(db.stat("ndp.overflow_bytes") > 8192);
        db.close_like_a_crash();
    }
    // The End-NDP record names the file; the file holds the new versions.
    let (_, recovered) = Wal::open(&dir.path().join("wal")).unwrap();
    let ends: Vec<OverflowRef> = recovered
        .records
        .iter()
        .filter_map(|(_, r)| match r {
            WalRecord::EndNdp {
                start: Some(start),
                overflow: Some((bytes, crc)),
                ..
            } => Some(OverflowRef {
                start: *start,
                bytes: *bytes,
                crc: *crc,
            }),
            _ => None,
        })
        .collect();
    assert_eq!(ends.len(), 1);
    let log = overflow_log::read(dir.path(), &ends[0]).unwrap();
    assert!(!log.pages.is_empty());
    let versions: usize = log
        .pages
        .iter()
        .map(|(lpn, _, image)| {
            let p = PageRef::parse_verified(image).unwrap();
            assert_eq!(p.lpn(), *lpn);
            p.slot_count() as usize
        })
        .sum();
    assert_eq!(versions, 1500, "one new version per updated row");
    // A damaged file is refused, not replayed.
    let path = overflow_files(dir.path()).remove(0);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[100] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let e = overflow_log::read(dir.path(), &ends[0]).unwrap_err();
    assert_eq!(e.code, SqlState::DATA_CORRUPTED);
    let e = overflow_log::for_each_page(dir.path(), &ends[0], 8, &mut |_| Ok(())).unwrap_err();
    assert_eq!(e.code, SqlState::DATA_CORRUPTED);
    bytes[100] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let streamed = overflow_log::for_each_page(dir.path(), &ends[0], 8, &mut |_| Ok(())).unwrap();
    assert_eq!(streamed.len(), log.pages.len());

    // System recovery does not need the log; after it the maps hold the
    // pages durably, and the next checkpoint removes the log.
    let db = ndpdb_embedded::open_with(dir.path(), config()).unwrap();
    let mut s = Session::new(db.clone());
    assert_eq!(one(&mut s, "SELECT sum(c) FROM t"), "1500");
    s.execute("SET ndp = on").unwrap();
    s.execute("SET ndp_logging = extended").unwrap();
    s.execute("UPDATE t SET c = c + 1").unwrap();
    assert_eq!(overflow_files(dir.path()).len(), 2);
    db.checkpoint().unwrap();
    assert!(
        overflow_files(dir.path()).is_empty(),
        "covered by the checkpoint"
    );
    assert_eq!(one(&mut s, "SELECT sum(c) FROM t"), "4500");
}
