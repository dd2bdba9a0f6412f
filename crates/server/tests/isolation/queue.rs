//! A queue read as TPC-C's Delivery reads NEW-ORDER: the oldest row of a
//! key prefix, `ORDER BY … LIMIT 1 FOR UPDATE`, then deleted. A second
//! taker waits for the first; at READ COMMITTED it then takes the next
//! row (the first is gone), at REPEATABLE READ and SERIALIZABLE it fails
//! with 40001 — as in PostgreSQL. ndpdb reads such a query in key order
//! and stops at the LIMIT (`sql/src/plan/ordered_read.rs`), so a row deleted
//! under the read must not end it empty-handed.

use super::Expect::{Affected, Fails, Ok, Rows};
use super::{blocks, step, Level, Step};

const SETUP: &str = "create table queue (w int, d int, o int, note text, primary key (w, d, o));
     insert into queue values (1, 1, 1, 'a'), (1, 1, 2, 'b'), (1, 1, 3, 'c'),
       (1, 2, 1, 'x'), (2, 1, 1, 'y');";

const TAKE: &str = "select o, note from queue where w = 1 and d = 1 order by o limit 1 for update";

fn two_takers(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(1, TAKE, Rows("1,a")),
        step(
            1,
            "delete from queue where w = 1 and d = 1 and o = 1",
            Affected(1),
        ),
        step(
            2,
            TAKE,
            blocks(l.pick(Rows("2,b"), Fails("40001"), Fails("40001"))),
        ),
        step(1, "commit", Ok).releases(2),
        step(2, "rollback", Ok),
        step(
            0,
            "select o from queue where w = 1 and d = 1 order by o",
            Rows("2 3"),
        ),
    ]
}

/// The newest row, read backwards; an update that keeps the row keeps it
/// first (READ COMMITTED sees the new version).
fn newest_updated(l: Level) -> Vec<Step> {
    vec![
        step(1, l.begin(), Ok),
        step(2, l.begin(), Ok),
        step(
            1,
            "update queue set note = 'cc' where w = 1 and d = 1 and o = 3",
            Affected(1),
        ),
        step(
            2,
            "select o, note from queue where w = 1 and d = 1 order by o desc limit 2 for update",
            blocks(l.pick(Rows("2,b 3,cc"), Fails("40001"), Fails("40001"))),
        ),
        step(1, "commit", Ok).releases(2),
        step(2, "rollback", Ok),
    ]
}

at_every_level!(two_takers, newest_updated);
