//! Hermitage's anomaly scripts (github.com/ept/hermitage, postgres.md and
//! the g-single-write variants), each at READ COMMITTED, REPEATABLE READ
//! and SERIALIZABLE, with PostgreSQL 15's outcome at every step: which
//! statement blocks, what each read returns, which statement or commit
//! fails with 40001 (or 25P02 once its transaction has failed).

use super::Expect::{Affected, Fails, Ok, Rows};
use super::{blocks, step, Level, Step};

const SETUP: &str = "create table test (id int primary key, value int);
                     insert into test (id, value) values (1, 10), (2, 20);";

/// 40001 where the level aborts, else `otherwise`.
fn fails_above_rc(level: Level, otherwise: super::Expect) -> super::Expect {
    level.pick(otherwise, Fails("40001"), Fails("40001"))
}

/// 25P02 (transaction already failed) where the level aborted it.
fn after_abort(level: Level, otherwise: super::Expect) -> super::Expect {
    level.pick(otherwise, Fails("25P02"), Fails("25P02"))
}

/// Write cycles (G0): the second writer of a row waits for the first.
fn g0(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "update test set value = 11 where id = 1", Affected(1)),
        step(
            2,
            "update test set value = 12 where id = 1",
            blocks(fails_above_rc(l, Affected(1))),
        ),
        step(1, "update test set value = 21 where id = 2", Affected(1)),
        step(1, "commit", Ok).releases(2),
        step(1, "select * from test", Rows("1,11 2,21")),
        step(
            2,
            "update test set value = 22 where id = 2",
            after_abort(l, Affected(1)),
        ),
        step(2, "commit", Ok),
        step(
            0,
            "select * from test",
            l.pick(Rows("1,12 2,22"), Rows("1,11 2,21"), Rows("1,11 2,21")),
        ),
    ]
}

/// Aborted reads (G1a).
fn g1a(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "update test set value = 101 where id = 1", Affected(1)),
        step(2, "select * from test", Rows("1,10 2,20")),
        step(1, "abort", Ok),
        step(2, "select * from test", Rows("1,10 2,20")),
        step(2, "commit", Ok),
    ]
}

/// Intermediate reads (G1b).
fn g1b(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "update test set value = 101 where id = 1", Affected(1)),
        step(2, "select * from test", Rows("1,10 2,20")),
        step(1, "update test set value = 11 where id = 1", Affected(1)),
        step(1, "commit", Ok),
        step(
            2,
            "select * from test",
            l.pick(Rows("1,11 2,20"), Rows("1,10 2,20"), Rows("1,10 2,20")),
        ),
        step(2, "commit", Ok),
    ]
}

/// Circular information flow (G1c). At SERIALIZABLE each read the other
/// overwrote: the second commit fails.
fn g1c(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "update test set value = 11 where id = 1", Affected(1)),
        step(2, "update test set value = 22 where id = 2", Affected(1)),
        step(1, "select * from test where id = 2", Rows("2,20")),
        step(2, "select * from test where id = 1", Rows("1,10")),
        step(1, "commit", Ok),
        step(2, "commit", l.pick(Ok, Ok, Fails("40001"))),
        step(
            0,
            "select * from test",
            l.pick(Rows("1,11 2,22"), Rows("1,11 2,22"), Rows("1,11 2,20")),
        ),
    ]
}

/// Observed transaction vanishes (OTV).
fn otv(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(3, l.begin(), Ok),
        step(1, "update test set value = 11 where id = 1", Affected(1)),
        step(1, "update test set value = 19 where id = 2", Affected(1)),
        step(
            2,
            "update test set value = 12 where id = 1",
            blocks(fails_above_rc(l, Affected(1))),
        ),
        step(1, "commit", Ok).releases(2),
        step(3, "select * from test where id = 1", Rows("1,11")),
        step(
            2,
            "update test set value = 18 where id = 2",
            after_abort(l, Affected(1)),
        ),
        step(3, "select * from test where id = 2", Rows("2,19")),
        step(2, "commit", Ok),
        step(
            3,
            "select * from test where id = 2",
            l.pick(Rows("2,18"), Rows("2,19"), Rows("2,19")),
        ),
        step(
            3,
            "select * from test where id = 1",
            l.pick(Rows("1,12"), Rows("1,11"), Rows("1,11")),
        ),
        step(3, "commit", Ok),
    ]
}

/// Predicate-many-preceders (PMP) with read predicates.
fn pmp(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where value = 30", Rows("")),
        step(
            2,
            "insert into test (id, value) values (3, 30)",
            Affected(1),
        ),
        step(2, "commit", Ok),
        step(
            1,
            "select * from test where value % 3 = 0",
            l.pick(Rows("3,30"), Rows(""), Rows("")),
        ),
        step(1, "commit", Ok),
    ]
}

/// PMP with a write predicate (the example of PostgreSQL's documentation):
/// READ COMMITTED re-evaluates the DELETE's predicate on the new version.
fn pmp_write(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "update test set value = value + 10", Affected(2)),
        step(
            2,
            "delete from test where value = 20",
            blocks(fails_above_rc(l, Affected(0))),
        ),
        step(1, "commit", Ok).releases(2),
        step(
            2,
            "select * from test where value = 20",
            after_abort(l, Rows("1,20")),
        ),
        step(2, "commit", Ok),
        step(0, "select * from test", Rows("1,20 2,30")),
    ]
}

/// Lost update (P4).
fn p4(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where id = 1", Rows("1,10")),
        step(2, "select * from test where id = 1", Rows("1,10")),
        step(1, "update test set value = 11 where id = 1", Affected(1)),
        step(
            2,
            "update test set value = 11 where id = 1",
            blocks(fails_above_rc(l, Affected(1))),
        ),
        step(1, "commit", Ok).releases(2),
        step(2, "commit", Ok),
        step(0, "select * from test", Rows("1,11 2,20")),
    ]
}

/// Read skew (G-single).
fn g_single(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where id = 1", Rows("1,10")),
        step(2, "select * from test where id = 1", Rows("1,10")),
        step(2, "select * from test where id = 2", Rows("2,20")),
        step(2, "update test set value = 12 where id = 1", Affected(1)),
        step(2, "update test set value = 18 where id = 2", Affected(1)),
        step(2, "commit", Ok),
        step(
            1,
            "select * from test where id = 2",
            l.pick(Rows("2,18"), Rows("2,20"), Rows("2,20")),
        ),
        step(1, "commit", Ok),
    ]
}

/// Read skew through predicate dependencies.
fn g_single_dependencies(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(
            1,
            "select * from test where value % 5 = 0",
            Rows("1,10 2,20"),
        ),
        step(
            2,
            "update test set value = 12 where value = 10",
            Affected(1),
        ),
        step(2, "commit", Ok),
        step(
            1,
            "select * from test where value % 3 = 0",
            l.pick(Rows("1,12"), Rows(""), Rows("")),
        ),
        step(1, "commit", Ok),
    ]
}

/// Read skew on a write predicate, the writer committed first.
fn g_single_write_1(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where id = 1", Rows("1,10")),
        step(2, "select * from test", Rows("1,10 2,20")),
        step(2, "update test set value = 12 where id = 1", Affected(1)),
        step(2, "update test set value = 18 where id = 2", Affected(1)),
        step(2, "commit", Ok),
        step(
            1,
            "delete from test where value = 20",
            fails_above_rc(l, Affected(0)),
        ),
        step(
            1,
            "select * from test where id = 2",
            after_abort(l, Rows("2,18")),
        ),
        step(1, "commit", Ok),
        step(0, "select * from test", Rows("1,12 2,18")),
    ]
}

/// Read skew on a write predicate, the deleter rolls back while the
/// writer waits for it.
fn g_single_write_2(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where id = 1", Rows("1,10")),
        step(2, "select * from test", Rows("1,10 2,20")),
        step(2, "update test set value = 12 where id = 1", Affected(1)),
        step(1, "delete from test where value = 20", Affected(1)),
        step(
            2,
            "update test set value = 18 where id = 2",
            blocks(Affected(1)),
        ),
        step(1, "rollback", Ok).releases(2),
        step(2, "commit", Ok),
        step(0, "select * from test", Rows("1,12 2,18")),
    ]
}

/// Write skew (G2-item).
fn g2_item(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where id in (1,2)", Rows("1,10 2,20")),
        step(2, "select * from test where id in (1,2)", Rows("1,10 2,20")),
        step(1, "update test set value = 11 where id = 1", Affected(1)),
        step(2, "update test set value = 21 where id = 2", Affected(1)),
        step(1, "commit", Ok),
        step(2, "commit", l.pick(Ok, Ok, Fails("40001"))),
        step(
            0,
            "select * from test",
            l.pick(Rows("1,11 2,21"), Rows("1,11 2,21"), Rows("1,11 2,20")),
        ),
    ]
}

/// Anti-dependency cycles (G2) through predicates.
fn g2(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, "select * from test where value % 3 = 0", Rows("")),
        step(2, "select * from test where value % 3 = 0", Rows("")),
        step(
            1,
            "insert into test (id, value) values (3, 30)",
            Affected(1),
        ),
        step(
            2,
            "insert into test (id, value) values (4, 42)",
            Affected(1),
        ),
        step(1, "commit", Ok),
        step(2, "commit", l.pick(Ok, Ok, Fails("40001"))),
        step(
            0,
            "select * from test where value % 3 = 0",
            l.pick(Rows("3,30 4,42"), Rows("3,30 4,42"), Rows("3,30")),
        ),
    ]
}

/// G2 with two anti-dependency edges (Fekete et al.): T1 reads, T2 writes
/// and commits, T3 reads T2's write and commits, then T1 writes.
fn g2_two_edges(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(1, "select * from test", Rows("1,10 2,20")),
        step(2, l.begin(), Ok),
        step(
            2,
            "update test set value = value + 5 where id = 2",
            Affected(1),
        ),
        step(2, "commit", Ok),
        step(3, l.begin(), Ok),
        step(3, "select * from test", Rows("1,10 2,25")),
        step(3, "commit", Ok),
        step(
            1,
            "update test set value = 0 where id = 1",
            l.pick(Affected(1), Affected(1), Fails("40001")),
        ),
        step(1, "commit", Ok),
        step(
            0,
            "select * from test",
            l.pick(Rows("1,0 2,25"), Rows("1,0 2,25"), Rows("1,10 2,25")),
        ),
    ]
}

at_every_level!(
    g0,
    g1a,
    g1b,
    g1c,
    otv,
    pmp,
    pmp_write,
    p4,
    g_single,
    g_single_dependencies,
    g_single_write_1,
    g_single_write_2,
    g2_item,
    g2,
    g2_two_edges,
);
