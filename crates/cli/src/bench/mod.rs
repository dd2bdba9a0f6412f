//! `ndpdb bench …`: the [`Bench`] subcommands and their dispatch. Each
//! benchmark with more to do than a call has a file of its own in
//! `bench/` (its arguments and its `run`); hostile, statements and diff
//! run in `crate::targets`, which the others share too (the wire
//! targets, the summary files); the short ones — slt and hostile's
//! settings line — are answered here.

mod bulk_update;
mod ch;
mod chbench;
mod churn;
mod htap_read;
mod lock_violation;
mod mixed_update;
mod recovery;
mod tpcc;
mod ycsb;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

use ndpdb_bench::isolation::{self, Level};
use ndpdb_host::Result;

use crate::args::{cpus, default_out};

#[derive(Subcommand)]
pub enum Bench {
    /// YCSB on the embedded engine.
    Ycsb(ycsb::YcsbArgs),
    /// YCSB-C over the wire, alone and then beside connections sending
    /// malformed traffic (the wire fuzz target's client scripts); the
    /// well-formed clients must see no failed statement.
    Hostile(crate::targets::HostileRun),
    /// Statements of pathological shape (CASE nested 10,000 deep, 10 MB of
    /// additions, a 12 MB select list, a 10 MB IN list): the time each
    /// target takes to answer or refuse them, medians of alternating runs.
    Statements(crate::targets::StatementsRun),
    /// YCSB-A while rounds of full-table UPDATEs run: store size, live
    /// data and throughput over time (garbage collection at work).
    Churn(churn::ChurnArgs),
    /// A full-table UPDATE, a crash and the time to recover (update NDP
    /// Fig. 24): ndpdb under each NDP logging mode beside PostgreSQL.
    Recovery(recovery::RecoveryArgs),
    /// Single-row updates at a fixed rate beside a bulk SELECT FOR UPDATE
    /// and UPDATE (update NDP Fig. 25): basic logging, overflow log, and
    /// overflow log with lock violation, beside PostgreSQL.
    LockViolation(lock_violation::LockViolationArgs),
    /// Host-only full-table UPDATEs of tables of several sizes, sizes
    /// alternating: does the time grow linearly with the rows?
    BulkUpdate(bulk_update::BulkUpdateArgs),
    /// TPC-C: load, the standard mix for a fixed time, consistency
    /// conditions 1–4; targets side by side.
    Tpcc(tpcc::TpccArgs),
    /// CH-benCHmark: TPC-C with the 22 analytical queries beside it; a
    /// power run (answers compared with PostgreSQL's), OLTP throughput
    /// alone and beside the analytics; targets side by side.
    Ch(ch::ChArgs),
    /// YCSB-C on the host with an analytic query every few seconds, the
    /// query on the host and then on the device; throughput over time.
    HtapRead(htap_read::HtapReadArgs),
    /// YCSB on the host with one bulk UPDATE injected after a warm-up, run
    /// on the host and then on the device; plus a selectivity sweep.
    MixedUpdate(mixed_update::MixedUpdateArgs),
    /// SQL conformance: the same random tables in ndpdb (a server in this
    /// process) and PostgreSQL, generated queries on both, rows compared.
    Diff {
        /// Rows in t1 (t2 gets twice as many).
        #[arg(long, default_value_t = 2000)]
        rows: u64,
        #[arg(long, default_value_t = 500)]
        queries: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// PostgreSQL: postgres[=CONNSTRING] (default $NDPDB_POSTGRES); also
        /// ndpdb-server=HOST:PORT to test a running server instead.
        #[arg(long, default_value = "postgres")]
        target: Vec<String>,
        /// Placement of ndpdb's queries: off (host only), on (every query
        /// the device can run goes there) or auto (the cost model).
        #[arg(long, default_value = "auto", value_parser = ["off", "on", "auto"])]
        ndp: String,
        /// Meanwhile rewrite rows of both tables with unchanged values and
        /// collect the garbage (VACUUM, every other one FULL) on another
        /// connection: answers must not change while GC moves versions.
        #[arg(long)]
        gc: bool,
        /// Send each generated query as a prepared statement (SQL's
        /// PREPARE) and run it three times, every answer compared.
        #[arg(long)]
        prepared: bool,
    },
    /// Shared-lock-table latency: host and device side, uncontended and
    /// contended, against the host lock table alone and a mutex hash map;
    /// then the host side with the table in a device process's /dev/shm
    /// region and behind TCP (remote compare-and-swap), beside
    /// PostgreSQL's lock manager.
    Slt {
        /// Measured acquire+release pairs per configuration.
        #[arg(long, default_value_t = 200_000)]
        ops: u64,
        /// Measured pairs per configuration that crosses a socket.
        #[arg(long, default_value_t = 20_000)]
        remote_ops: u64,
        /// Where else the table lives: shm (a device process maps it with
        /// this one), tcp (a device process, reached by messages), rados
        /// (lock entries in a RADOS object, $CEPH_CONF).
        #[arg(long, value_delimiter = ',', default_value = "shm,tcp")]
        links: Vec<String>,
        /// PostgreSQL for the advisory-lock column: postgres[=CONNSTRING]
        /// (default $NDPDB_POSTGRES); none to skip.
        #[arg(long, default_value = "postgres")]
        target: String,
        /// Output folder (CSV, summary, plots); default a fresh one under bench-results/.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// CH-benCHmark Query-SUM with NDP off and on under each link preset,
    /// plus selectivity and projectivity sweeps.
    Chbench(chbench::ChbenchArgs),
}

pub fn bench(which: Bench) -> Result<ExitCode> {
    match which {
        Bench::MixedUpdate(args) => mixed_update::run(args),
        Bench::Slt {
            ops,
            remote_ops,
            links,
            target,
            out,
        } => {
            let out = out.unwrap_or_else(|| default_out("slt"));
            let header = format!(
                "slt: {ops} acquire+release pairs per configuration, {} buckets of 16 B, machine {} CPUs, 128-bit CAS lock-free: {}",
                1 << 16,
                cpus(),
                portable_atomic::AtomicU128::is_lock_free()
            );
            println!("{header}");
            let mut rows = ndpdb_bench::sltbench::run(ops, |r| {
                println!("{}", ndpdb_bench::sltbench::describe(r))
            })?;
            rows.extend(crate::slt_links::run(&links, remote_ops, &target)?);
            let out = ndpdb_bench::sltbench::write(&out, &rows, &header)?;
            println!("wrote {}", out.display());
            Ok(ExitCode::SUCCESS)
        }
        Bench::HtapRead(args) => htap_read::run(args),
        Bench::Chbench(args) => chbench::run(args),
        Bench::Churn(args) => churn::run(args),
        Bench::Recovery(args) => recovery::run(args),
        Bench::LockViolation(args) => lock_violation::run(args),
        Bench::BulkUpdate(args) => bulk_update::run(args),
        Bench::Tpcc(args) => tpcc::run(args),
        Bench::Ch(args) => ch::run(args),
        Bench::Statements(run) => crate::targets::statements(&run),
        Bench::Hostile(run) => {
            println!(
                "settings: {} records, YCSB-C, {} well-formed clients, {} attackers, {} s per run, seed {}, IN list of {} keys",
                run.records, run.threads, run.attackers, run.seconds, run.seed, run.in_list
            );
            println!(
                "{}",
                isolation::line(&format!("{} (the YCSB-C clients)", Level::ReadCommitted))
            );
            crate::targets::hostile(&run)
        }
        Bench::Diff {
            rows,
            queries,
            seed,
            target,
            ndp,
            gc,
            prepared,
        } => crate::targets::diff(rows, queries, seed, &target, &ndp, gc, prepared),
        Bench::Ycsb(args) => ycsb::run(args),
    }
}
