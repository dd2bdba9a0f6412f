//! Exhaustive interleavings of host and device actors on one SLT bucket.
//!
//! Each actor is a small state machine whose steps are the protocol's
//! atomic actions — one SLT operation (a CAS loop, linearised at its
//! successful CAS) or one host lock-manager action (serialised by the
//! host's mutex). A depth-first search runs every interleaving of the
//! actors' steps from a start state, with memoisation of visited states,
//! and checks after each step:
//!
//! - mutual exclusion: at most one actor is in its critical section;
//! - FIFO: actors enter in the order their requests took effect — a host
//!   transaction may share an earlier host-shared entry only if no device
//!   request arrived after that entry;
//! - host-shared entries match host groups one to one, and an entry is
//!   removed only by the member whose leaving empties its group (owner);
//! - no lost wake-up: a state where nobody can move is final — everyone
//!   finished or gave up, and the bucket and the host groups are empty.
//!
//! A host transaction holds the tuple when its host-shared entry holds the
//! bucket and it is first in the host lock table's queue (SLT = head,
//! HLT = tail). Host waiters sleep and become runnable only when woken by
//! a release;
//! device waiters poll; a waiter marked `gives_up` may time out at any
//! point of its wait.

use std::collections::{HashSet, VecDeque};

use ndpdb_formats::TxId;
use portable_atomic::Ordering;

use crate::bucket::{Bucket, DeviceTag, Slot};
use crate::host::{HostSide, Joined};
use crate::table::{SharedLockTable, Withdrawn};

const IDX: usize = 0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Device(DeviceTag),
    Host(TxId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Pc {
    Start,
    /// Device: polling. Host: awake, about to check whether it holds.
    Waiting,
    /// Host only: asleep until a release wakes it.
    Sleeping,
    InCs,
    Done,
    GaveUp,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Actor {
    kind: Kind,
    gives_up: bool,
    pc: Pc,
    /// Arrival order: when its request took effect.
    order: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct State {
    bucket: u128,
    host: HostSide,
    /// The host lock table's queue for the tuple (holder first).
    hlt: VecDeque<TxId>,
    actors: Vec<Actor>,
    in_cs: Option<usize>,
    next_seq: u32,
    /// One element per host group the model expects.
    group_seqs: Vec<()>,
    last_in_cs: Option<u32>,
}

struct Explorer {
    slt: SharedLockTable,
    seen: HashSet<State>,
    finals: usize,
}

impl Explorer {
    fn wake_all(st: &mut State) {
        for a in &mut st.actors {
            if a.pc == Pc::Sleeping {
                a.pc = Pc::Waiting;
            }
        }
    }

    fn enter_cs(st: &mut State, i: usize) {
        assert_eq!(st.in_cs, None, "two holders: {st:?}");
        let order = st.actors[i].order.expect("queued before holding");
        if let Some(last) = st.last_in_cs {
            assert!(
                order > last,
                "FIFO broken: {order:?} after {last:?} in {st:?}"
            );
        }
        st.in_cs = Some(i);
        st.last_in_cs = Some(order);
        st.actors[i].pc = Pc::InCs;
    }

    /// A host transaction leaves; checks ownership of entry removal.
    fn host_leave(&self, st: &mut State, tx: TxId) {
        let groups = st.host.groups(IDX);
        let gi = groups.iter().position(|g| g.contains(&tx));
        let owner = gi.map(|g| groups[g].len() == 1);
        let hosts_before = Bucket(st.bucket).host_entries();
        st.host.leave(&self.slt, IDX, tx).unwrap();
        // HLT release: the next host in line may hold the tuple now.
        st.hlt.retain(|t| *t != tx);
        let wake = true;
        let hosts_after = Bucket(self.slt.word(IDX).load(Ordering::Acquire)).host_entries();
        if hosts_after < hosts_before {
            assert_eq!(
                owner,
                Some(true),
                "host entry removed by a non-owner: {st:?}"
            );
            st.group_seqs.remove(gi.unwrap());
        }
        if wake {
            Self::wake_all(st);
        }
    }

    /// The successor states of `st` (one per enabled step).
    fn successors(&self, st: &State) -> Vec<State> {
        let mut out = Vec::new();
        for i in 0..st.actors.len() {
            let a = st.actors[i].clone();
            let mut steps: Vec<u8> = match a.pc {
                Pc::Start | Pc::Waiting | Pc::InCs => vec![0],
                _ => vec![],
            };
            if a.gives_up && matches!(a.pc, Pc::Waiting | Pc::Sleeping) {
                steps.push(1);
            }
            for step in steps {
                let mut n = st.clone();
                self.slt.word(IDX).store(n.bucket, Ordering::Release);
                self.step(&mut n, i, step);
                n.bucket = self.slt.word(IDX).load(Ordering::Acquire);
                // Host entries and groups correspond one to one.
                assert_eq!(
                    Bucket(n.bucket).host_entries(),
                    n.host.groups(IDX).len(),
                    "{n:?}"
                );
                assert_eq!(n.group_seqs.len(), n.host.groups(IDX).len());
                if n != *st {
                    out.push(n);
                }
            }
        }
        out
    }

    fn step(&self, n: &mut State, i: usize, step: u8) {
        let a = n.actors[i].clone();
        match (a.kind, a.pc, step) {
            (Kind::Device(tag), Pc::Start, _) => {
                if let Some(pos) = self.slt.enqueue_index(IDX, Slot::Device(tag)).unwrap() {
                    n.actors[i].order = Some(n.next_seq);
                    n.next_seq += 1;
                    n.actors[i].pc = Pc::Waiting;
                    if pos == 0 {
                        Self::enter_cs(n, i);
                    }
                }
            }
            (Kind::Device(tag), Pc::Waiting, 0) => {
                if Bucket(self.slt.word(IDX).load(Ordering::Acquire)).head() == Slot::Device(tag) {
                    Self::enter_cs(n, i);
                }
            }
            (Kind::Device(tag), Pc::Waiting, _) => {
                match self.slt.withdraw_device_index(IDX, tag).unwrap() {
                    Withdrawn::Withdrawn => n.actors[i].pc = Pc::GaveUp,
                    Withdrawn::Granted => Self::enter_cs(n, i),
                    Withdrawn::NotQueued => panic!("queued request vanished: {n:?}"),
                }
            }
            (Kind::Device(tag), Pc::InCs, _) => {
                // The host releases the job's lock at its commit.
                n.in_cs = None;
                n.actors[i].pc = Pc::Done;
                if n.host.release_device(&self.slt, IDX, tag).unwrap() {
                    Self::wake_all(n);
                }
            }
            (Kind::Host(tx), Pc::Start, _) => {
                // SLT, then HLT in lockstep (under the host's mutex).
                match n.host.request(&self.slt, IDX, tx).unwrap() {
                    Joined::NewEntry(_) => n.group_seqs.push(()),
                    Joined::ExistingGroup => {}
                }
                n.hlt.push_back(tx);
                n.actors[i].order = Some(n.next_seq);
                n.next_seq += 1;
                n.actors[i].pc = Pc::Waiting;
            }
            (Kind::Host(tx), Pc::Waiting, 0) => {
                if n.hlt.front() == Some(&tx) && n.host.slt_granted(&self.slt, IDX, tx).unwrap() {
                    Self::enter_cs(n, i);
                } else {
                    n.actors[i].pc = Pc::Sleeping;
                }
            }
            (Kind::Host(tx), Pc::Waiting | Pc::Sleeping, _) => {
                // Lock timeout: it may have been granted just now; a
                // holder that times out still leaves like any holder.
                n.actors[i].pc = Pc::GaveUp;
                self.host_leave(n, tx);
            }
            (Kind::Host(tx), Pc::InCs, _) => {
                n.in_cs = None;
                n.actors[i].pc = Pc::Done;
                self.host_leave(n, tx);
            }
            other => panic!("no such step {other:?}"),
        }
    }

    fn explore(&mut self, st: State) {
        if !self.seen.insert(st.clone()) {
            return;
        }
        let next = self.successors(&st);
        if next.is_empty() {
            // Nobody can move: everyone must be finished.
            assert!(
                st.actors
                    .iter()
                    .all(|a| matches!(a.pc, Pc::Done | Pc::GaveUp)),
                "stuck (lost wake-up or deadlock): {st:?}"
            );
            assert_eq!(st.bucket, 0, "bucket left non-empty: {st:?}");
            assert!(st.host.groups(IDX).is_empty(), "{st:?}");
            assert!(st.hlt.is_empty(), "{st:?}");
            self.finals += 1;
            return;
        }
        for n in next {
            self.explore(n);
        }
    }
}

/// Explores every interleaving; returns the number of states visited.
fn check(actors: &[(Kind, bool)]) -> usize {
    let mut ex = Explorer {
        slt: SharedLockTable::in_process(1).unwrap(),
        seen: HashSet::new(),
        finals: 0,
    };
    let start = State {
        bucket: 0,
        host: HostSide::new(),
        hlt: VecDeque::new(),
        actors: actors
            .iter()
            .map(|&(kind, gives_up)| Actor {
                kind,
                gives_up,
                pc: Pc::Start,
                order: None,
            })
            .collect(),
        in_cs: None,
        next_seq: 0,
        group_seqs: Vec::new(),
        last_in_cs: None,
    };
    ex.explore(start);
    assert!(ex.finals > 0);
    ex.seen.len()
}

fn dev(n: u16) -> Kind {
    Kind::Device(DeviceTag::new(n).unwrap())
}

fn host(n: u64) -> Kind {
    Kind::Host(TxId(n))
}

#[test]
fn two_devices_and_two_hosts() {
    let states = check(&[
        (dev(2), false),
        (dev(3), false),
        (host(1), false),
        (host(2), false),
    ]);
    assert!(states > 500, "explored only {states} states");
}

#[test]
fn hosts_share_an_entry_and_one_gives_up() {
    let states = check(&[
        (dev(2), false),
        (host(1), false),
        (host(2), true),
        (host(3), false),
    ]);
    assert!(states > 1_000, "explored only {states} states");
}

#[test]
fn device_and_host_waiters_give_up() {
    let states = check(&[
        (dev(2), false),
        (dev(3), true),
        (host(1), true),
        (host(2), false),
    ]);
    assert!(states > 1_000, "explored only {states} states");
}

#[test]
fn three_devices_and_three_hosts() {
    let states = check(&[
        (dev(2), false),
        (dev(3), false),
        (dev(4), true),
        (host(1), false),
        (host(2), false),
        (host(3), true),
    ]);
    assert!(states > 10_000, "explored only {states} states");
}
