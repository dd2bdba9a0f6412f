//! Bank transfers at SERIALIZABLE beside update NDP: 4 clients move money
//! between random accounts (read both balances, update both) while an
//! auditor runs `SET ndp = on` before each audit, reads the total on the
//! storage device and pays interest with device-side UPDATEs, all at
//! SERIALIZABLE with retries. Transfers keep the total; the auditor knows what its committed
//! interest added, so every total it reads must be exactly the expected
//! one, and so must the total at the end.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio_postgres::Client;

use super::{is_retryable, run, Level, Target};

const ACCOUNTS: i64 = 1_000;
const INITIAL: i64 = 1_000;
const CLIENTS: usize = 4;
const TRANSFERS: usize = 2_000;
/// Audits the auditor runs at least (and on until the transfers are done).
const AUDITS: usize = 20;

const SER: Level = Level::Serializable;

/// Moves `amount` from account `a` to account `b`.
async fn transfer(c: &Client, a: i64, b: i64, amount: i64) -> Result<(), String> {
    let sql = format!(
        "{}; select id, balance from accounts where id in ({a}, {b})",
        SER.begin()
    );
    let rows = run(c, &sql).await?.rows;
    assert_eq!(rows.len(), 2, "accounts {a} and {b}: {rows:?}");
    // Lower id first, so two transfers never wait for each other in a cycle.
    let (first, second) = if a < b {
        (
            format!("- {amount} where id = {a}"),
            format!("+ {amount} where id = {b}"),
        )
    } else {
        (
            format!("+ {amount} where id = {b}"),
            format!("- {amount} where id = {a}"),
        )
    };
    let sql = format!(
        "update accounts set balance = balance {first}; \
         update accounts set balance = balance {second}; commit"
    );
    run(c, &sql).await.map(|_| ())
}

async fn transfers(c: Client, seed: u64, tickets: Arc<AtomicUsize>, retries: Arc<AtomicUsize>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    while tickets.fetch_add(1, Ordering::Relaxed) < TRANSFERS {
        let a = rng.gen_range(1..=ACCOUNTS);
        let b = (a + rng.gen_range(1..ACCOUNTS) - 1) % ACCOUNTS + 1;
        let amount = rng.gen_range(1..=100);
        while let Err(code) = transfer(&c, a, b, amount).await {
            assert!(is_retryable(&code), "transfer: unexpected SQLSTATE {code}");
            run(&c, "rollback").await.expect("rollback");
            retries.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn total(c: &Client) -> Result<i64, String> {
    let rows = run(c, "select sum(balance) from accounts").await?.rows;
    Ok(rows[0].parse().expect("a whole sum"))
}

/// One audit: the total at a SERIALIZABLE snapshot must be `expected`; then
/// interest of 1 for every account (`all`) or for every 50th; returns what
/// the interest added.
async fn audit(
    c: &Client,
    ndp: bool,
    expected: i64,
    round: usize,
    all: bool,
) -> Result<i64, String> {
    if ndp {
        run(c, "set ndp = on").await?;
    }
    run(c, &SER.begin()).await?;
    let seen = total(c).await?;
    assert_eq!(seen, expected, "audit {round}: the total");
    let (filter, paid) = if all {
        (String::new(), ACCOUNTS)
    } else {
        (format!(" where id % 50 = {}", round % 50), ACCOUNTS / 50)
    };
    let r = run(
        c,
        &format!("update accounts set balance = balance + 1{filter}"),
    )
    .await?;
    assert_eq!(
        r.affected,
        Some(paid as u64),
        "audit {round}: accounts paid"
    );
    run(c, "commit").await?;
    Ok(paid)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bank_transfers_keep_the_total_beside_ndp_at_serializable() {
    let target = Target::new("bank").await;
    let admin = target.connect().await;
    admin
        .batch_execute("create table accounts (id int primary key, balance bigint not null)")
        .await
        .unwrap();
    let rows: Vec<String> = (1..=ACCOUNTS)
        .map(|i| format!("({i}, {INITIAL})"))
        .collect();
    for chunk in rows.chunks(250) {
        let sql = format!(
            "insert into accounts (id, balance) values {}",
            chunk.join(", ")
        );
        admin.batch_execute(&sql).await.unwrap();
    }
    admin.batch_execute("analyze accounts").await.unwrap();

    let tickets = Arc::new(AtomicUsize::new(0));
    let retries = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for i in 0..CLIENTS {
        let c = target.connect().await;
        workers.push(tokio::spawn(transfers(
            c,
            i as u64 + 1,
            tickets.clone(),
            retries.clone(),
        )));
    }
    let done = Arc::new(AtomicBool::new(false));
    let auditor = {
        let c = target.connect().await;
        let done = done.clone();
        let ndp = !target.is_postgres();
        tokio::spawn(async move {
            let mut expected = ACCOUNTS * INITIAL;
            let (mut paid, mut failed) = (0, 0);
            let mut round = 0;
            while round < AUDITS || !done.load(Ordering::Relaxed) {
                round += 1;
                match audit(&c, ndp, expected, round, round % 4 == 0).await {
                    Ok(added) => {
                        expected += added;
                        paid += 1;
                    }
                    Err(code) => {
                        assert!(
                            is_retryable(&code),
                            "audit {round}: unexpected SQLSTATE {code}"
                        );
                        run(&c, "rollback").await.expect("rollback");
                        failed += 1;
                        // Let the transfers move on before the next try.
                        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    }
                }
            }
            (c, ndp, expected, paid, failed)
        })
    };
    for w in workers {
        w.await.expect("transfers");
    }
    done.store(true, Ordering::Relaxed);
    let (c, ndp, mut expected, paid, failed) = auditor.await.expect("auditor");
    // Once more without contention: interest for every account on the device.
    expected += audit(&c, ndp, expected, 0, true)
        .await
        .expect("the last audit");
    assert_eq!(total(&c).await.unwrap(), expected, "the total with ndp on");
    assert_eq!(
        total(&admin).await.unwrap(),
        expected,
        "the total with ndp off"
    );
    let count = run(&admin, "select count(*) from accounts")
        .await
        .unwrap()
        .rows;
    assert_eq!(count, vec![ACCOUNTS.to_string()]);
    eprintln!(
        "bank: {TRANSFERS} transfers ({} retried), audits paid {paid}, failed {failed}",
        retries.load(Ordering::Relaxed)
    );
}
