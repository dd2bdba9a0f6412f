//! Software prefetching of the page bytes a scan is about to read.
//!
//! A scan's pages lie scattered in memory and a PE reads only a few
//! cache lines of each (the header, zone maps, the minipages of the
//! columns it evaluates): the CPU's stream prefetchers see no stream and
//! every first touch waits for DRAM. The page walk therefore asks for the
//! lines of the pages ahead of it, in two steps, so that the loads of
//! several pages overlap:
//!
//! ```text
//!  run k+2: page header and column directory ─┐ (prefetch)
//!  run k+1: minipages of the pipeline's columns, per the directory
//!           fetched one step earlier           ─┘ (prefetch)
//!  run k  : visibility, kernels (hits)
//! ```

use ndpdb_formats::page::layout::DIR_ENTRY_SIZE;
use ndpdb_formats::page::{minipage_span, PAGE_HEADER_SIZE};

const LINE: usize = 64;

/// Starts loading the cache line holding `bytes[at]` (no effect where
/// the target has no prefetch instruction, or `at` is out of bounds).
#[inline(always)]
fn line(bytes: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(b) = bytes.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a
        // hint that never faults; the address is inside a live slice.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(b).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (bytes, at);
}

/// The header and the directory of a page with `columns` columns.
pub fn header(page: &[u8], columns: usize) {
    let end = PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * columns;
    for at in (0..end).step_by(LINE) {
        line(page, at);
    }
}

/// The minipages of `columns`: the first line of each (zone map, null
/// bitmap), the whole minipage where `whole`.
pub fn columns(page: &[u8], columns: &[(usize, bool)]) {
    for &(c, whole) in columns {
        let Some((off, len)) = minipage_span(page, c) else {
            continue;
        };
        let end = if whole { off + len } else { off + 1 };
        for at in (off..end).step_by(LINE) {
            line(page, at);
        }
    }
}
