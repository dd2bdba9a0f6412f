//! What an update-NDP statement leaves with its transaction until commit
//! ([`NdpPart`]: the job's ΔMaps, SLT tag, logging and overflow log), the
//! logging level that decides what is logged for it ([`NdpLogging`]),
//! and the SLT tags update jobs lock with ([`TagPool`]).
//!
//! ```text
//!  ndp_modify / ndp_lock_rows ──► NdpPart ──► Transaction.ndp_parts
//!                                    │          own reads: own_heads
//!                                    ▼
//!  commit: validate (validate.rs) ─► End-NDP ─► ΔVID → VID heads
//! ```
//!
//! Values only: the transaction holds them, and `update.rs`, `validate.rs`
//! and `crate::transaction::commit` read them, without this file reaching any of them.

use std::collections::HashSet;

use ndpdb_formats::{Lsn, RecId, TableId, Vid};
use ndpdb_link::ndp::ModifyResult;
use ndpdb_slt::DeviceTag;

use super::overflow_log::OverflowRef;

/// One update-NDP statement of a transaction, waiting for its commit.
#[derive(Clone, Debug)]
pub(crate) struct NdpPart {
    pub table: TableId,
    pub tag: DeviceTag,
    pub result: ModifyResult,
    /// Logged with Start-NDP / End-NDP (`ndp_logging = basic | extended`).
    pub logged: bool,
    /// `ndp_logging = extended`: its overflow log, moved to the host at
    /// commit.
    pub extended: bool,
    pub overflow: Option<OverflowRef>,
    /// The LSN of its Start-NDP record, which End-NDP names.
    pub start_ndp: Option<Lsn>,
}

impl NdpPart {
    /// The Start-NDP LSN naming the overflow log the commit still has to
    /// move (extended logging, pages written, not moved yet).
    pub(crate) fn overflow_to_move(&self) -> Option<Lsn> {
        self.start_ndp.filter(|_| {
            self.extended && self.overflow.is_none() && !self.result.delta.l2p.is_empty()
        })
    }
}

/// What update jobs log (`SET ndp_logging`, update NDP §6): nothing (the
/// commit checkpoints instead), Start-/End-NDP records, or those plus an
/// overflow log of the new versions moved to the host before commit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NdpLogging {
    Off,
    #[default]
    Basic,
    Extended,
}

impl NdpLogging {
    pub fn name(self) -> &'static str {
        match self {
            NdpLogging::Off => "off",
            NdpLogging::Basic => "basic",
            NdpLogging::Extended => "extended",
        }
    }

    /// `off`, `basic` (also `on`) or `extended`.
    pub fn parse(s: &str) -> Option<NdpLogging> {
        Some(match s.trim().to_ascii_lowercase().as_str() {
            "off" | "false" => NdpLogging::Off,
            "basic" | "on" | "true" => NdpLogging::Basic,
            "extended" => NdpLogging::Extended,
            _ => return None,
        })
    }
}

/// SLT tags of the transactions with update jobs: unique among them.
#[derive(Default)]
pub(crate) struct TagPool {
    in_use: HashSet<u16>,
    next: u16,
}

impl TagPool {
    pub(crate) fn alloc_tag(&mut self) -> Option<DeviceTag> {
        for _ in 0..u16::MAX {
            self.next = self.next.wrapping_add(1).max(2);
            if self.in_use.insert(self.next) {
                return DeviceTag::new(self.next);
            }
        }
        None
    }

    pub(crate) fn free(&mut self, tag: DeviceTag) {
        self.in_use.remove(&tag.raw());
    }
}

/// Heads an update job moved, for the transaction's own reads.
pub(crate) fn own_heads(part: &NdpPart) -> impl Iterator<Item = ((TableId, Vid), RecId)> + '_ {
    part.result
        .delta
        .vids
        .iter()
        .map(move |d| ((part.table, d.vid), d.new))
}

#[cfg(test)]
mod tests {
    use ndpdb_formats::delta_maps::{DeltaMaps, DeltaVid};
    use ndpdb_formats::Ppn;

    use super::*;

    fn part(l2p: Vec<(ndpdb_formats::Lpn, Ppn)>, extended: bool) -> NdpPart {
        NdpPart {
            table: TableId(4),
            tag: DeviceTag::new(2).unwrap(),
            result: ModifyResult {
                delta: DeltaMaps {
                    l2p,
                    vids: vec![DeltaVid {
                        vid: Vid(9),
                        pred: RecId::new(ndpdb_formats::Lpn(1), 0),
                        new: RecId::new(ndpdb_formats::Lpn(20), 3),
                    }],
                },
                ..ModifyResult::default()
            },
            logged: true,
            extended,
            overflow: None,
            start_ndp: Some(Lsn(77)),
        }
    }

    #[test]
    fn tags_are_unique_among_the_transactions_holding_one() {
        let mut pool = TagPool::default();
        let a = pool.alloc_tag().unwrap();
        let b = pool.alloc_tag().unwrap();
        assert_ne!(a, b);
        // 0 and 1 are not handed out (the SLT's empty and host markers).
        assert!(a.raw() >= 2 && b.raw() >= 2);
        pool.free(a);
        let mut seen = HashSet::new();
        for _ in 0..1000 {
            let t = pool.alloc_tag().unwrap();
            assert_ne!(t, b, "a tag in use is never handed out again");
            assert!(seen.insert(t.raw()));
        }
    }

    #[test]
    fn a_transaction_reads_its_own_ndp_versions() {
        let p = part(vec![(ndpdb_formats::Lpn(20), Ppn(5))], false);
        let heads: Vec<_> = own_heads(&p).collect();
        assert_eq!(
            heads,
            vec![((TableId(4), Vid(9)), RecId::new(ndpdb_formats::Lpn(20), 3))]
        );
    }

    #[test]
    fn only_an_extended_job_with_pages_has_a_log_to_move() {
        let pages = vec![(ndpdb_formats::Lpn(20), Ppn(5))];
        assert_eq!(part(pages.clone(), true).overflow_to_move(), Some(Lsn(77)));
        assert_eq!(part(pages.clone(), false).overflow_to_move(), None);
        assert_eq!(part(Vec::new(), true).overflow_to_move(), None);
        let mut moved = part(pages, true);
        moved.overflow = Some(OverflowRef {
            start: Lsn(77),
            bytes: 1,
            crc: 0,
        });
        assert_eq!(moved.overflow_to_move(), None, "moved already");
    }

    #[test]
    fn ndp_logging_parses_as_set_takes_it() {
        for (s, l) in [
            ("off", NdpLogging::Off),
            ("false", NdpLogging::Off),
            ("on", NdpLogging::Basic),
            ("Basic", NdpLogging::Basic),
            (" extended ", NdpLogging::Extended),
        ] {
            assert_eq!(NdpLogging::parse(s), Some(l), "{s}");
        }
        assert_eq!(NdpLogging::parse("full"), None);
        for l in [NdpLogging::Off, NdpLogging::Basic, NdpLogging::Extended] {
            assert_eq!(NdpLogging::parse(l.name()), Some(l));
        }
        assert_eq!(NdpLogging::default(), NdpLogging::Basic);
    }
}
