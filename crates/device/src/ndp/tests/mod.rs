//! Unit tests of the NDP core, driven step by step on a small store of
//! the crate's own types (a page file in a temporary folder, device maps
//! set by hand): each test builds version chains, takes one step of a
//! mechanism and checks what a user of it relies on.
//!
//! - `fixture`: the store, the table, versions and snapshots.
//! - `walk`: the PE's visibility walk and pass-along precedence.
//! - `job`: an NDP job's lifecycle through the engine's commands.
//! - `certify`: locking and certification of update NDP.
//! - `unloader`: pages written for a job and what goes back to the host.

mod certify;
mod fixture;
mod job;
mod unloader;
mod walk;
