//! Savepoints around update NDP: an UPDATE that `SET ndp = on` sends to
//! the storage device, rolled back to a savepoint, leaves the rows (and
//! their locks) as they were; released savepoints keep their changes.
//! And psycopg's nested `with conn.transaction():` blocks
//! (tests/clients/psycopg_nested_transactions.py).

use std::path::Path;

use super::Expect::{Affected, Ok, Rows};
use super::{blocks, replay, step, Step, Target};

/// Rows of `big`; v starts as the id.
const ROWS: i64 = 3_000;
// sum(v) and count(*) read as "SUM,3000": 4501500 at the start, 4504500
// with v + 1 everywhere, 4502500 with v + 1 for ids up to 1000, 4512500
// with that and v + 10 for ids above 2000.

fn big_sql() -> String {
    let rows: Vec<String> = (1..=ROWS).map(|i| format!("({i}, {i})")).collect();
    format!(
        "create table big (id int primary key, v int not null);
         insert into big (id, v) values {};
         analyze big;",
        rows.join(", ")
    )
}

/// `set ndp = on` for session 1 (ndpdb only).
fn ndp_on(target: &Target) -> Vec<Step> {
    if target.is_postgres() {
        Vec::new()
    } else {
        vec![step(1, "set ndp = on", Ok)]
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndp_update_rolled_back_to_a_savepoint_leaves_the_rows_as_they_were() {
    let target = Target::new("savepoint_ndp_rollback").await;
    let sums = "select sum(v), count(*) from big";
    let mut steps = vec![step(1, "begin", Ok)];
    steps.extend(ndp_on(&target));
    steps.extend([
        step(1, "savepoint a", Ok),
        step(1, "update big set v = v + 1", Affected(ROWS as u64)),
        step(1, sums, Rows("4504500,3000")),
        step(1, "rollback to savepoint a", Ok),
        step(1, sums, Rows("4501500,3000")),
        step(
            1,
            "select id, v from big where id in (1, 1500, 3000)",
            Rows("1,1 1500,1500 3000,3000"),
        ),
        step(1, "commit", Ok),
        step(0, sums, Rows("4501500,3000")),
    ]);
    replay(&target, "savepoint around an ndp update", &big_sql(), steps).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ndp_updates_between_savepoints_keep_what_was_released() {
    let target = Target::new("savepoint_ndp_release").await;
    let sums = "select sum(v), count(*) from big";
    let mut steps = vec![step(1, "begin", Ok)];
    steps.extend(ndp_on(&target));
    steps.extend([
        step(
            1,
            "update big set v = v + 1 where id <= 1000",
            Affected(1000),
        ),
        step(1, "savepoint s", Ok),
        step(1, "update big set v = v * 2", Affected(ROWS as u64)),
        step(1, "delete from big where id > 2500", Affected(500)),
        step(1, "rollback to savepoint s", Ok),
        step(1, sums, Rows("4502500,3000")),
        step(1, "savepoint t", Ok),
        step(
            1,
            "update big set v = v + 10 where id > 2000",
            Affected(1000),
        ),
        step(1, "savepoint u", Ok),
        step(1, "update big set v = 0", Affected(ROWS as u64)),
        step(1, "rollback to savepoint t", Ok),
        step(1, "savepoint t2", Ok),
        step(
            1,
            "update big set v = v + 10 where id > 2000",
            Affected(1000),
        ),
        step(1, "release savepoint t2", Ok),
        step(1, sums, Rows("4512500,3000")),
        step(1, "commit", Ok),
        step(0, sums, Rows("4512500,3000")),
        step(
            0,
            "select id, v from big where id in (1, 1500, 3000)",
            Rows("1,2 1500,1500 3000,3010"),
        ),
    ]);
    replay(
        &target,
        "savepoints released and rolled back",
        &big_sql(),
        steps,
    )
    .await;
}

/// A row the rolled-back UPDATE locked is free again at ROLLBACK TO: the
/// session waiting for it goes on, before the transaction ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_to_savepoint_releases_the_row_locks_of_an_ndp_update() {
    let target = Target::new("savepoint_ndp_locks").await;
    let mut steps = vec![step(1, "begin", Ok)];
    steps.extend(ndp_on(&target));
    steps.extend([
        step(1, "update big set v = v + 1 where id = 1", Affected(1)),
        step(1, "savepoint a", Ok),
        step(
            1,
            "update big set v = v + 1 where id > 1",
            Affected(ROWS as u64 - 1),
        ),
        step(
            2,
            "update big set v = v + 100 where id = 5",
            blocks(Affected(1)),
        ),
        step(1, "rollback to savepoint a", Ok).releases(2),
        // READ COMMITTED: the waiter's update, committed, shows.
        step(
            1,
            "select id, v from big where id in (1, 5, 6)",
            Rows("1,2 5,105 6,6"),
        ),
        step(1, "commit", Ok),
        step(
            0,
            "select id, v from big where id in (1, 5, 6)",
            Rows("1,2 5,105 6,6"),
        ),
    ]);
    replay(
        &target,
        "locks after rollback to savepoint",
        &big_sql(),
        steps,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psycopg_nested_transaction_blocks() {
    let target = Target::new("psycopg_nested").await;
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/clients/psycopg_nested_transactions.py");
    let conninfo = target.conninfo().to_string();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg(script)
            .arg(conninfo)
            .output()
            .expect("python3 with psycopg must be installed (scripts/test-deps.sh installs it)")
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("ok"),
        "{stdout}\n{stderr}"
    );
}
