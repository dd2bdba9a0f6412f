//! `COPY {table [(columns)] | (query)} TO STDOUT` in text and CSV
//! format, as psql's `\copy … to` and pg_dump read it.
//!
//! ```text
//!  Query (or Parse/Bind/Execute) "COPY t TO STDOUT (FORMAT csv, HEADER)"
//!    ─► SELECT … runs in the session (its transaction rules)
//!    ─► CopyOutResponse (text, one format code per column)
//!    ─► CopyData: [header], one record per row, ~64 KiB per message
//!    ─► CopyDone ─► CommandComplete "COPY n"
//! ```
//!
//! Values are written in PostgreSQL's text form. Text format escapes
//! backslash, the delimiter and control characters and writes NULL as
//! the null string (`\N`); CSV quotes a field that holds the delimiter,
//! the quote, a line break or reads as the null string, doubling quotes.

use bytes::Bytes;
use pgwire::messages::copy::{CopyData, CopyDone, CopyOutResponse};
use pgwire::messages::PgWireBackendMessage;
use tokio::io::{AsyncRead, AsyncWrite};

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Error, Output};

use crate::conn_io::{Connection, Handled};
use crate::copy::{CopyFormat, CopyOutSpec};

/// Bytes gathered before a CopyData message goes out.
const MESSAGE_BYTES: usize = 64 * 1024;

/// Runs `COPY … TO STDOUT` for `spec` to its CommandComplete.
pub(crate) async fn run<R, W>(conn: &mut Connection<R, W>, spec: &CopyOutSpec) -> Handled
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (columns, rows) = match conn.session.execute(&spec.query)?.pop() {
        Some(Output::Rows { columns, rows }) => (columns, rows),
        _ => {
            return Err(Error::new(
                SqlState::FEATURE_NOT_SUPPORTED,
                "COPY query must have a RETURNING clause or return rows",
            )
            .into())
        }
    };
    let n = i16::try_from(columns.len()).unwrap_or(i16::MAX);
    conn.send(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
        0,
        n,
        vec![0; n as usize],
    )))
    .await?;
    let mut buf = Vec::with_capacity(MESSAGE_BYTES * 2);
    if let CopyFormat::Csv { header: true, .. } = spec.format {
        let names: Vec<Value> = columns
            .iter()
            .map(|c| Value::Text(c.name.clone()))
            .collect();
        record(&spec.format, &names, &mut buf);
    }
    for row in &rows {
        record(&spec.format, row, &mut buf);
        if buf.len() >= MESSAGE_BYTES {
            let data = Bytes::from(std::mem::take(&mut buf));
            conn.send(PgWireBackendMessage::CopyData(CopyData::new(data)))
                .await?;
        }
    }
    if !buf.is_empty() {
        conn.send(PgWireBackendMessage::CopyData(CopyData::new(Bytes::from(
            buf,
        ))))
        .await?;
    }
    conn.send(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    conn.command_complete(format!("COPY {}", rows.len())).await
}

/// Appends one record (a line) for `row` to `out`.
pub fn record(format: &CopyFormat, row: &[Value], out: &mut Vec<u8>) {
    for (i, v) in row.iter().enumerate() {
        match format {
            CopyFormat::Text { delimiter, null } => {
                if i > 0 {
                    out.push(*delimiter);
                }
                match v.to_pg_text() {
                    None => out.extend_from_slice(null.as_bytes()),
                    Some(s) => text_field(s.as_bytes(), *delimiter, out),
                }
            }
            CopyFormat::Csv {
                delimiter,
                quote,
                escape,
                null,
                ..
            } => {
                if i > 0 {
                    out.push(*delimiter);
                }
                match v.to_pg_text() {
                    None => out.extend_from_slice(null.as_bytes()),
                    Some(s) => csv_field(s.as_bytes(), *delimiter, *quote, *escape, null, out),
                }
            }
        }
    }
    out.push(b'\n');
}

/// PostgreSQL's text-format escapes (copyto.c `CopyAttributeOutText`).
fn text_field(s: &[u8], delimiter: u8, out: &mut Vec<u8>) {
    for &b in s {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0b => out.extend_from_slice(b"\\v"),
            b if b == delimiter => {
                out.push(b'\\');
                out.push(b);
            }
            b => out.push(b),
        }
    }
}

/// A CSV field, quoted where it must be (copyto.c `CopyAttributeOutCSV`).
fn csv_field(s: &[u8], delimiter: u8, quote: u8, escape: u8, null: &str, out: &mut Vec<u8>) {
    let needs_quotes = s == null.as_bytes()
        || s.is_empty()
        || s == b"\\."
        || s.iter()
            .any(|&b| b == delimiter || b == quote || b == b'\n' || b == b'\r');
    if !needs_quotes {
        out.extend_from_slice(s);
        return;
    }
    out.push(quote);
    for &b in s {
        if b == quote || b == escape {
            out.push(escape);
        }
        out.push(b);
    }
    out.push(quote);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(format: &CopyFormat, row: &[Value]) -> String {
        let mut out = Vec::new();
        record(format, row, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_format_escapes_like_postgres() {
        let f = CopyFormat::Text {
            delimiter: b'\t',
            null: "\\N".into(),
        };
        let row = [
            Value::Int(1),
            Value::Text("a\tb\\c\nd".into()),
            Value::Null,
            Value::Bytea(vec![0x0a, 0xff]),
        ];
        assert_eq!(line(&f, &row), "1\ta\\tb\\\\c\\nd\t\\N\t\\\\x0aff\n");
    }

    #[test]
    fn csv_quotes_only_where_needed() {
        let f = CopyFormat::Csv {
            delimiter: b',',
            quote: b'"',
            escape: b'"',
            null: String::new(),
            header: false,
        };
        let row = [
            Value::Text("plain".into()),
            Value::Text("a,b".into()),
            Value::Text("say \"hi\"".into()),
            Value::Text(String::new()),
            Value::Null,
        ];
        assert_eq!(line(&f, &row), "plain,\"a,b\",\"say \"\"hi\"\"\",\"\",\n");
    }
}
