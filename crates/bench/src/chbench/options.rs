//! What a CH-benCHmark run is asked to measure: how many order lines,
//! where to write, which link presets, links and fan-outs, whether to
//! sweep, and the baselines to set beside ndpdb (its wire server,
//! PostgreSQL). `ndpdb bench chbench` fills it from its arguments.

use std::path::PathBuf;

use ndpdb_embedded::process::LinkKind;
use ndpdb_host::Config;
use ndpdb_link::LinkModel;

/// The settings of one run (see the fields).
pub struct ChOptions {
    pub rows: u64,
    pub out: PathBuf,
    pub presets: Vec<LinkModel>,
    pub base: Config,
    pub sweeps: bool,
    /// PostgreSQL baseline: a connection string (Query-SUM on the same rows).
    pub postgres: Option<String>,
    /// Also run Query-SUM through the wire protocol, against a server on
    /// the same database in this process (ndp off, then on).
    pub server: bool,
    /// Ways to reach the device Query-SUM also runs over (beside the
    /// in-process device of the preset runs): a device process over a
    /// unix socket or TCP (base preset).
    pub links: Vec<LinkKind>,
    /// With the `rados` link: Query-SUM with NDP on, calling this many
    /// page objects at once (each scans its share in its OSD).
    pub fan_out: Vec<usize>,
}
