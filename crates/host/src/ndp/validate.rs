//! ΔMaps validation (update NDP §5.3, Fig. 11): one place for every
//! check the host makes before it trusts what the device hands back —
//! a job's ΔL2P and ΔVID — at the end of the statement, again at commit,
//! and for GC.
//!
//! ```text
//!  ΔL2P   every page named was granted to the job, once; every new
//!         version lies on a written page           check_pages  (XX001)
//!  ΔVID   each predecessor is still the VID head (no host commit
//!         slipped in before the device locked it)
//!           statement end                          stale_deltas, moved_heads
//!                                                  (40001, or redone on the
//!                                                   host under READ COMMITTED)
//!           commit, jobs in the order they ran     validate_at_commit (40001)
//! ```
//!
//! A ΔVID is a claim "the head of VID v was `pred`, it is now `new`":
//! the host accepts it only while `pred` is still the head it knows (or
//! the version an earlier job of the same transaction made, in an NDP
//! pipeline). A newer committed version over `pred` means the device
//! worked on a version the transaction may not overwrite: first
//! committer wins, and the transaction fails with PostgreSQL's
//! serialization failure.

use rustc_hash::{FxHashMap, FxHashSet};

use ndpdb_formats::{Lpn, Ppn, RecId, SqlState, TableId, Vid};
use ndpdb_link::ndp::ModifyResult;

use super::part::NdpPart;
use crate::db::TableState;
use crate::error::{Error, Result};

/// The tuples of `read` — (VID, the version the device read or replaced)
/// — whose VID head is no longer that version: the one certification
/// every ΔVID and every locked version passes.
pub(crate) fn moved_heads(
    ts: &TableState,
    read: impl IntoIterator<Item = (Vid, RecId)>,
) -> Vec<Vid> {
    read.into_iter()
        .filter(|(vid, version)| ts.vids.head(*vid) != *version)
        .map(|(vid, _)| vid)
        .collect()
}

/// The ΔVIDs of `r` whose predecessor is not the head `head` gives (the
/// shared VID map's, or the transaction's own version from an earlier
/// statement: an NDP pipeline's DELETE replaces its UPDATE's versions).
pub(crate) fn stale_deltas(r: &ModifyResult, head: impl Fn(Vid) -> RecId) -> Vec<Vid> {
    r.delta
        .vids
        .iter()
        .filter(|d| head(d.vid) != d.pred)
        .map(|d| d.vid)
        .collect()
}

/// Commit-time ΔVID validation of a transaction's update jobs, in the
/// order they ran: each predecessor must be the head the shared VID map
/// has, or the version an earlier job of the transaction made.
pub(crate) fn parts_still_valid<'a>(
    parts: &[NdpPart],
    table: impl Fn(TableId) -> Option<&'a TableState>,
) -> bool {
    // Without a second job on a table no version of the transaction is
    // anyone's predecessor: no overlay needed.
    let chained = parts
        .iter()
        .enumerate()
        .any(|(i, p)| parts[..i].iter().any(|q| q.table == p.table));
    let mut own: FxHashMap<(TableId, Vid), RecId> = FxHashMap::default();
    for part in parts {
        let Some(ts) = table(part.table) else {
            return false;
        };
        let head = |vid: Vid| {
            own.get(&(part.table, vid))
                .copied()
                .unwrap_or_else(|| ts.vids.head(vid))
        };
        if !stale_deltas(&part.result, head).is_empty() {
            return false;
        }
        if chained {
            own.extend(
                part.result
                    .delta
                    .vids
                    .iter()
                    .map(|d| ((part.table, d.vid), d.new)),
            );
        }
    }
    true
}

/// Commit-time ΔMaps validation as the committing transaction sees it:
/// accepted, or refused with 40001 (`could not serialize access due to
/// concurrent update`) when a newer version committed over one of its
/// ΔVIDs' predecessors, or one of its tables was dropped.
pub(crate) fn validate_at_commit<'a>(
    parts: &[NdpPart],
    table: impl Fn(TableId) -> Option<&'a TableState>,
) -> Result<()> {
    if parts_still_valid(parts, table) {
        Ok(())
    } else {
        Err(Error::serialization())
    }
}

/// ΔL2P validation: the pages a modifying job reports, written or
/// unused, must be pages the host granted it, each once, and every
/// new version a ΔVID names must lie on one of the written pages.
/// Granted pages the reply leaves out are unreferenced: they join
/// `unused`. On a violation the reply cannot be trusted: its page
/// lists become "nothing written, every granted page unused" (the
/// failing statement frees them) and the error is XX001.
pub(crate) fn check_pages(granted_pages: &[(Lpn, Ppn)], result: &mut ModifyResult) -> Result<()> {
    let granted: FxHashSet<(Lpn, Ppn)> = granted_pages.iter().copied().collect();
    let mut reported = FxHashSet::default();
    let mut violation = None;
    for page in result.delta.l2p.iter().chain(&result.unused) {
        if !granted.contains(page) {
            violation = Some(format!(
                "page {} → {} was not granted to the job",
                page.0, page.1
            ));
            break;
        }
        if !reported.insert(*page) {
            violation = Some(format!("page {} → {} is reported twice", page.0, page.1));
            break;
        }
    }
    if violation.is_none() {
        let written: FxHashSet<Lpn> = result.delta.l2p.iter().map(|(l, _)| *l).collect();
        violation = result
            .delta
            .vids
            .iter()
            .find(|d| !d.new.is_null() && !written.contains(&d.new.lpn()))
            .map(|d| {
                format!(
                    "the new version {} of VID {} is not on a page the job wrote",
                    d.new, d.vid.0
                )
            });
    }
    if let Some(what) = violation {
        result.delta.l2p.clear();
        result.delta.vids.clear();
        result.unused = granted_pages.to_vec();
        return Err(Error::new(
            SqlState::DATA_CORRUPTED,
            format!("invalid NDP reply: {what}"),
        ));
    }
    let missing = granted_pages.iter().filter(|p| !reported.contains(p));
    result.unused.extend(missing);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndpdb_formats::delta_maps::{DeltaMaps, DeltaVid};
    use ndpdb_formats::{RecId, Vid};

    fn reply(l2p: &[(u64, u64)], unused: &[(u64, u64)], new: &[(u64, u16)]) -> ModifyResult {
        let pages = |v: &[(u64, u64)]| v.iter().map(|&(l, p)| (Lpn(l), Ppn(p))).collect();
        ModifyResult {
            delta: DeltaMaps {
                l2p: pages(l2p),
                vids: new
                    .iter()
                    .enumerate()
                    .map(|(i, &(lpn, slot))| DeltaVid {
                        vid: Vid(i as u64),
                        pred: RecId::new(Lpn(1), 0),
                        new: RecId::new(Lpn(lpn), slot),
                    })
                    .collect(),
            },
            unused: pages(unused),
            ..ModifyResult::default()
        }
    }

    #[test]
    fn a_reply_may_only_name_granted_pages() {
        let granted = [(Lpn(10), Ppn(5)), (Lpn(11), Ppn(6)), (Lpn(12), Ppn(7))];
        // Written 10, unused 11; 12 left out → unused.
        let mut ok = reply(&[(10, 5)], &[(11, 6)], &[(10, 0), (10, 1)]);
        check_pages(&granted, &mut ok).unwrap();
        assert_eq!(ok.unused, vec![(Lpn(11), Ppn(6)), (Lpn(12), Ppn(7))]);
        for mut bad in [
            reply(&[(10, 9)], &[], &[(10, 0)]),        // another PPN
            reply(&[(10, 5)], &[(10, 5)], &[(10, 0)]), // twice
            reply(&[(10, 5)], &[], &[(11, 0)]),        // a version off the job's pages
            reply(&[(99, 5)], &[], &[]),               // never granted
        ] {
            let e = check_pages(&granted, &mut bad).unwrap_err();
            assert_eq!(e.code, SqlState::DATA_CORRUPTED, "{e:?}");
            assert!(bad.delta.l2p.is_empty() && bad.delta.vids.is_empty());
            assert_eq!(bad.unused, granted.to_vec(), "every granted page goes back");
        }
    }

    // ΔVID validation. Tuples 0..4 of one table; their committed heads
    // are on page 1, the job's new versions on page 10.

    use std::sync::Arc;

    use ndpdb_formats::{Column, DataType, Schema};
    use ndpdb_slt::DeviceTag;

    use crate::catalog::TableMeta;
    use crate::storage::maps::VidMap;

    const T: TableId = TableId(7);

    fn committed(vid: u64) -> RecId {
        RecId::new(Lpn(1), vid as u16)
    }

    fn table() -> TableState {
        let meta = TableMeta {
            id: T,
            name: "t".into(),
            schema: Schema::new(
                vec![Column {
                    name: "a".into(),
                    ty: DataType::Int,
                    nullable: true,
                }],
                Vec::new(),
            ),
            indexes: Vec::new(),
            defaults: Vec::new(),
            foreign_keys: Vec::new(),
        };
        let ts = TableState::new(Arc::new(meta), VidMap::default());
        for vid in 0..4 {
            ts.vids.set(Vid(vid), committed(vid));
        }
        ts
    }

    /// A job's part: ΔVIDs `(vid, pred, new)`.
    fn part(deltas: &[(u64, RecId, RecId)]) -> NdpPart {
        NdpPart {
            table: T,
            tag: DeviceTag::new(2).unwrap(),
            result: ModifyResult {
                delta: DeltaMaps {
                    l2p: vec![(Lpn(10), Ppn(3))],
                    vids: deltas
                        .iter()
                        .map(|&(vid, pred, new)| DeltaVid {
                            vid: Vid(vid),
                            pred,
                            new,
                        })
                        .collect(),
                },
                ..ModifyResult::default()
            },
            logged: true,
            extended: false,
            overflow: None,
            start_ndp: None,
        }
    }

    fn new_version(slot: u16) -> RecId {
        RecId::new(Lpn(10), slot)
    }

    #[test]
    fn a_delta_map_over_the_committed_heads_is_accepted() {
        let ts = table();
        let job = part(&[
            (0, committed(0), new_version(0)),
            (2, committed(2), new_version(1)),
        ]);
        assert!(stale_deltas(&job.result, |v| ts.vids.head(v)).is_empty());
        validate_at_commit(std::slice::from_ref(&job), |t| (t == T).then_some(&ts)).unwrap();
        // Validation only reads: the heads move when the commit applies.
        assert_eq!(ts.vids.head(Vid(0)), committed(0));
    }

    #[test]
    fn a_delta_map_under_a_newer_committed_version_is_refused_with_40001() {
        let ts = table();
        let job = part(&[
            (0, committed(0), new_version(0)),
            (2, committed(2), new_version(1)),
        ]);
        // A host transaction committed a newer version of VID 2 after the
        // device read the old one.
        ts.vids.set(Vid(2), RecId::new(Lpn(5), 0));
        assert_eq!(stale_deltas(&job.result, |v| ts.vids.head(v)), vec![Vid(2)]);
        let e = validate_at_commit(&[job], |t| (t == T).then_some(&ts)).unwrap_err();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
        assert_eq!(e.code.0, "40001");
    }

    #[test]
    fn locked_versions_that_moved_are_named() {
        let ts = table();
        ts.vids.set(Vid(3), RecId::new(Lpn(5), 1));
        let read = [(Vid(1), committed(1)), (Vid(3), committed(3))];
        assert_eq!(moved_heads(&ts, read), vec![Vid(3)]);
    }

    #[test]
    fn a_pipeline_job_may_replace_the_versions_of_the_one_before() {
        let ts = table();
        // UPDATE made version 10/0 of VID 0; the DELETE after it replaces
        // that version, not the committed head.
        let update = part(&[(0, committed(0), new_version(0))]);
        let delete = part(&[(0, new_version(0), new_version(1))]);
        let parts = [update.clone(), delete.clone()];
        validate_at_commit(&parts, |t| (t == T).then_some(&ts)).unwrap();
        // In the other order the DELETE's predecessor is no head at all.
        let e = validate_at_commit(&[delete, update], |t| (t == T).then_some(&ts)).unwrap_err();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
    }

    #[test]
    fn a_dropped_table_fails_validation() {
        let job = part(&[(0, committed(0), new_version(0))]);
        let e = validate_at_commit(&[job], |_| None).unwrap_err();
        assert_eq!(e.code, SqlState::SERIALIZATION_FAILURE);
    }
}
