//! CH-benCHmark ORDER-LINE and the papers' read-NDP queries (DANSEN §4;
//! update-aware NDP §5): Query-SUM (CH Q6: revenue over a delivery-date
//! range and a quantity range) with NDP off and on under each link
//! preset, Query-UDF (SPN inference per row, `spn_score`, over the rows
//! of half the districts), the preloader under each NVM latency profile,
//! a selectivity sweep and a projectivity sweep.
//!
//! Every measured query runs on a freshly reopened database, so the host
//! buffer pool starts cold for both sides (the OS page cache, which backs
//! the device's store, stays warm for both). The queries run at READ
//! COMMITTED on every target ([`ISOLATION`]); the embedded load commits
//! `Isolation::Snapshot` (REPEATABLE READ) transactions.
//!
//! One file per purpose:
//! - `order_line.rs`: the table, its generated rows, loading, the queries.
//! - `measure.rs`: one measured query ([`Measurement`]), embedded or wire.
//! - `experiments.rs`: the presets, links, fan-out and sweep experiments.
//! - `baselines.rs`: the wire server, PostgreSQL and memory-rate figures
//!   set beside ndpdb's, and the headline ratios.
//! - `plots.rs`: the charts; `options.rs`: what a run is asked to do;
//!   `run.rs`: the run from load to CSV.

mod baselines;
mod experiments;
mod measure;
mod options;
mod order_line;
mod plots;
mod run;

pub use measure::{
    isolation_line, measure, measure_wire, measure_with, Measurement, ISOLATION, RUNS,
};
pub use options::ChOptions;
pub use order_line::{
    create_table_sql, date_cutoff, load, load_wire, order_line_schema, query_udf, OrderLines,
    QUERY_SUM, TABLE,
};
pub use run::run;
