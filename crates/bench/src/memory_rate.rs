//! Memory yardsticks for a PE's scan rate, measured in the same run as the
//! scan they judge.
//!
//! ```text
//!  sequential:  page 0 ████████████████ page 1 ████████████████ …
//!  page spans:  page 0 ██··▌··▌···████·· page 1 ██··▌··▌···████·· …
//!               header+dir  zones  minipage
//! ```
//!
//! - [`sequential_read_rate`]: one thread summing a buffer of as many bytes
//!   as the PE's pages, front to back (the hardware prefetchers' best case).
//! - [`page_spans_read_rate`]: one thread summing, page after page of such a
//!   buffer, only the byte spans of a PAX page a Query-SUM scan reads (the
//!   header and column directory, two zone maps, the summed column's
//!   minipage), with no engine work at all. It is the floor of what any
//!   engine reading those bytes from 8 KiB pages achieves on this machine:
//!   the spans are short and far apart, so each costs a memory access the
//!   prefetchers do not hide.

use std::time::Instant;

use ndpdb_formats::codec::Writer;
use ndpdb_formats::page::layout::{DIR_ENTRY_SIZE, ZONE_SIZE};
use ndpdb_formats::page::{minipage_span, PageBuf, PAGE_HEADER_SIZE, PAGE_SIZE};
use ndpdb_formats::record::{encode_record, RecordHeader};
use ndpdb_formats::{Lpn, RecId, TableId, TxId, Vid};
use ndpdb_host::Result;

/// Bytes per second of one thread summing `bytes` bytes front to back
/// (best of three passes).
pub fn sequential_read_rate(bytes: usize) -> f64 {
    let words: Vec<u64> = (0..(bytes / 8).max(1) as u64).collect();
    let mut best = f64::MAX;
    let mut sink = 0u64;
    for _ in 0..3 {
        let t = Instant::now();
        sink = sink.wrapping_add(words.iter().fold(0u64, |a, w| a.wrapping_add(*w)));
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(sink);
    (words.len() * 8) as f64 / best.max(1e-9)
}

/// A byte span of a page: `(offset, length)`.
pub type Span = (usize, usize);

/// The spans of a full ORDER-LINE page that Query-SUM reads when the zone
/// maps decide both predicates (the common case): header and directory,
/// the zone maps of `ol_delivery_d` and `ol_quantity`, the `ol_amount`
/// minipage. Taken from a page built by the engine's own page builder.
pub fn query_sum_spans() -> Result<Vec<Span>> {
    let schema = crate::chbench::order_line_schema();
    let types: Vec<_> = schema.columns.iter().map(|c| c.ty).collect();
    let mut page = PageBuf::new(TableId(1), Lpn(1), &types);
    for (i, row) in crate::chbench::OrderLines::new(u64::MAX)?.enumerate() {
        let header = RecordHeader {
            creator: TxId(1),
            pred: RecId::NULL,
            vid: Vid(i as u64),
            flags: 0,
        };
        let mut w = Writer::new();
        encode_record(&header, &types, &row, &mut w)?;
        if page.append(w.as_slice())?.is_none() {
            break;
        }
    }
    page.seal();
    let bytes = page.as_bytes();
    let column = |name: &str| {
        let c = schema
            .columns
            .iter()
            .position(|c| c.name == name)
            .expect("ORDER-LINE column");
        minipage_span(bytes, c).expect("a full page")
    };
    let (delivery, _) = column("ol_delivery_d");
    let (quantity, _) = column("ol_quantity");
    Ok(vec![
        (0, PAGE_HEADER_SIZE + DIR_ENTRY_SIZE * types.len()),
        (delivery, ZONE_SIZE),
        (quantity, ZONE_SIZE),
        column("ol_amount"),
    ])
}

/// Bytes per second of one thread summing the 8-byte words of `spans` in
/// each of `pages` consecutive 8 KiB pages (best of three passes), and
/// the bytes one pass sums.
pub fn page_spans_read_rate(pages: usize, spans: &[Span]) -> (f64, u64) {
    const WORDS: usize = PAGE_SIZE / 8;
    let buf: Vec<u64> = (0..(pages.max(1) * WORDS) as u64).collect();
    let words: Vec<(usize, usize)> = spans
        .iter()
        .map(|&(off, len)| {
            let first = (off / 8).min(WORDS);
            (first, (off + len).div_ceil(8).clamp(first, WORDS))
        })
        .collect();
    let per_page: usize = words.iter().map(|(a, b)| (b - a) * 8).sum();
    let mut best = f64::MAX;
    let mut sink = 0u64;
    for _ in 0..3 {
        let t = Instant::now();
        let mut acc = 0u64;
        for page in buf.chunks_exact(WORDS) {
            for &(a, b) in &words {
                acc = page[a..b].iter().fold(acc, |s, w| s.wrapping_add(*w));
            }
        }
        sink = sink.wrapping_add(acc);
        best = best.min(t.elapsed().as_secs_f64());
    }
    std::hint::black_box(sink);
    let bytes = (per_page * pages.max(1)) as u64;
    (bytes as f64 / best.max(1e-9), bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_sum_spans_lie_inside_a_page_in_order() {
        let spans = query_sum_spans().unwrap();
        assert_eq!(spans.len(), 4);
        let mut end = 0;
        for &(off, len) in &spans {
            assert!(off >= end, "{spans:?}");
            assert!(len > 0 && off + len <= PAGE_SIZE, "{spans:?}");
            end = off + len;
        }
        // The summed NUMERIC minipage holds 16 mantissa bytes per row.
        assert!(spans[3].1 > 16 * 30, "{spans:?}");
    }

    #[test]
    fn page_spans_count_the_bytes_they_sum() {
        let (rate, bytes) = page_spans_read_rate(16, &[(0, 64), (100, 20)]);
        // 64 bytes, then words 12..15 (bytes 96..120).
        assert_eq!(bytes, 16 * (64 + 24));
        assert!(rate > 0.0);
    }
}
