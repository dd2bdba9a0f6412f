//! Primary-key index: encoded key → VID.
//!
//! A key keeps its VID for life: a deleted key's chain ends in a tombstone,
//! and re-inserting the key continues that chain. An UPDATE that changes
//! the key is a delete of the old VID plus an insert under the new key.
//! So the index only ever grows, and it can be rebuilt from the newest
//! version of every VID after a restart.

use std::collections::HashMap;

use parking_lot::Mutex;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::{Value, Vid};

#[derive(Default)]
pub struct PkIndex {
    map: Mutex<HashMap<Vec<u8>, Vid>>,
}

/// Encodes key values so that equal SQL values give equal bytes.
pub fn encode_key(values: &[&Value]) -> Vec<u8> {
    let mut w = Writer::new();
    for v in values {
        v.key_bytes(&mut w);
    }
    w.into_inner()
}

impl PkIndex {
    pub fn get(&self, key: &[u8]) -> Option<Vid> {
        self.map.lock().get(key).copied()
    }

    /// Returns the key's VID, allocating one with `alloc` if the key is new.
    pub fn get_or_insert(&self, key: Vec<u8>, alloc: impl FnOnce() -> Vid) -> (Vid, bool) {
        let mut m = self.map.lock();
        if let Some(v) = m.get(&key) {
            return (*v, false);
        }
        let v = alloc();
        m.insert(key, v);
        (v, true)
    }

    pub fn insert(&self, key: Vec<u8>, vid: Vid) {
        self.map.lock().insert(key, vid);
    }

    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All entries (for consistency checks).
    pub fn entries(&self) -> Vec<(Vec<u8>, Vid)> {
        self.map
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }
}
