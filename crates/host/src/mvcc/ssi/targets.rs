//! SIREAD locks and write marks: who read and who wrote which table or
//! primary key.
//!
//! ```text
//!   read  Table(t)   ─► table_readers[t]            finds table_writers[t]
//!   read  Key(t, k)  ─► key_readers[(t,k)]          finds key_writers[(t,k)]
//!                       key_readers_any[t]                + whole_writers[t]
//!   write Key(t, k)  ─► key_writers[(t,k)], table_writers[t]
//!                       finds table_readers[t] + key_readers[(t,k)]
//!   write Table(t)   ─► whole_writers[t], table_writers[t]
//!                       finds table_readers[t] + key_readers_any[t]
//! ```
//!
//! A table lock covers the transaction's key locks in that table, which
//! are dropped when it is taken (promotion).

use rustc_hash::{FxHashMap, FxHashSet};

use ndpdb_formats::{TableId, TxId};

use super::{Graph, Target, KEYS_PER_TABLE};

/// The targets one transaction holds (read locks or write marks).
#[derive(Default)]
pub(crate) struct Held {
    tables: FxHashSet<TableId>,
    keys: FxHashMap<TableId, FxHashSet<u64>>,
}

type Holders = FxHashSet<TxId>;

#[derive(Default)]
pub(crate) struct Targets {
    table_readers: FxHashMap<TableId, Holders>,
    key_readers: FxHashMap<(TableId, u64), Holders>,
    /// Transactions with at least one key lock in the table.
    key_readers_any: FxHashMap<TableId, Holders>,
    /// Transactions that wrote anything in the table.
    table_writers: FxHashMap<TableId, Holders>,
    /// Transactions that wrote rows anywhere in the table (device bulk
    /// writes, whose keys the host does not see).
    whole_writers: FxHashMap<TableId, Holders>,
    key_writers: FxHashMap<(TableId, u64), Holders>,
}

fn ids(set: Option<&Holders>) -> impl Iterator<Item = TxId> + '_ {
    set.into_iter().flat_map(|s| s.iter().copied())
}

fn remove<K: std::hash::Hash + Eq>(map: &mut FxHashMap<K, Holders>, key: K, me: TxId) {
    if let Some(set) = map.get_mut(&key) {
        set.remove(&me);
        if set.is_empty() {
            map.remove(&key);
        }
    }
}

impl Targets {
    fn drop_key_reads(&mut self, me: TxId, table: TableId, keys: FxHashSet<u64>) {
        for k in keys {
            remove(&mut self.key_readers, (table, k), me);
        }
        remove(&mut self.key_readers_any, table, me);
    }

    /// Releases everything `me` held.
    pub(super) fn release(&mut self, me: TxId, reads: &Held, writes: &Held) {
        for t in &reads.tables {
            remove(&mut self.table_readers, *t, me);
        }
        for (t, keys) in &reads.keys {
            self.drop_key_reads(me, *t, keys.clone());
        }
        for t in writes.tables.iter().chain(writes.keys.keys()) {
            remove(&mut self.table_writers, *t, me);
        }
        for t in &writes.tables {
            remove(&mut self.whole_writers, *t, me);
        }
        for (t, keys) in &writes.keys {
            for k in keys {
                remove(&mut self.key_writers, (*t, *k), me);
            }
        }
    }
}

impl Graph {
    /// Takes a SIREAD lock; returns the transactions that wrote the
    /// target (`None`: held already, or `me` is not tracked).
    pub(super) fn lock_for_read(&mut self, me: TxId, target: Target) -> Option<Vec<TxId>> {
        let s = self.sxacts.get_mut(&me)?;
        let t = &mut self.targets;
        match target {
            Target::Table(table) => {
                if !s.reads.tables.insert(table) {
                    return None;
                }
                if let Some(keys) = s.reads.keys.remove(&table) {
                    t.drop_key_reads(me, table, keys);
                }
                t.table_readers.entry(table).or_default().insert(me);
                Some(ids(t.table_writers.get(&table)).collect())
            }
            Target::Key(table, key) => {
                if s.reads.tables.contains(&table) {
                    return None;
                }
                let keys = s.reads.keys.entry(table).or_default();
                if !keys.insert(key) {
                    return None;
                }
                if keys.len() > KEYS_PER_TABLE {
                    return self.lock_for_read(me, Target::Table(table));
                }
                t.key_readers.entry((table, key)).or_default().insert(me);
                t.key_readers_any.entry(table).or_default().insert(me);
                let mut writers: Vec<TxId> = ids(t.key_writers.get(&(table, key))).collect();
                writers.extend(ids(t.whole_writers.get(&table)));
                Some(writers)
            }
        }
    }

    /// Leaves a write mark; returns the transactions holding SIREAD
    /// locks on the target (empty if `me` marked it already).
    pub(super) fn mark_write(&mut self, me: TxId, target: Target) -> Vec<TxId> {
        let Some(s) = self.sxacts.get_mut(&me) else {
            return Vec::new();
        };
        s.did_write = true;
        let t = &mut self.targets;
        match target {
            Target::Table(table) => {
                if !s.writes.tables.insert(table) {
                    return Vec::new();
                }
                t.table_writers.entry(table).or_default().insert(me);
                t.whole_writers.entry(table).or_default().insert(me);
                let mut readers: Vec<TxId> = ids(t.table_readers.get(&table)).collect();
                readers.extend(ids(t.key_readers_any.get(&table)));
                readers
            }
            Target::Key(table, key) => {
                if s.writes.tables.contains(&table)
                    || !s.writes.keys.entry(table).or_default().insert(key)
                {
                    return Vec::new();
                }
                t.table_writers.entry(table).or_default().insert(me);
                t.key_writers.entry((table, key)).or_default().insert(me);
                let mut readers: Vec<TxId> = ids(t.table_readers.get(&table)).collect();
                readers.extend(ids(t.key_readers.get(&(table, key))));
                readers
            }
        }
    }
}
