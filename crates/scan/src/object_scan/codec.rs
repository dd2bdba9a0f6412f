//! The bytes of `scan_v1`: request, reply and the serving entry point.
//!
//! ```text
//!  request  "NOS1" │ snapshot │ n u32, n DataType │ n u32, n values
//!           │ filter: 0 | 1 Program │ op: 0 Project (n u32, n u32 columns)
//!                                     │ 1 Aggregate (n u32 Programs, n u32 AggSpecs)
//!                                     │ 2 Versions
//!           │ pages: n u32, n × (LPN u64, index u32)
//!           │ chunks: n u32, n × (chunk u64, runs u32, runs × (page u32, first slot u16, count u16))
//!           │ reply cap u32
//!  reply    0 │ tuples, pages, pruned, bytes touched: 4 × u64
//!             │ rows: n u32, n × (chunk u64, rows u32, width u32, values)
//!             │ groups: n u32, n × (key bytes, n u32 values, n u32 Accs)
//!             │ deferred: n u32, n × (chunk u64, RecId u64)
//!           1 │ bytes needed u64                    (over the cap: nothing else)
//!           2 │ SQLSTATE str │ message str          (the scan failed)
//! ```
//!
//! A chunk's heads go as runs of consecutive slots on one page: a table
//! as loaded costs a few bytes per page, not eight per row.

use ndpdb_formats::agg::{Acc, AggSpec};
use ndpdb_formats::codec::{Reader, Writer};
use ndpdb_formats::expr::{decode_value, encode_value, Program};
use ndpdb_formats::ids::MAX_LPN;
use ndpdb_formats::rows::{decode_rows, encode_rows};
use ndpdb_formats::visibility::Snapshot;
use ndpdb_formats::{DataType, Error, Lpn, RecId, Result, SqlState};
use rustc_hash::FxHashMap;

use super::{run, ObjectOp, ObjectPlan, ObjectReply, ObjectScan, Outcome};
use crate::{Groups, PipelineOp};

const MAGIC: &[u8; 4] = b"NOS1";
const DONE: u8 = 0;
/// The reply's status byte when the result is over the request's cap.
pub const REPLY_TOO_LARGE: u8 = 1;
const FAILED: u8 = 2;

/// A request's bytes from its parts: the job's plan, shared by all its
/// objects, and one object's pages and heads.
pub fn encode_request(
    plan: &ObjectPlan,
    pages: &[(Lpn, u32)],
    chunks: &[(u64, Vec<RecId>)],
    reply_cap: u32,
) -> Vec<u8> {
    let mut w = Writer::new();
    w.raw(MAGIC);
    plan.snapshot.encode(&mut w);
    w.u32(plan.types.len() as u32);
    plan.types.iter().for_each(|t| t.encode(&mut w));
    w.u32(plan.params.len() as u32);
    plan.params.iter().for_each(|v| encode_value(v, &mut w));
    match &plan.filter {
        Some(p) => p.encode(w.u8(1)),
        None => {
            w.u8(0);
        }
    }
    match &plan.op {
        ObjectOp::Versions => {
            w.u8(2);
        }
        ObjectOp::Pipeline(PipelineOp::Project { columns }) => {
            w.u8(0).u32(columns.len() as u32);
            columns.iter().for_each(|c| {
                w.u32(*c);
            });
        }
        ObjectOp::Pipeline(PipelineOp::Aggregate { groups, aggs }) => {
            w.u8(1).u32(groups.len() as u32);
            groups.iter().for_each(|g| g.encode(&mut w));
            w.u32(aggs.len() as u32);
            aggs.iter().for_each(|a| a.encode(&mut w));
        }
    }
    w.u32(pages.len() as u32);
    let mut position = FxHashMap::default();
    for (i, (lpn, index)) in pages.iter().enumerate() {
        w.u64(lpn.0).u32(*index);
        position.insert(*lpn, i as u32);
    }
    w.u32(chunks.len() as u32);
    let mut sorted: Vec<RecId> = Vec::new();
    for (chunk, heads) in chunks {
        sorted.clear();
        sorted.extend(heads.iter().filter(|h| !h.is_null()));
        sorted.sort_unstable();
        let mut runs: Vec<(u32, u16, u16)> = Vec::new();
        for h in &sorted {
            let page = position.get(&h.lpn()).copied().unwrap_or(u32::MAX);
            match runs.last_mut() {
                Some((p, first, n))
                    if *p == page
                        && u32::from(*first) + u32::from(*n) == u32::from(h.slot())
                        && *n < u16::MAX =>
                {
                    *n += 1
                }
                _ => runs.push((page, h.slot(), 1)),
            }
        }
        w.u64(*chunk).u32(runs.len() as u32);
        for (page, first, n) in runs {
            w.u32(page).u16(first).u16(n);
        }
    }
    w.u32(reply_cap);
    w.into_inner()
}

impl ObjectScan {
    pub fn encode(&self) -> Vec<u8> {
        encode_request(&self.plan, &self.pages, &self.chunks, self.reply_cap)
    }

    pub fn decode(bytes: &[u8]) -> Result<ObjectScan> {
        let mut r = Reader::new(bytes);
        if r.take(4)? != MAGIC {
            return Err(Error::corrupted("not an object scan request (NOS1)"));
        }
        let snapshot = Snapshot::decode(&mut r)?;
        let n = r.count(1)?;
        let types = (0..n)
            .map(|_| DataType::decode(&mut r))
            .collect::<Result<Vec<_>>>()?;
        let n = r.count(1)?;
        let params = (0..n)
            .map(|_| decode_value(&mut r))
            .collect::<Result<Vec<_>>>()?;
        let filter = match r.u8()? {
            0 => None,
            1 => Some(Program::decode(&mut r)?),
            t => return Err(Error::corrupted(format!("object scan filter tag {t}"))),
        };
        let op = match r.u8()? {
            0 => {
                let n = r.count(4)?;
                let columns = (0..n).map(|_| r.u32()).collect::<Result<Vec<_>>>()?;
                if let Some(c) = columns.iter().find(|&&c| c as usize >= types.len()) {
                    return Err(Error::corrupted(format!(
                        "projected column {c} of {}",
                        types.len()
                    )));
                }
                ObjectOp::Pipeline(PipelineOp::Project { columns })
            }
            1 => {
                let n = r.count(1)?;
                let groups = (0..n)
                    .map(|_| Program::decode(&mut r))
                    .collect::<Result<Vec<_>>>()?;
                let n = r.count(1)?;
                let aggs = (0..n)
                    .map(|_| AggSpec::decode(&mut r))
                    .collect::<Result<Vec<_>>>()?;
                ObjectOp::Pipeline(PipelineOp::Aggregate { groups, aggs })
            }
            2 => ObjectOp::Versions,
            t => return Err(Error::corrupted(format!("object scan operation tag {t}"))),
        };
        let n = r.count(12)?;
        let mut pages = Vec::with_capacity(n);
        for _ in 0..n {
            let lpn = r.u64()?;
            if lpn > MAX_LPN {
                return Err(Error::corrupted(format!("LPN {lpn} in an object scan")));
            }
            pages.push((Lpn(lpn), r.u32()?));
        }
        let n = r.count(12)?;
        let mut chunks = Vec::with_capacity(n);
        for _ in 0..n {
            let chunk = r.u64()?;
            let runs = r.count(8)?;
            let mut heads = Vec::new();
            for _ in 0..runs {
                let page = r.u32()? as usize;
                let (first, count) = (r.u16()?, r.u16()?);
                let &(lpn, _) = pages
                    .get(page)
                    .ok_or_else(|| Error::corrupted(format!("heads on page {page} of {n}")))?;
                if u32::from(first) + u32::from(count) > u32::from(u16::MAX) + 1 {
                    return Err(Error::corrupted("a run of heads past the last slot"));
                }
                heads.extend((0..count).map(|i| RecId::new(lpn, first + i)));
            }
            chunks.push((chunk, heads));
        }
        let reply_cap = r.u32()?;
        r.finish("object scan request")?;
        Ok(ObjectScan {
            plan: ObjectPlan {
                snapshot,
                types,
                params,
                filter,
                op,
            },
            pages,
            chunks,
            reply_cap,
        })
    }
}

fn encode_groups(groups: &Groups, w: &mut Writer) {
    w.u32(groups.len() as u32);
    for (key, (values, accs)) in groups {
        w.bytes(key).u32(values.len() as u32);
        values.iter().for_each(|v| encode_value(v, w));
        w.u32(accs.len() as u32);
        accs.iter().for_each(|a| a.encode(w));
    }
}

fn decode_groups(r: &mut Reader<'_>) -> Result<Groups> {
    let n = r.count(12)?;
    let mut groups = Groups::with_capacity(n);
    for _ in 0..n {
        let key = r.bytes()?.to_vec();
        let k = r.count(1)?;
        let values = (0..k).map(|_| decode_value(r)).collect::<Result<_>>()?;
        let k = r.count(1)?;
        let accs = (0..k).map(|_| Acc::decode(r)).collect::<Result<_>>()?;
        if groups.insert(key, (values, accs)).is_some() {
            return Err(Error::corrupted("a group twice in one partial"));
        }
    }
    Ok(groups)
}

impl ObjectReply {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u8(DONE)
            .u64(self.tuples)
            .u64(self.pages)
            .u64(self.pages_pruned)
            .u64(self.bytes_touched);
        w.u32(self.rows.len() as u32);
        for (chunk, rows) in &self.rows {
            w.u64(*chunk);
            encode_rows(rows, &mut w);
        }
        encode_groups(&self.groups, &mut w);
        w.u32(self.deferred.len() as u32);
        for (chunk, rid) in &self.deferred {
            w.u64(*chunk).u64(rid.raw());
        }
        w.into_inner()
    }
}

/// The class method's body: decodes the request, runs it over `object`
/// and encodes the reply, a failure included (as its SQLSTATE and
/// message); never panics on bad bytes.
pub fn serve(request: &[u8], object: &[u8]) -> Vec<u8> {
    let done = ObjectScan::decode(request).and_then(|req| Ok((run(&req, object)?, req.reply_cap)));
    match done {
        Ok((reply, cap)) => {
            let bytes = reply.encode();
            if bytes.len() > cap as usize {
                let mut w = Writer::new();
                w.u8(REPLY_TOO_LARGE).u64(bytes.len() as u64);
                w.into_inner()
            } else {
                bytes
            }
        }
        Err(e) => {
            let message = match &e {
                Error::Corrupted(m) => m,
                Error::Sql { message, .. } => message,
            };
            let mut w = Writer::new();
            w.u8(FAILED).str(e.sqlstate().code()).str(message);
            w.into_inner()
        }
    }
}

/// Decodes what [`serve`] returned; a failure in the OSD comes back as
/// its error.
pub fn decode_reply(bytes: &[u8]) -> Result<Outcome> {
    let mut r = Reader::new(bytes);
    let outcome = match r.u8()? {
        DONE => {
            let mut reply = ObjectReply {
                tuples: r.u64()?,
                pages: r.u64()?,
                pages_pruned: r.u64()?,
                bytes_touched: r.u64()?,
                ..ObjectReply::default()
            };
            let n = r.count(16)?;
            for _ in 0..n {
                let chunk = r.u64()?;
                reply.rows.push((chunk, decode_rows(&mut r)?));
            }
            reply.groups = decode_groups(&mut r)?;
            let n = r.count(16)?;
            for _ in 0..n {
                reply.deferred.push((r.u64()?, RecId::from_raw(r.u64()?)));
            }
            Outcome::Done(reply)
        }
        REPLY_TOO_LARGE => Outcome::TooLarge(r.u64()?),
        FAILED => {
            let code = SqlState::from_code(r.str()?);
            let message = r.str()?.to_string();
            r.finish("object scan failure")?;
            return Err(if code == SqlState::DATA_CORRUPTED {
                Error::corrupted(message)
            } else {
                Error::sql(code, message)
            });
        }
        t => return Err(Error::corrupted(format!("object scan reply status {t}"))),
    };
    r.finish("object scan reply")?;
    Ok(outcome)
}
