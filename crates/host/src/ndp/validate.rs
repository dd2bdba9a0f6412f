//! Validation of what the device hands back (update NDP §5.3, Fig. 11):
//! one place for every check the host makes before it trusts a job's
//! ΔMaps — at the end of the statement, again at commit, and for GC.
//!
//! ```text
//!  ΔL2P   every page named was granted to the job, once; every new
//!         version lies on a written page           check_pages  (XX001)
//!  ΔVID   each predecessor is still the VID head (no host commit
//!         slipped in before the device locked it)  moved_heads  (40001,
//!                                                   or redone on the host
//!                                                   under READ COMMITTED)
//! ```

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
}
