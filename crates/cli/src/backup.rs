//! `ndpdb backup` and `ndpdb restore`: base backups of a database and the
//! restore of its lost device store (see `ndpdb_host::backup`).
//!
//! ```text
//!  ndpdb backup --db DIR --to BACKUP             opens DIR itself
//!  ndpdb backup --server CONNINFO --to BACKUP    a running `ndpdb serve`:
//!                                                SELECT ndpdb_backup('BACKUP')
//!  ndpdb restore --db DIR --backup BACKUP        DIR/device lost: rebuilt
//! ```

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use ndpdb_host::{Config, Result};

/// A bar over pages on a terminal, a line per tenth otherwise.
fn pages_progress(what: &'static str) -> impl Fn(u64, u64) {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(0);
        b.set_style(
            ProgressStyle::with_template(&format!(
                "{what} {{bar:40}} {{pos}}/{{len}} pages ({{per_sec}}, eta {{eta}})"
            ))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let last_tenth = std::cell::Cell::new(u64::MAX);
    move |done, total| match &bar {
        Some(b) => {
            b.set_length(total);
            b.set_position(done);
            if done == total {
                b.finish_and_clear();
            }
        }
        None => {
            let tenth = (done * 10).checked_div(total).unwrap_or(10);
            if tenth != last_tenth.replace(tenth) {
                eprintln!("{what}: {done}/{total} pages");
            }
        }
    }
}

pub fn backup(
    db: Option<&Path>,
    server: Option<&str>,
    to: &Path,
    config: Config,
    device: &crate::args::DeviceArgs,
) -> Result<ExitCode> {
    match (db, server) {
        (Some(dir), None) => {
            let db = device.open(dir, config).map_err(|e| {
                if e.code == ndpdb_formats::SqlState::OBJECT_IN_USE {
                    ndpdb_host::Error::new(
                        e.code,
                        format!(
                            "{}; back up a served database with --server CONNINFO",
                            e.message
                        ),
                    )
                } else {
                    e
                }
            })?;
            let r = db.backup(to, &pages_progress("copying"))?;
            println!(
                "backup of {} in {}: checkpoint LSN {}, {} tables, {} pages, {:.1} MB in {:.2} s (commits waited {:.3} s for the checkpoint)",
                dir.display(),
                to.display(),
                r.label.checkpoint.0,
                r.tables,
                r.label.pages,
                r.bytes as f64 / 1e6,
                r.secs,
                r.checkpoint_secs
            );
        }
        (None, Some(conninfo)) => {
            let target = std::path::absolute(to)?;
            let mut client = postgres::Client::connect(conninfo, postgres::NoTls)
                .map_err(ndpdb_bench::target::wire_error)?;
            let sql = format!(
                "SELECT ndpdb_backup('{}')",
                target.display().to_string().replace('\'', "''")
            );
            let rows = client
                .simple_query(&sql)
                .map_err(ndpdb_bench::target::wire_error)?;
            for m in rows {
                if let postgres::SimpleQueryMessage::Row(r) = m {
                    println!(
                        "backup in {}: checkpoint LSN {}, {} pages, {} bytes",
                        target.display(),
                        r.get(0).unwrap_or("?"),
                        r.get(1).unwrap_or("?"),
                        r.get(2).unwrap_or("?")
                    );
                }
            }
        }
        _ => {
            return Err(ndpdb_host::Error::new(
                ndpdb_formats::SqlState::INVALID_PARAMETER_VALUE,
                "ndpdb backup takes --db DIR or --server CONNINFO",
            ))
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Restores onto the embedded device (`DIR/device`), or onto the empty
/// store of the device process `--device` names.
pub fn restore(
    dir: &Path,
    backup: &Path,
    config: Config,
    device: &crate::args::DeviceArgs,
) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let progress = pages_progress("restoring");
    let db = match &device.device {
        None => ndpdb_embedded::restore_with_progress(dir, backup, config, &progress)?,
        Some(addr) => {
            let token = crate::device::read_token(device.token_file.as_deref())?;
            ndpdb_host::Database::restore_on(
                dir,
                backup,
                config,
                &mut |c| ndpdb_host::attach::connect_device(addr, token.clone(), c),
                &progress,
            )?
        }
    };
    let r = db.recovery_report();
    println!(
        "restored the device store of {} from {} in {:.2} s: {} transactions and {} versions replayed, {} overflow logs written back",
        dir.display(),
        backup.display(),
        started.elapsed().as_secs_f64(),
        r.replayed_transactions,
        r.replayed_versions,
        r.overflow_logs_written_back
    );
    Ok(ExitCode::SUCCESS)
}
