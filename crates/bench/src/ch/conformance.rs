//! The fixed part of `ndpdb bench diff`: CH-benCHmark's 22 queries and the
//! catalog queries JDBC tools send, on the same small CH-benCHmark database
//! in ndpdb and in PostgreSQL, answer against answer.
//!
//! ```text
//!  both   TPC-C scaled down (2 warehouses, 1,000 items, 30 customers per
//!         district) + REGION/NATION/SUPPLIER, one load time
//!         + fixed UPDATEs so that every query has rows to return
//!  then   Q1 … Q22 (ndpdb at the chosen placement), the catalog queries
//! ```

use ndpdb_host::Result;

use super::answers::{self, Verdict};
use super::olap::{self, PowerQuery};
use super::{extra_tables, load_config, ChConfig, NdpMode};
use crate::isolation::Level;
use crate::target::Backend;
use crate::tpcc::{self, RunConfig, Scale};

/// Catalog queries of the kind pgJDBC's `DatabaseMetaData` and BenchBase
/// send (names, types, keys, indexes of the user's tables), with a total
/// ORDER BY.
pub const CATALOG_QUERIES: [(&str, &str); 8] = [
    (
        "current_schema",
        "SELECT current_schema(), current_setting('search_path')",
    ),
    (
        "information_schema.tables",
        "SELECT table_name, table_type FROM information_schema.tables \
         WHERE table_schema = 'public' ORDER BY 1",
    ),
    (
        "information_schema.columns",
        "SELECT table_name, column_name, ordinal_position, data_type, is_nullable, \
         character_maximum_length, numeric_precision, numeric_scale, datetime_precision \
         FROM information_schema.columns WHERE table_schema = 'public' ORDER BY 1, 3",
    ),
    (
        "primary keys",
        "SELECT tc.table_name, tc.constraint_name, tc.constraint_type, k.column_name, \
         k.ordinal_position FROM information_schema.table_constraints tc \
         JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name \
         AND k.table_name = tc.table_name WHERE tc.table_schema = 'public' \
         AND tc.constraint_type = 'PRIMARY KEY' ORDER BY 1, 5",
    ),
    (
        "pg_class",
        "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n \
         ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1",
    ),
    (
        "pg_attribute",
        "SELECT c.relname, a.attname, a.attnum, t.typname, a.attnotnull \
         FROM pg_attribute a JOIN pg_class c ON a.attrelid = c.oid \
         JOIN pg_type t ON t.oid = a.atttypid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 ORDER BY 1, 3",
    ),
    (
        "pg_indexes",
        "SELECT tablename, indexname, indexdef FROM pg_indexes \
         WHERE schemaname = 'public' ORDER BY 1, 2",
    ),
    (
        "pg_index",
        "SELECT i.relname, x.indisunique, x.indisprimary, x.indnatts FROM pg_index x \
         JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid \
         JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = 'public' ORDER BY 1",
    ),
];

/// Changes after the load, the same on both sides, so that Q11 (stock
/// ordered) and Q22 (customers with a positive balance) return rows.
const SHAKE: [&str; 2] = [
    "UPDATE customer SET c_balance = c_balance + (c_id % 7) * 13.5 - 20.25 WHERE c_id % 3 <> 0",
    "UPDATE stock SET s_order_cnt = (s_i_id * s_w_id) % 9",
];

/// One compared query.
pub struct Check {
    pub name: String,
    pub sql: String,
    pub verdict: Verdict,
}

fn small() -> ChConfig {
    ChConfig {
        tpcc: RunConfig {
            warehouses: 2,
            clients: 1,
            duration: std::time::Duration::ZERO,
            transactions: None,
            isolation: Level::ReadCommitted,
            seed: 11,
            scale: Scale::scaled_down(100),
            load_threads: 1,
        },
        olap_clients: 0,
        duration: std::time::Duration::ZERO,
        alone: std::time::Duration::ZERO,
        phases: false,
        modes: vec![NdpMode::Auto],
        power_repeat: 1,
        olap_priority: crate::priority::Priority::Normal,
        olap_threads: None,
        olap_cpus: Vec::new(),
    }
}

fn prepare(backend: &Backend, cfg: &ChConfig, now: i64) -> Result<()> {
    tpcc::load::load(backend, &load_config(cfg, now))?;
    let mut conn = backend.connect()?;
    extra_tables::load(&mut conn, backend.is_postgres())?;
    for sql in SHAKE {
        conn.batch(sql)?;
    }
    if backend.is_postgres() {
        conn.batch("ANALYZE")?;
    }
    Ok(())
}

fn catalog_answers(backend: &Backend) -> Result<Vec<PowerQuery>> {
    let mut conn = backend.connect()?;
    Ok(CATALOG_QUERIES
        .iter()
        .map(|&(name, sql)| PowerQuery {
            name,
            time: std::time::Duration::ZERO,
            answer: conn
                .query_rows(sql)
                .map_err(|e| format!("{} {}", e.code, e.message)),
        })
        .collect())
}

/// Loads both sides and compares every query's answer.
pub fn compare(ndpdb: &Backend, postgres: &Backend, mode: NdpMode) -> Result<Vec<Check>> {
    let cfg = small();
    let now = tpcc::db::now_micros();
    prepare(ndpdb, &cfg, now)?;
    prepare(postgres, &cfg, now)?;
    let level = cfg.tpcc.isolation;
    let ours = olap::power(ndpdb, mode, level, 1, &mut |_| {})?;
    let theirs = olap::power(postgres, mode, level, 1, &mut |_| {})?;
    let mut checks: Vec<Check> = olap::queries(0)
        .into_iter()
        .zip(answers::compare(&ours, Some(&theirs)))
        .map(|(q, verdict)| Check {
            name: format!("CH-benCHmark {}", q.name),
            sql: q.sql,
            verdict,
        })
        .collect();
    let ours = catalog_answers(ndpdb)?;
    let theirs = catalog_answers(postgres)?;
    checks.extend(
        CATALOG_QUERIES
            .iter()
            .zip(answers::compare(&ours, Some(&theirs)))
            .map(|(&(name, sql), verdict)| Check {
                name: format!("catalog {name}"),
                sql: sql.to_string(),
                verdict,
            }),
    );
    Ok(checks)
}
