//! Settled pages: what a GC run need not read again (PostgreSQL's
//! visibility map, all-visible and all-frozen bits, for out-of-place
//! pages).
//!
//! A page is settled when every version on it is the head of a chain of
//! one version, created below the run's horizon and not a tombstone:
//! every snapshot in use or to come sees exactly those versions, none is
//! garbage, and no other chain reaches into the page. Pages are never
//! rewritten while mapped (a new version of a tuple goes to another
//! page), so a settled page changes in one way only: one of its heads
//! moves away, when its tuple is updated or deleted. Until then a later
//! run would find it as this run did — no victim, all of it live.
//!
//! ```text
//!  run k    pages read ──► settled: LPN → (PPN, heads, fingerprint)
//!  run k+1  heads of every VID, from memory, counted per settled LPN
//!             same PPN mapped, same heads (count and fingerprint of
//!             their VIDs and slots), not passed along
//!               yes → not read; its VIDs are not walked
//!               no  → read and walked as any other page
//! ```
//!
//! The check needs no hook where heads move: it compares the heads the
//! run starts from with those the page had. The set lives in memory
//! only; the first run after an open reads every page. A run that fails
//! puts the set it started from back.

use rustc_hash::FxHashMap;

use ndpdb_formats::{Lpn, Ppn, RecId, TxId};

/// A settled page as the run that settled it saw it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SettledPage {
    pub ppn: Ppn,
    /// Its versions (every one a head).
    pub heads: u32,
    pub slots: u16,
    /// [`fingerprint`] summed over its heads.
    pub fingerprint: u64,
}

/// One table's settled pages and the horizon they were found under.
#[derive(Clone, Debug, Default)]
pub(crate) struct SettledPages {
    pub horizon: TxId,
    pub pages: FxHashMap<Lpn, SettledPage>,
}

/// What a head contributes to its page's fingerprint: a mix of its VID
/// and slot, so that a page whose heads were replaced by as many others
/// does not pass for unchanged.
pub(crate) fn fingerprint(vid: u64, head: RecId) -> u64 {
    let x = vid
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(u64::from(head.slot()).wrapping_mul(0xC2B2_AE3D_27D4_EB4F));
    (x ^ (x >> 31)).wrapping_mul(0x94D0_49BB_1331_11EB)
}

/// Heads and fingerprint per page, accumulated over a VID-ordered walk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct HeadCount {
    pub heads: u32,
    pub fingerprint: u64,
}

impl HeadCount {
    pub fn add(&mut self, vid: u64, head: RecId) {
        self.heads += 1;
        self.fingerprint = self.fingerprint.wrapping_add(fingerprint(vid, head));
    }
}

impl SettledPages {
    /// The pages still settled, given every VID's head now (`heads[v]`),
    /// the LPN's current mapping, and whether the host passes the page
    /// along (it is being filled again). Horizons only rise; a lower one
    /// (which no caller passes) trusts nothing.
    pub fn still_settled(
        &self,
        horizon: TxId,
        heads: &[RecId],
        mapped: impl Fn(Lpn) -> Option<Ppn>,
        passed_along: impl Fn(Lpn) -> bool,
    ) -> FxHashMap<Lpn, SettledPage> {
        if self.pages.is_empty() || horizon < self.horizon {
            return FxHashMap::default();
        }
        let mut counts: FxHashMap<Lpn, HeadCount> = FxHashMap::default();
        // Heads of neighbouring VIDs share pages: one lookup per run of
        // them, counted only on remembered pages.
        let mut run: Option<(Lpn, Option<HeadCount>)> = None;
        for (v, &head) in heads.iter().enumerate() {
            if head.is_null() {
                continue;
            }
            let lpn = head.lpn();
            if run.as_ref().map(|r| r.0) != Some(lpn) {
                if let Some((l, Some(c))) = run.take() {
                    merge(&mut counts, l, c);
                }
                run = Some((lpn, self.pages.contains_key(&lpn).then(HeadCount::default)));
            }
            if let Some((_, Some(c))) = &mut run {
                c.add(v as u64, head);
            }
        }
        if let Some((l, Some(c))) = run {
            merge(&mut counts, l, c);
        }
        self.pages
            .iter()
            .filter(|(lpn, p)| {
                let now = counts.get(lpn).copied().unwrap_or_default();
                now.heads == p.heads
                    && now.fingerprint == p.fingerprint
                    && mapped(**lpn) == Some(p.ppn)
                    && !passed_along(**lpn)
            })
            .map(|(l, p)| (*l, *p))
            .collect()
    }
}

fn merge(counts: &mut FxHashMap<Lpn, HeadCount>, lpn: Lpn, c: HeadCount) {
    let e = counts.entry(lpn).or_default();
    e.heads += c.heads;
    e.fingerprint = e.fingerprint.wrapping_add(c.fingerprint);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rid(lpn: u64, slot: u16) -> RecId {
        RecId::new(Lpn(lpn), slot)
    }

    /// Pages 1 and 2, settled with VIDs 0–1 and 2–3.
    fn settled() -> SettledPages {
        let mut pages = FxHashMap::default();
        for (lpn, vids) in [(1u64, [0u64, 1]), (2, [2, 3])] {
            let mut c = HeadCount::default();
            for (slot, v) in vids.iter().enumerate() {
                c.add(*v, rid(lpn, slot as u16));
            }
            pages.insert(
                Lpn(lpn),
                SettledPage {
                    ppn: Ppn(lpn + 100),
                    heads: c.heads,
                    slots: 2,
                    fingerprint: c.fingerprint,
                },
            );
        }
        SettledPages {
            horizon: TxId(50),
            pages,
        }
    }

    fn still(s: &SettledPages, heads: &[RecId], horizon: u64) -> Vec<u64> {
        let mut v: Vec<u64> = s
            .still_settled(TxId(horizon), heads, |l| Some(Ppn(l.0 + 100)), |_| false)
            .keys()
            .map(|l| l.0)
            .collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn a_page_stays_settled_until_one_of_its_heads_moves() {
        let s = settled();
        let heads = [rid(1, 0), rid(1, 1), rid(2, 0), rid(2, 1)];
        assert_eq!(still(&s, &heads, 60), [1, 2]);
        // VID 3 updated: its head is on page 9 now.
        let moved = [rid(1, 0), rid(1, 1), rid(2, 0), rid(9, 0)];
        assert_eq!(still(&s, &moved, 60), [1]);
        // VID 1 deleted and its tombstone collected.
        let gone = [rid(1, 0), RecId::NULL, rid(2, 0), rid(2, 1)];
        assert_eq!(still(&s, &gone, 60), [2]);
    }

    #[test]
    fn the_same_number_of_other_heads_does_not_pass_for_unchanged() {
        let s = settled();
        // Slots of page 2 now named by VIDs 4 and 5 (and 2, 3 elsewhere).
        let heads = [
            rid(1, 0),
            rid(1, 1),
            rid(8, 0),
            rid(8, 1),
            rid(2, 0),
            rid(2, 1),
        ];
        assert_eq!(still(&s, &heads, 60), [1]);
    }

    #[test]
    fn a_remapped_or_passed_along_page_or_a_lower_horizon_is_read_again() {
        let s = settled();
        let heads = [rid(1, 0), rid(1, 1), rid(2, 0), rid(2, 1)];
        let remapped = s.still_settled(
            TxId(60),
            &heads,
            |l| Some(Ppn(if l.0 == 1 { 7 } else { l.0 + 100 })),
            |_| false,
        );
        assert_eq!(remapped.keys().collect::<Vec<_>>(), [&Lpn(2)]);
        let passed = s.still_settled(TxId(60), &heads, |l| Some(Ppn(l.0 + 100)), |l| l.0 == 2);
        assert_eq!(passed.keys().collect::<Vec<_>>(), [&Lpn(1)]);
        assert!(still(&s, &heads, 40).is_empty());
    }
}
