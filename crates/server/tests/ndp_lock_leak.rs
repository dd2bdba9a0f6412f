//! Update NDP inside transactions that also lock rows on the host: a
//! TPC-C-like mix run through the extended protocol (prepared statements)
//! with `SET ndp = on`, device UPDATEs and DELETEs beside host INSERTs,
//! key UPDATEs and DELETEs, SELECT … FOR UPDATE, explicit rollbacks,
//! rollbacks after a unique violation and savepoints rolled back over a
//! device update.
//!
//! A device job must never wait for the tuple locks its own transaction
//! took on the host (they are in the SLT as host-shared entries): one
//! client alone must never see 40P01 or 55P03, and the rows must be what
//! a model of the committed transactions says. The original symptom was
//! TPC-C's Delivery failing with 40P01 after `deadlock_timeout` (1 s),
//! and again on every retry: its host locks (NEW-ORDER, ORDERS) shared an
//! SLT bucket with an ORDER-LINE tuple its device UPDATE locked.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio_postgres::{Client, NoTls, Statement};

mod common;
use common::{conninfo, start};

/// Warehouse, district, order, line.
type LineKey = (i32, i32, i32, i32);

#[derive(Clone, Debug, Default, PartialEq)]
struct Model {
    /// (w, d, o) → carrier (0: not delivered).
    orders: BTreeMap<(i32, i32, i32), i32>,
    new_orders: std::collections::BTreeSet<(i32, i32, i32)>,
    /// Line → (amount, delivery date).
    lines: BTreeMap<LineKey, (i64, i64)>,
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

const SCHEMA: &str = "
    CREATE TABLE orders (o_w_id INT, o_d_id INT, o_id INT, o_carrier_id INT NOT NULL,
        PRIMARY KEY (o_w_id, o_d_id, o_id));
    CREATE TABLE new_order (no_w_id INT, no_d_id INT, no_o_id INT,
        PRIMARY KEY (no_w_id, no_d_id, no_o_id));
    CREATE TABLE order_line (ol_w_id INT, ol_d_id INT, ol_o_id INT, ol_number INT,
        ol_supply_w_id INT NOT NULL, ol_amount BIGINT NOT NULL, ol_delivery_d BIGINT NOT NULL,
        PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
";

/// The statements, prepared once per connection.
struct Stmts {
    insert_order: Statement,
    insert_new_order: Statement,
    insert_line: Statement,
    oldest_new_order: Statement,
    delete_new_order: Statement,
    update_carrier: Statement,
    /// Device: `ol_w_id` left out of the key (the warehouse is matched
    /// through a non-key column), so the planner offloads it.
    deliver_lines: Statement,
    line_amounts: Statement,
    lock_line: Statement,
    /// Device: by a non-key column.
    delete_line_by_amount: Statement,
}

async fn prepare(c: &Client) -> Stmts {
    Stmts {
        insert_order: c
            .prepare("INSERT INTO orders VALUES ($1, $2, $3, 0)")
            .await
            .unwrap(),
        insert_new_order: c
            .prepare("INSERT INTO new_order VALUES ($1, $2, $3)")
            .await
            .unwrap(),
        insert_line: c
            .prepare("INSERT INTO order_line VALUES ($1, $2, $3, $4, $1, $5, 0)")
            .await
            .unwrap(),
        oldest_new_order: c
            .prepare(
                "SELECT no_o_id FROM new_order WHERE no_d_id = $1 AND no_w_id = $2 \
                 ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE",
            )
            .await
            .unwrap(),
        delete_new_order: c
            .prepare("DELETE FROM new_order WHERE no_o_id = $1 AND no_d_id = $2 AND no_w_id = $3")
            .await
            .unwrap(),
        update_carrier: c
            .prepare(
                "UPDATE orders SET o_carrier_id = $1 WHERE o_id = $2 AND o_d_id = $3 AND o_w_id = $4",
            )
            .await
            .unwrap(),
        deliver_lines: c
            .prepare(
                "UPDATE order_line SET ol_delivery_d = $1 \
                 WHERE ol_o_id = $2 AND ol_d_id = $3 AND ol_supply_w_id = $4",
            )
            .await
            .unwrap(),
        line_amounts: c
            .prepare(
                "SELECT ol_amount FROM order_line \
                 WHERE ol_o_id = $1 AND ol_d_id = $2 AND ol_w_id = $3",
            )
            .await
            .unwrap(),
        lock_line: c
            .prepare(
                "SELECT ol_amount FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 \
                 AND ol_o_id = $3 AND ol_number = $4 FOR UPDATE",
            )
            .await
            .unwrap(),
        delete_line_by_amount: c
            .prepare("DELETE FROM order_line WHERE ol_amount = $1 AND ol_supply_w_id = $2")
            .await
            .unwrap(),
    }
}

/// Fails the test on a deadlock or lock timeout (nothing else runs on
/// the client's rows); other errors go back to the caller.
fn check(what: &str, r: Result<u64, tokio_postgres::Error>) -> Result<u64, String> {
    r.map_err(|e| {
        let code = e.code().map(|c| c.code().to_string()).unwrap_or_default();
        assert!(
            code != "40P01" && code != "55P03",
            "{what}: {code} {e:?} — a transaction waited for its own locks or for a lock left behind"
        );
        code
    })
}

async fn explain(c: &Client, sql: &str) -> String {
    c.simple_query(&format!("EXPLAIN {sql}"))
        .await
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const DISTRICTS: i32 = 3;
const LINES: i32 = 5;

/// One client's work on warehouse `w`: `txns` transactions. Returns the
/// model of what it committed.
async fn run_client(port: u16, w: i32, seed: u64, txns: usize) -> Model {
    let (c, conn) = tokio_postgres::connect(&conninfo(port), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    c.batch_execute("SET ndp = on").await.unwrap();
    for sql in [
        "UPDATE order_line SET ol_delivery_d = 1 WHERE ol_o_id = 1 AND ol_d_id = 1 AND ol_supply_w_id = 1",
        "DELETE FROM order_line WHERE ol_amount = 1 AND ol_supply_w_id = 1",
    ] {
        let plan = explain(&c, sql).await;
        assert!(plan.contains("[device]"), "{sql}: {plan}");
    }
    let s = prepare(&c).await;
    let mut rng = Rng(seed);
    let mut model = Model::default();
    let mut next_o = [1i32; DISTRICTS as usize + 1];
    for i in 0..txns {
        let date = (w as i64) * 1_000_000 + i as i64 + 1;
        let d = 1 + rng.below(DISTRICTS as u64) as i32;
        let mut m = model.clone();
        c.batch_execute("BEGIN").await.unwrap();
        // New-Order (host rows) every other transaction, so that there
        // is something to deliver.
        if i % 2 == 0 {
            let o = next_o[d as usize];
            check(
                "insert order",
                c.execute(&s.insert_order, &[&w, &d, &o]).await,
            )
            .unwrap();
            check(
                "insert new order",
                c.execute(&s.insert_new_order, &[&w, &d, &o]).await,
            )
            .unwrap();
            m.orders.insert((w, d, o), 0);
            m.new_orders.insert((w, d, o));
            for n in 1..=LINES {
                let amount = (w as i64) * 1_000_000_000
                    + (d as i64) * 1_000_000
                    + (o as i64) * 100
                    + n as i64;
                check(
                    "insert line",
                    c.execute(&s.insert_line, &[&w, &d, &o, &n, &amount]).await,
                )
                .unwrap();
                m.lines.insert((w, d, o, n), (amount, 0));
            }
            c.batch_execute("COMMIT").await.unwrap();
            next_o[d as usize] += 1;
            model = m;
            continue;
        }
        // Delivery of district d's oldest order (host locks on NEW-ORDER
        // and ORDERS, then the device UPDATE of its lines).
        let rows = c.query(&s.oldest_new_order, &[&d, &w]).await;
        let rows = rows.unwrap_or_else(|e| panic!("oldest new order: {e:?}"));
        let Some(row) = rows.first() else {
            c.batch_execute("COMMIT").await.unwrap();
            continue;
        };
        let o: i32 = row.get(0);
        let n = check(
            "delete new order",
            c.execute(&s.delete_new_order, &[&o, &d, &w]).await,
        )
        .unwrap();
        assert_eq!(n, 1);
        m.new_orders.remove(&(w, d, o));
        let carrier = 1 + rng.below(10) as i32;
        let n = check(
            "update carrier",
            c.execute(&s.update_carrier, &[&carrier, &o, &d, &w]).await,
        )
        .unwrap();
        assert_eq!(n, 1);
        m.orders.insert((w, d, o), carrier);
        let variant = rng.below(6);
        if variant == 0 {
            // A line locked on the host first: the device job then
            // updates that very tuple (same SLT bucket for sure).
            let n: i32 = 1 + rng.below(LINES as u64) as i32;
            let r = c.query(&s.lock_line, &[&w, &d, &o, &n]).await;
            r.unwrap_or_else(|e| panic!("lock line: {e:?}"));
        }
        let savepoint = variant == 1;
        if savepoint {
            // A device update rolled back to a savepoint, then redone.
            c.batch_execute("SAVEPOINT s").await.unwrap();
            let bogus = -date;
            let n = check(
                "deliver lines (rolled back)",
                c.execute(&s.deliver_lines, &[&bogus, &o, &d, &w]).await,
            )
            .unwrap();
            assert_eq!(n, LINES as u64);
            c.batch_execute("ROLLBACK TO SAVEPOINT s").await.unwrap();
        }
        let n = check(
            "deliver lines",
            c.execute(&s.deliver_lines, &[&date, &o, &d, &w]).await,
        )
        .unwrap();
        let expected_lines: Vec<LineKey> = m
            .lines
            .keys()
            .filter(|k| k.0 == w && k.1 == d && k.2 == o)
            .copied()
            .collect();
        assert_eq!(n, expected_lines.len() as u64, "lines of order {w}/{d}/{o}");
        for k in &expected_lines {
            if let Some(v) = m.lines.get_mut(k) {
                v.1 = date;
            }
        }
        let amounts = c.query(&s.line_amounts, &[&o, &d, &w]).await.unwrap();
        let total: i64 = amounts.iter().map(|r| r.get::<_, i64>(0)).sum();
        let want: i64 = expected_lines.iter().map(|k| m.lines[k].0).sum();
        assert_eq!(total, want, "total of order {w}/{d}/{o}");
        match variant {
            2 => {
                // A device DELETE of one line by a non-key column.
                if let Some(k) = expected_lines.first() {
                    let amount = m.lines[k].0;
                    let n = check(
                        "delete line",
                        c.execute(&s.delete_line_by_amount, &[&amount, &w]).await,
                    );
                    // A table this transaction changed on the device
                    // already runs on the host: either way one row.
                    assert_eq!(n.unwrap(), 1);
                    m.lines.remove(k);
                }
                c.batch_execute("COMMIT").await.unwrap();
                model = m;
            }
            3 => {
                c.batch_execute("ROLLBACK").await.unwrap();
            }
            4 => {
                // A unique violation fails the transaction: rolled back.
                let e = check(
                    "duplicate order",
                    c.execute(&s.insert_order, &[&w, &d, &o]).await,
                )
                .unwrap_err();
                assert_eq!(e, "23505");
                c.batch_execute("ROLLBACK").await.unwrap();
            }
            _ => {
                c.batch_execute("COMMIT").await.unwrap();
                model = m;
            }
        }
    }
    model
}

/// Every lock of warehouse `w` is gone: one transaction locks every row
/// of it on the host and on the device within a second. Run after every
/// client finished: the device job locks hundreds of tuples, and the SLT
/// is hashed (update NDP §5.1), so two such jobs at once may share
/// buckets — a false conflict, possibly in a cycle, not a lock left
/// behind.
async fn lock_everything(port: u16, w: i32) {
    let (c, conn) = tokio_postgres::connect(&conninfo(port), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    c.batch_execute("SET ndp = on; SET lock_timeout = '1s'; BEGIN")
        .await
        .unwrap();
    let plan = explain(
        &c,
        "UPDATE order_line SET ol_delivery_d = ol_delivery_d WHERE ol_supply_w_id = 1",
    )
    .await;
    assert!(plan.contains("[device]"), "{plan}");
    check(
        "lock every line on the device",
        c.execute(
            "UPDATE order_line SET ol_delivery_d = ol_delivery_d WHERE ol_supply_w_id = $1",
            &[&w],
        )
        .await,
    )
    .unwrap();
    c.batch_execute("SET ndp = off").await.unwrap();
    for sql in [
        "UPDATE orders SET o_carrier_id = o_carrier_id WHERE o_w_id = $1",
        "DELETE FROM new_order WHERE no_w_id = $1",
    ] {
        check(sql, c.execute(sql, &[&w]).await).unwrap();
    }
    c.batch_execute("ROLLBACK").await.unwrap();
}

/// The rows of warehouse `w` as the model has them.
async fn read_back(port: u16, w: i32) -> Model {
    let (c, conn) = tokio_postgres::connect(&conninfo(port), NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let mut m = Model::default();
    for r in c
        .query(
            "SELECT o_w_id, o_d_id, o_id, o_carrier_id FROM orders WHERE o_w_id = $1",
            &[&w],
        )
        .await
        .unwrap()
    {
        m.orders.insert((r.get(0), r.get(1), r.get(2)), r.get(3));
    }
    for r in c
        .query(
            "SELECT no_w_id, no_d_id, no_o_id FROM new_order WHERE no_w_id = $1",
            &[&w],
        )
        .await
        .unwrap()
    {
        m.new_orders.insert((r.get(0), r.get(1), r.get(2)));
    }
    for r in c
        .query(
            "SELECT ol_w_id, ol_d_id, ol_o_id, ol_number, ol_amount, ol_delivery_d \
             FROM order_line WHERE ol_w_id = $1",
            &[&w],
        )
        .await
        .unwrap()
    {
        m.lines.insert(
            (r.get(0), r.get(1), r.get(2), r.get(3)),
            (r.get(4), r.get(5)),
        );
    }
    m
}

fn run(config: ndpdb_host::Config, clients: i32, txns: usize) {
    let dir = tempfile::tempdir().unwrap();
    let db = ndpdb_embedded::open_with(dir.path(), config).unwrap();
    let port = start(db);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let (c, conn) = tokio_postgres::connect(&conninfo(port), NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.batch_execute(SCHEMA).await.unwrap();
        let work = tokio::time::timeout(Duration::from_secs(300), async {
            let handles: Vec<_> = (1..=clients)
                .map(|w| tokio::spawn(run_client(port, w, 0x9e37_79b9_7f4a_7c15 ^ w as u64, txns)))
                .collect();
            let mut models = Vec::new();
            for h in handles {
                models.push(h.await.unwrap());
            }
            models
        })
        .await
        .expect("the clients finish");
        for (i, model) in work.into_iter().enumerate() {
            let w = i as i32 + 1;
            lock_everything(port, w).await;
            assert!(!model.lines.is_empty());
            assert_eq!(read_back(port, w).await, model, "warehouse {w}");
        }
    });
}

fn config() -> ndpdb_host::Config {
    ndpdb_host::Config {
        autovacuum: false,
        ..ndpdb_host::Config::default()
    }
}

/// One client, the default SLT: locking a line on the host and then
/// updating it on the device is the same bucket for sure.
#[test]
fn one_client_never_deadlocks_with_its_own_locks() {
    run(config(), 1, 240);
}

/// One client with a small SLT: most of its host locks share buckets with
/// the tuples its device jobs lock (false conflicts with itself).
#[test]
fn one_client_never_deadlocks_with_its_own_locks_in_a_crowded_slt() {
    run(
        ndpdb_host::Config {
            slt_buckets: 8,
            ..config()
        },
        1,
        160,
    );
}

/// Two clients on disjoint warehouses, the default SLT.
#[test]
fn two_clients_on_disjoint_rows_never_deadlock() {
    run(config(), 2, 200);
}
