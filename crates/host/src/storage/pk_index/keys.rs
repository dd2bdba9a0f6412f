//! The in-memory part of a PK index: the keys added since its base file
//! was written. Every key's bytes sit in one append-only arena and a
//! hash table of (arena offset, key length, VID) indexes them — no
//! allocation per key. Because the arena only grows, an entry's offset
//! tells when it was added: entries at or past an arena length taken
//! earlier were added (or given another VID) after that moment.

use std::hash::Hasher;

use hashbrown::HashTable;
use rustc_hash::FxHasher;

use ndpdb_formats::Vid;

#[derive(Default, Clone)]
pub struct Keys {
    arena: Vec<u8>,
    table: HashTable<Slot>,
    /// One past the largest VID ever set.
    vid_bound: u64,
}

#[derive(Clone, Copy)]
struct Slot {
    off: u64,
    len: u32,
    vid: Vid,
}

fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.write_usize(key.len());
    h.finish()
}

/// The bytes of `s`'s key in `arena`.
fn key_at<'a>(arena: &'a [u8], s: &Slot) -> &'a [u8] {
    &arena[s.off as usize..s.off as usize + s.len as usize]
}

impl Keys {
    pub fn len(&self) -> usize {
        self.table.len()
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    pub fn vid_bound(&self) -> u64 {
        self.vid_bound
    }

    /// The arena's length: a mark for [`Keys::retain_since`].
    pub fn mark(&self) -> u64 {
        self.arena.len() as u64
    }

    pub fn find(&self, key: &[u8]) -> Option<Vid> {
        self.table
            .find(hash(key), |s| key_at(&self.arena, s) == key)
            .map(|s| s.vid)
    }

    /// Where `key`'s entry sits in the arena (see [`Keys::mark`]).
    pub fn offset(&self, key: &[u8]) -> Option<u64> {
        self.table
            .find(hash(key), |s| key_at(&self.arena, s) == key)
            .map(|s| s.off)
    }

    /// Sets `key` → `vid`; returns the VID it had. A key that changes VID
    /// moves to the arena's end (see the module docs).
    pub fn set(&mut self, key: &[u8], vid: Vid) -> Option<Vid> {
        let h = hash(key);
        let Keys {
            arena,
            table,
            vid_bound,
        } = self;
        *vid_bound = (*vid_bound).max(vid.0 + 1);
        let old = match table.find_entry(h, |s| key_at(arena, s) == key) {
            Ok(e) if e.get().vid == vid => return Some(vid),
            Ok(e) => Some(e.remove().0.vid),
            Err(_) => None,
        };
        let slot = Slot {
            off: arena.len() as u64,
            len: key.len() as u32,
            vid,
        };
        arena.extend_from_slice(key);
        table.insert_unique(h, slot, |s| hash(key_at(arena, s)));
        old
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&[u8], Vid)> + '_ {
        self.table.iter().map(|s| (key_at(&self.arena, s), s.vid))
    }

    /// The entries added (or given another VID) since `mark`, in a fresh
    /// arena.
    pub fn since(&self, mark: u64) -> Keys {
        let mut kept = Keys {
            vid_bound: self.vid_bound,
            ..Keys::default()
        };
        for s in self.table.iter().filter(|s| s.off >= mark) {
            kept.set(key_at(&self.arena, s), s.vid);
        }
        kept
    }

    /// Keeps only the entries added since `mark`, in a fresh arena.
    pub fn retain_since(&mut self, mark: u64) {
        *self = self.since(mark);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_set_after_a_mark_survive_retain_since() {
        let mut k = Keys::default();
        k.set(b"a", Vid(1));
        k.set(b"b", Vid(2));
        let mark = k.mark();
        k.set(b"c", Vid(3));
        assert_eq!(k.set(b"a", Vid(1)), Some(Vid(1)));
        assert_eq!(k.set(b"b", Vid(7)), Some(Vid(2)));
        k.retain_since(mark);
        let mut left: Vec<_> = k.iter().map(|(k, v)| (k.to_vec(), v)).collect();
        left.sort();
        assert_eq!(left, vec![(b"b".to_vec(), Vid(7)), (b"c".to_vec(), Vid(3))]);
        assert_eq!((k.find(b"a"), k.vid_bound()), (None, 8));
    }
}
