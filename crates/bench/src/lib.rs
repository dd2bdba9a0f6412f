//! Benchmark workloads and reporting (DESIGN.md §12).
//!
//! - [`chbench`]: CH-benCHmark ORDER-LINE, Query-SUM, selectivity and projectivity sweeps.
//! - [`churn`]: YCSB-A through rounds of full-table UPDATEs: store size, live data, throughput and GC.
//! - [`clients`]: YCSB client threads in the background of an experiment.
//! - [`diff`]: SQL conformance: generated queries on ndpdb and PostgreSQL, rows compared.
//! - [`hostile`]: YCSB-C over the wire beside clients sending malformed traffic.
//! - [`htap`]: YCSB-C with periodic analytic queries, host vs NDP.
//! - [`isolation`]: the isolation level of the benchmarks' sessions; retries of 40001/40P01.
//! - [`mixed`]: YCSB with an injected bulk UPDATE, host vs update NDP.
//! - [`pin`]: pinning host threads to CPUs.
//! - [`recovery`]: a full-table update, a crash, the time to recover (NDP logging modes, PostgreSQL).
//! - [`plot`]: PNG line and bar charts.
//! - [`target`]: embedded ndpdb, an ndpdb server or PostgreSQL as the target.
//! - [`lock_violation`]: host transactions at a fixed rate beside a bulk FOR UPDATE + UPDATE (lock violation).
//! - [`sltbench`]: shared-lock-table latency, host and device side.
//! - [`tpcc`]: TPC-C: schema, loader, the five transactions, consistency conditions 1–4.
//! - [`zipf`]: YCSB's scrambled Zipfian key chooser.
//! - [`ycsb`]: the YCSB table, loader and workloads A/B/C.
//! - [`report`]: latency histograms and the figures every run prints.

pub mod ch;
pub mod chbench;
pub mod churn;
pub mod clients;
pub mod diff;
pub mod hostile;
pub mod htap;
pub mod isolation;
pub mod lock_violation;
pub mod memory_rate;
pub mod mixed;
pub mod pin;
pub mod pipeline;
pub mod plot;
pub mod priority;
pub mod recovery;
pub mod report;
pub mod sltbench;
pub mod statements;
pub mod target;
pub mod tpcc;
pub mod ycsb;
pub mod zipf;
