//! Reads in primary-key order that stop at a LIMIT (TPC-C Delivery's
//! oldest NEW-ORDER of a district) drop the ordered entries of tuples
//! dead to every snapshot as they pass them, so that the next read does
//! not walk them again — and never the entry of a tuple some snapshot
//! still sees, or of a key inserted again.

use std::sync::atomic::{AtomicBool, Ordering};

use ndpdb_formats::Value;
use ndpdb_host::Database;
use ndpdb_sql::{Output, Session};

fn rows(s: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    match s.execute(sql).unwrap().pop().unwrap() {
        Output::Rows { rows, .. } => rows,
        o => panic!("{o:?}"),
    }
}

const OLDEST: &str = "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1";

fn oldest(s: &mut Session) -> Option<i32> {
    orders(s, OLDEST).first().copied()
}

/// The orders `sql` returns (one INT column).
fn orders(s: &mut Session, sql: &str) -> Vec<i32> {
    rows(s, sql)
        .iter()
        .map(|r| match r[0] {
            Value::Int(o) => o,
            ref v => panic!("{v:?}"),
        })
        .collect()
}

/// Every order of district (1, 1) the session sees, in key order.
const ALL_IN_KEY_ORDER: &str = "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1000";

/// Entries of the primary key's ordered index of `no`.
fn entries(db: &Database) -> usize {
    let t = db.table("no").unwrap();
    let pk = t.pk.get().unwrap();
    pk.ordered_if_built().map_or(0, |o| o.len())
}

/// A REPEATABLE READ session that has read the oldest order (1): its
/// snapshot keeps every order deleted from now on.
fn old_reader(db: &Database) -> Session {
    let mut old = Session::new(db.clone());
    old.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        .unwrap();
    assert_eq!(oldest(&mut old), Some(1));
    old
}

fn create(n: i32) -> (tempfile::TempDir, Database, Session) {
    create_with(n, ndpdb_host::Config::default())
}

fn create_with(n: i32, config: ndpdb_host::Config) -> (tempfile::TempDir, Database, Session) {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config).unwrap();
    let mut s = Session::new(db.clone());
    s.execute(&format!(
        "CREATE TABLE no (w INT, d INT, o INT, PRIMARY KEY (w, d, o));
         INSERT INTO no SELECT 1, 1, g FROM generate_series(1, {n}) g"
    ))
    .unwrap();
    (dir, db, s)
}

#[test]
fn delivering_orders_one_by_one_leaves_no_trail_in_the_key_order() {
    let (_dir, db, mut s) = create(200);
    assert!(s
        .execute(&format!("EXPLAIN {OLDEST}"))
        .map(|o| format!("{o:?}").contains("no_pkey"))
        .unwrap());
    for o in 1..=150 {
        assert_eq!(oldest(&mut s), Some(o));
        s.execute(&format!("DELETE FROM no WHERE w = 1 AND d = 1 AND o = {o}"))
            .unwrap();
    }
    assert_eq!(oldest(&mut s), Some(151));
    // The 150 delivered orders' entries are gone (the last read passed
    // them all); the 50 live ones stay.
    assert_eq!(entries(&db), 50);
    // A key inserted again is found again, in its place.
    s.execute("INSERT INTO no VALUES (1, 1, 7)").unwrap();
    assert_eq!(oldest(&mut s), Some(7));
    assert_eq!(entries(&db), 51);
    let all = rows(
        &mut s,
        "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 1000",
    );
    assert_eq!(all.len(), 51);
    // An insert that rolls back leaves the key's tuple dead again.
    s.execute("BEGIN; INSERT INTO no VALUES (1, 1, 3); ROLLBACK")
        .unwrap();
    assert_eq!(oldest(&mut s), Some(7));
}

/// A snapshot older than a delete still reads the deleted row in key
/// order, after a newer read passed it.
#[test]
fn an_older_snapshot_keeps_the_entries_it_can_see() {
    let (_dir, db, mut s) = create(10);
    assert_eq!(oldest(&mut s), Some(1));
    let mut old = old_reader(&db);
    s.execute("DELETE FROM no WHERE w = 1 AND d = 1 AND o <= 3")
        .unwrap();
    assert_eq!(oldest(&mut s), Some(4));
    assert_eq!(entries(&db), 10);
    assert_eq!(oldest(&mut old), Some(1));
    assert_eq!(
        rows(
            &mut old,
            "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o DESC LIMIT 20"
        )
        .len(),
        10
    );
    old.execute("COMMIT").unwrap();
    assert_eq!(oldest(&mut s), Some(4));
    assert_eq!(entries(&db), 7);
}

/// Keys deleted and inserted again while other sessions read in key
/// order: every live key stays reachable.
#[test]
fn keys_inserted_again_under_concurrent_readers_stay_in_the_key_order() {
    let (_dir, db, mut s) = create(20);
    assert_eq!(oldest(&mut s), Some(1));
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            let db = db.clone();
            let done = &done;
            scope.spawn(move || {
                let mut r = Session::new(db);
                while !done.load(Ordering::Acquire) {
                    rows(
                        &mut r,
                        "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 100",
                    );
                }
            });
        }
        let mut w = Session::new(db.clone());
        for i in 0..600 {
            let o = 1 + i % 20;
            w.execute(&format!("DELETE FROM no WHERE w = 1 AND d = 1 AND o = {o}"))
                .unwrap();
            w.execute(&format!("INSERT INTO no VALUES (1, 1, {o})"))
                .unwrap();
        }
        done.store(true, Ordering::Release);
    });
    let all = rows(
        &mut s,
        "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 100",
    );
    let want: Vec<Vec<Value>> = (1..=20).map(|o| vec![Value::Int(o)]).collect();
    assert_eq!(all, want);
    assert_eq!(entries(&db), 20);
}

/// A GC run takes seconds on a large table; it creates no version, so
/// the orders delivered meanwhile are dropped from the key order as
/// soon as no snapshot sees them, not when the run ends.
#[test]
fn a_running_gc_holds_back_no_drop() {
    // The only GC run is the test's.
    let config = ndpdb_host::Config {
        autovacuum: false,
        ..ndpdb_host::Config::default()
    };
    let (_dir, db, mut s) = create_with(200, config);
    assert_eq!(oldest(&mut s), Some(1));
    let pad = "x".repeat(200);
    s.execute(&format!(
        "CREATE TABLE big (k INT PRIMARY KEY, pad TEXT);
         INSERT INTO big SELECT g, '{pad}' FROM generate_series(1, 4000) g"
    ))
    .unwrap();
    s.execute("UPDATE big SET pad = 'y'").unwrap();
    let gc = {
        let db = db.clone();
        std::thread::spawn(move || {
            // A page read costs 1: a pause after every page, about
            // two seconds in all.
            let slow = ndpdb_host::GcCost {
                delay: std::time::Duration::from_millis(100),
                limit: 1,
            };
            db.vacuum_with(Some("big"), true, slow).unwrap()
        })
    };
    while db.stat("gc.micros") == 0 {
        std::thread::yield_now();
    }
    std::thread::sleep(std::time::Duration::from_millis(50));
    // Deliveries one by one; after each, the read has dropped every
    // entry delivered so far. Counted only while the run goes on
    // (checked after the count): those drops did not wait for it.
    let mut while_running = 0;
    for o in 1..=100 {
        assert_eq!(oldest(&mut s), Some(o));
        s.execute(&format!("DELETE FROM no WHERE w = 1 AND d = 1 AND o = {o}"))
            .unwrap();
        assert_eq!(oldest(&mut s), Some(o + 1));
        let left = entries(&db);
        if !gc.is_finished() {
            assert_eq!(left, 200 - o as usize, "after delivering order {o}");
            while_running = o;
        }
    }
    assert_eq!(entries(&db), 100);
    assert!(
        while_running >= 10,
        "the GC run ended after {while_running} deliveries"
    );
    let report = gc.join().unwrap();
    assert!(report.pages_freed > 0, "{report:?}");
}

/// While an old snapshot keeps deleted orders in the key order, reads
/// pass them by their noted tombstones; a key inserted again is seen at
/// once, and the old snapshot still reads what it saw.
#[test]
fn noted_tombstones_never_hide_a_row() {
    let (_dir, db, mut s) = create(10);
    assert_eq!(oldest(&mut s), Some(1));
    let mut old = old_reader(&db);
    s.execute("DELETE FROM no WHERE w = 1 AND d = 1 AND o <= 5")
        .unwrap();
    // The first read notes the five tombstones, the second passes them.
    assert_eq!(oldest(&mut s), Some(6));
    assert_eq!(oldest(&mut s), Some(6));
    assert_eq!(entries(&db), 10);
    s.execute("INSERT INTO no VALUES (1, 1, 3)").unwrap();
    assert_eq!(oldest(&mut s), Some(3));
    // Deleted again in a transaction of its own: its own read sees the
    // delete, a concurrent one the row.
    let mut w = Session::new(db.clone());
    w.execute("BEGIN; DELETE FROM no WHERE w = 1 AND d = 1 AND o = 3")
        .unwrap();
    assert_eq!(oldest(&mut w), Some(6));
    assert_eq!(oldest(&mut s), Some(3));
    w.execute("COMMIT").unwrap();
    assert_eq!(oldest(&mut s), Some(6));
    assert_eq!(oldest(&mut old), Some(1));
    let seen = rows(
        &mut old,
        "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o LIMIT 20",
    );
    assert_eq!(seen.len(), 10);
    old.execute("COMMIT").unwrap();
    assert_eq!(oldest(&mut s), Some(6));
    assert_eq!(entries(&db), 5);
}

/// A long run of deleted orders an old snapshot keeps: later reads jump
/// over it as a whole once one read passed it, and still see a key
/// inserted again inside it, their own delete after it, and not a
/// concurrent uncommitted one; the old snapshot reads every order.
#[test]
fn a_remembered_run_of_deleted_orders_never_hides_a_row() {
    let (_dir, db, mut s) = create(60);
    assert_eq!(oldest(&mut s), Some(1));
    let mut old = old_reader(&db);
    s.execute("DELETE FROM no WHERE w = 1 AND d = 1 AND o <= 40")
        .unwrap();
    // The first read notes the tombstones, the second passes them and
    // remembers the run, the third jumps over it.
    for _ in 0..3 {
        assert_eq!(oldest(&mut s), Some(41));
    }
    let jumps = db.stat("index.dead_runs_jumped");
    assert!(jumps >= 1, "no read jumped over the run");
    // A transaction's own delete right after the run, and a concurrent
    // reader that must still see that order.
    let mut w = Session::new(db.clone());
    w.execute("BEGIN; DELETE FROM no WHERE w = 1 AND d = 1 AND o = 41")
        .unwrap();
    assert_eq!(oldest(&mut w), Some(42));
    assert_eq!(oldest(&mut s), Some(41));
    w.execute("ROLLBACK").unwrap();
    // A key inserted again inside the run (uncommitted): its writer
    // sees it, others do not; once committed, everyone does.
    w.execute("BEGIN; INSERT INTO no VALUES (1, 1, 20)")
        .unwrap();
    assert_eq!(oldest(&mut w), Some(20));
    assert_eq!(oldest(&mut s), Some(41));
    w.execute("COMMIT").unwrap();
    assert_eq!(oldest(&mut s), Some(20));
    // Deleted again: the run is found again and jumped over again.
    s.execute("DELETE FROM no WHERE w = 1 AND d = 1 AND o = 20")
        .unwrap();
    for _ in 0..3 {
        assert_eq!(oldest(&mut s), Some(41));
    }
    assert!(db.stat("index.dead_runs_jumped") > jumps);
    // The old snapshot reads all 60 orders, in order.
    let want: Vec<i32> = (1..=60).collect();
    assert_eq!(orders(&mut old, ALL_IN_KEY_ORDER), want);
    old.execute("COMMIT").unwrap();
    // Nothing holds the deleted orders any more: the next read drops
    // their entries.
    assert_eq!(oldest(&mut s), Some(41));
    assert_eq!(entries(&db), 20);
}

/// Keys deleted and inserted again at random while an old snapshot
/// keeps every deleted entry and readers walk (and remember runs of)
/// them: each reader's oldest order in key order is, in the same
/// snapshot, the oldest a sort finds without the index.
#[test]
fn remembered_runs_agree_with_a_sort_under_deletes_and_inserts_again() {
    let (_dir, db, mut s) = create(60);
    assert_eq!(oldest(&mut s), Some(1));
    let mut old = old_reader(&db);
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..2 {
            let db = db.clone();
            let done = &done;
            scope.spawn(move || {
                let mut r = Session::new(db);
                while !done.load(Ordering::Acquire) {
                    r.execute("BEGIN ISOLATION LEVEL REPEATABLE READ").unwrap();
                    let walked = oldest(&mut r);
                    let sorted = orders(
                        &mut r,
                        "SELECT o FROM no WHERE w = 1 AND d = 1 ORDER BY o + 0 LIMIT 1",
                    );
                    r.execute("COMMIT").unwrap();
                    assert_eq!(walked, sorted.first().copied());
                }
            });
        }
        let mut w = Session::new(db.clone());
        let mut present = [true; 41];
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        for _ in 0..1500 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Mostly the oldest key, as Delivery deletes it; else a
            // deleted key inserted again.
            let oldest_present = (1..=40).find(|&o| present[o]);
            let absent: Vec<usize> = (1..=40).filter(|&o| !present[o]).collect();
            let o = match oldest_present {
                Some(o) if x % 4 != 3 || absent.is_empty() => o,
                _ => absent[(x >> 8) as usize % absent.len()],
            };
            let sql = if present[o] {
                format!("DELETE FROM no WHERE w = 1 AND d = 1 AND o = {o}")
            } else {
                format!("INSERT INTO no VALUES (1, 1, {o})")
            };
            w.execute(&sql).unwrap();
            present[o] = !present[o];
        }
        done.store(true, Ordering::Release);
    });
    assert!(db.stat("index.dead_runs_jumped") > 0);
    assert_eq!(orders(&mut old, ALL_IN_KEY_ORDER).len(), 60);
    old.execute("COMMIT").unwrap();
}
