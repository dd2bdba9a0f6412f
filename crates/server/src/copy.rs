//! `COPY table [(columns)] FROM STDIN` in text and CSV format (DESIGN.md
//! §11), as psql's `\copy`, pgbench and loaders send it; the options of
//! `COPY … TO STDOUT` (copy_out.rs) too.
//!
//! ```text
//!  Query "COPY t FROM STDIN (FORMAT csv)" ─► CopyInResponse
//!  CopyData* ─► split into records (a record may span messages) ─►
//!               each batch inserted as one statement through a prepared
//!               INSERT's plan, fields as text cast to the column types
//!  CopyDone  ─► CommandComplete "COPY n" (or the first error)
//! ```
//!
//! A COPY outside a transaction block runs in the implicit transaction of
//! its Query (or of the extended protocol up to Sync): all rows or none.
//! Inside a block, an error fails the block like any other statement. The
//! sub-protocol (CopyData / CopyDone / CopyFail) is copy_in.rs.

use sqlparser::ast::{
    CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Statement,
};

use ndpdb_formats::{SqlState, Value};
use ndpdb_sql::{Error, Result, Session};

/// How records are written.
#[derive(Clone, Debug, PartialEq)]
pub enum CopyFormat {
    /// PostgreSQL's text format: `\N` is NULL, backslash escapes.
    Text { delimiter: u8, null: String },
    /// CSV: quoted fields, unquoted empty (or `null`) is NULL.
    Csv {
        delimiter: u8,
        quote: u8,
        escape: u8,
        null: String,
        header: bool,
    },
}

/// A parsed `COPY … FROM STDIN`.
#[derive(Clone, Debug)]
pub struct CopySpec {
    pub table: String,
    /// Empty: every column in table order.
    pub columns: Vec<String>,
    pub format: CopyFormat,
}

fn unsupported(what: &str) -> Error {
    Error::new(
        SqlState::FEATURE_NOT_SUPPORTED,
        format!("COPY {what} is not supported"),
    )
}

fn one_byte(c: char, what: &str) -> Result<u8> {
    if c.is_ascii() {
        Ok(c as u8)
    } else {
        Err(Error::new(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("COPY {what} must be a single one-byte character"),
        ))
    }
}

/// The COPY FROM spec of a statement, or `None` if it is not a COPY
/// FROM (see [`copy_out_spec`] for COPY TO).
pub fn copy_spec(stmt: &Statement) -> Option<Result<CopySpec>> {
    let Statement::Copy {
        source,
        to,
        target,
        options,
        legacy_options,
        ..
    } = stmt
    else {
        return None;
    };
    if *to {
        return None;
    }
    Some((|| {
        if *target != CopyTarget::Stdin {
            return Err(unsupported("from a file or program (use FROM STDIN)"));
        }
        let CopySource::Table {
            table_name,
            columns,
        } = source
        else {
            return Err(unsupported("from a query"));
        };
        Ok(CopySpec {
            table: table_name.to_string(),
            columns: columns.iter().map(|c| c.value.clone()).collect(),
            format: copy_format(options, legacy_options)?,
        })
    })())
}

/// A parsed `COPY {table [(columns)] | (query)} TO STDOUT`.
#[derive(Clone, Debug)]
pub struct CopyOutSpec {
    /// The SELECT whose rows are sent.
    pub query: String,
    pub format: CopyFormat,
}

/// The COPY TO spec of a statement, or `None` if it is not a COPY TO.
pub fn copy_out_spec(stmt: &Statement) -> Option<Result<CopyOutSpec>> {
    let Statement::Copy {
        source,
        to: true,
        target,
        options,
        legacy_options,
        ..
    } = stmt
    else {
        return None;
    };
    Some((|| {
        if *target != CopyTarget::Stdout {
            return Err(unsupported("to a file or program (use TO STDOUT)"));
        }
        let query = match source {
            CopySource::Table {
                table_name,
                columns,
            } => {
                let list = if columns.is_empty() {
                    "*".to_string()
                } else {
                    columns
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                format!("SELECT {list} FROM {table_name}")
            }
            CopySource::Query(q) => q.to_string(),
        };
        Ok(CopyOutSpec {
            query,
            format: copy_format(options, legacy_options)?,
        })
    })())
}

/// The format a COPY's options (new and legacy syntax) ask for.
fn copy_format(options: &[CopyOption], legacy_options: &[CopyLegacyOption]) -> Result<CopyFormat> {
    let mut csv = false;
    let mut delimiter = None;
    let mut null = None;
    let mut header = false;
    let mut quote = b'"';
    let mut escape = None;
    for o in options {
        match o {
            CopyOption::Format(f) => match f.value.to_ascii_lowercase().as_str() {
                "csv" => csv = true,
                "text" => csv = false,
                "binary" => return Err(unsupported("in binary format")),
                other => {
                    return Err(Error::new(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("COPY format \"{other}\" not recognized"),
                    ))
                }
            },
            CopyOption::Delimiter(c) => delimiter = Some(one_byte(*c, "delimiter")?),
            CopyOption::Null(s) => null = Some(s.clone()),
            CopyOption::Header(h) => header = *h,
            CopyOption::Quote(c) => quote = one_byte(*c, "quote")?,
            CopyOption::Escape(c) => escape = Some(one_byte(*c, "escape")?),
            CopyOption::Freeze(_) => {}
            CopyOption::Encoding(e) if e.eq_ignore_ascii_case("utf8") => {}
            other => return Err(unsupported(&format!("option {other}"))),
        }
    }
    for o in legacy_options {
        match o {
            CopyLegacyOption::Csv(opts) => {
                csv = true;
                for c in opts {
                    match c {
                        CopyLegacyCsvOption::Header => header = true,
                        CopyLegacyCsvOption::Quote(q) => quote = one_byte(*q, "quote")?,
                        CopyLegacyCsvOption::Escape(e) => escape = Some(one_byte(*e, "escape")?),
                        other => return Err(unsupported(&format!("option {other}"))),
                    }
                }
            }
            CopyLegacyOption::Delimiter(c) => delimiter = Some(one_byte(*c, "delimiter")?),
            CopyLegacyOption::Null(s) => null = Some(s.clone()),
            CopyLegacyOption::Header => header = true,
            CopyLegacyOption::Binary => return Err(unsupported("in binary format")),
            other => return Err(unsupported(&format!("option {other}"))),
        }
    }
    if header && !csv {
        return Err(Error::new(
            SqlState::FEATURE_NOT_SUPPORTED,
            "COPY HEADER available only in CSV mode",
        ));
    }
    Ok(if csv {
        CopyFormat::Csv {
            delimiter: delimiter.unwrap_or(b','),
            quote,
            escape: escape.unwrap_or(quote),
            null: null.unwrap_or_default(),
            header,
        }
    } else {
        CopyFormat::Text {
            delimiter: delimiter.unwrap_or(b'\t'),
            null: null.unwrap_or_else(|| "\\N".into()),
        }
    })
}

fn bad_copy(line: u64, what: impl Into<String>) -> Error {
    Error::new(SqlState::INVALID_TEXT_REPRESENTATION, what.into())
        .with_detail(format!("COPY input, line {line}"))
}

/// A field's bytes as text (COPY data must be UTF-8).
fn utf8(bytes: Vec<u8>, line: u64) -> Result<String> {
    crate::wire::body::utf8(&bytes)
        .map_err(|e| e.with_detail(format!("COPY input, line {line}")))?;
    // Checked just above: valid UTF-8 without NUL.
    Ok(String::from_utf8(bytes).unwrap_or_default())
}

/// A field without escapes as text: checked and copied once.
fn utf8_slice(bytes: &[u8], line: u64) -> Result<String> {
    crate::wire::body::utf8(bytes)
        .map(str::to_owned)
        .map_err(|e| e.with_detail(format!("COPY input, line {line}")))
}

/// One field of a record: `None` is NULL.
type Field = Option<String>;

/// Splits a text-format line into fields.
fn text_fields(line: &[u8], delimiter: u8, null: &str, lineno: u64) -> Result<Vec<Field>> {
    let mut fields = Vec::with_capacity(memchr::memchr_iter(delimiter, line).count() + 1);
    let mut from = 0;
    let ends = memchr::memchr_iter(delimiter, line).chain(std::iter::once(line.len()));
    for end in ends {
        let raw = &line[from..end];
        from = end + 1;
        if raw == null.as_bytes() {
            fields.push(None);
            continue;
        }
        if memchr::memchr(b'\\', raw).is_none() {
            fields.push(Some(utf8_slice(raw, lineno)?));
            continue;
        }
        let mut out = Vec::with_capacity(raw.len());
        let mut i = 0;
        while i < raw.len() {
            let b = raw[i];
            i += 1;
            if b != b'\\' {
                out.push(b);
                continue;
            }
            let Some(&e) = raw.get(i) else {
                return Err(bad_copy(lineno, "end-of-copy marker corrupt"));
            };
            i += 1;
            match e {
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(11),
                b'0'..=b'7' => {
                    let mut v = (e - b'0') as u32;
                    for _ in 0..2 {
                        match raw.get(i) {
                            Some(d @ b'0'..=b'7') => {
                                v = v * 8 + (d - b'0') as u32;
                                i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(v as u8);
                }
                b'x' => {
                    let mut v = 0u32;
                    let mut n = 0;
                    while n < 2 {
                        match raw.get(i).and_then(|d| (*d as char).to_digit(16)) {
                            Some(d) => {
                                v = v * 16 + d;
                                i += 1;
                                n += 1;
                            }
                            None => break,
                        }
                    }
                    if n == 0 {
                        out.push(b'x');
                    } else {
                        out.push(v as u8);
                    }
                }
                other => out.push(other),
            }
        }
        fields.push(Some(utf8(out, lineno)?));
    }
    Ok(fields)
}

/// Streams records out of CopyData chunks.
pub struct CopyIn {
    pub spec: CopySpec,
    buf: Vec<u8>,
    /// Lines consumed so far (for error messages and HEADER).
    line: u64,
    /// `\.` seen: the rest is ignored.
    ended: bool,
}

impl CopyIn {
    pub fn new(spec: CopySpec) -> CopyIn {
        CopyIn {
            spec,
            buf: Vec::new(),
            line: 0,
            ended: false,
        }
    }

    /// Appends data and returns the records that are now complete.
    pub fn push(&mut self, data: &[u8]) -> Result<Vec<Vec<Field>>> {
        if self.ended {
            return Ok(Vec::new());
        }
        self.buf.extend_from_slice(data);
        self.records(false)
    }

    /// The records left at the end of the data (a last line without `\n`).
    pub fn finish(&mut self) -> Result<Vec<Vec<Field>>> {
        if self.ended {
            return Ok(Vec::new());
        }
        self.records(true)
    }

    fn records(&mut self, at_end: bool) -> Result<Vec<Vec<Field>>> {
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(len) = self.record_len(start, at_end)? {
            let mut rec = &self.buf[start..start + len];
            start += len;
            if rec.last() == Some(&b'\n') {
                rec = &rec[..rec.len() - 1];
            }
            if rec.last() == Some(&b'\r') {
                rec = &rec[..rec.len() - 1];
            }
            self.line += 1;
            if rec == b"\\." {
                self.ended = true;
                break;
            }
            let fields = match &self.spec.format {
                CopyFormat::Text { delimiter, null } => {
                    text_fields(rec, *delimiter, null, self.line)?
                }
                CopyFormat::Csv {
                    delimiter,
                    quote,
                    escape,
                    null,
                    header,
                } => {
                    if *header && self.line == 1 {
                        continue;
                    }
                    csv_fields(rec, *delimiter, *quote, *escape, null, self.line)?
                }
            };
            out.push(fields);
        }
        self.buf.drain(..start);
        if self.ended {
            self.buf.clear();
        }
        Ok(out)
    }

    /// Length of the next complete record at `start` (with its `\n`).
    /// In CSV a quoted newline does not end the record.
    fn record_len(&self, start: usize, at_end: bool) -> Result<Option<usize>> {
        let rest = &self.buf[start..];
        if rest.is_empty() {
            return Ok(None);
        }
        let (quote, escape) = match &self.spec.format {
            CopyFormat::Csv { quote, escape, .. } => (Some(*quote), *escape),
            CopyFormat::Text { .. } => match memchr::memchr(b'\n', rest) {
                // Text: a record is a line (an escaped newline is `\n`).
                Some(at) => return Ok(Some(at + 1)),
                None if at_end => return Ok(Some(rest.len())),
                None => return Ok(None),
            },
        };
        let mut in_quotes = false;
        let mut i = 0;
        while i < rest.len() {
            let b = rest[i];
            if let Some(q) = quote {
                if in_quotes && b == escape && escape != q && rest.get(i + 1).is_some() {
                    i += 2;
                    continue;
                }
                if b == q {
                    in_quotes = !in_quotes;
                }
            }
            if b == b'\n' && !in_quotes {
                return Ok(Some(i + 1));
            }
            i += 1;
        }
        if at_end {
            if in_quotes {
                return Err(bad_copy(self.line + 1, "unterminated CSV quoted field"));
            }
            return Ok(Some(rest.len()));
        }
        Ok(None)
    }
}

/// Splits one CSV record into fields.
fn csv_fields(
    rec: &[u8],
    delimiter: u8,
    quote: u8,
    escape: u8,
    null: &str,
    lineno: u64,
) -> Result<Vec<Field>> {
    let mut fields = Vec::new();
    let mut i = 0;
    loop {
        let mut out = Vec::new();
        let mut quoted = false;
        let mut in_quotes = false;
        while i < rec.len() {
            let b = rec[i];
            if in_quotes {
                if b == escape && rec.get(i + 1) == Some(&quote) {
                    out.push(quote);
                    i += 2;
                    continue;
                }
                if escape != quote && b == escape && i + 1 < rec.len() {
                    out.push(rec[i + 1]);
                    i += 2;
                    continue;
                }
                if b == quote {
                    in_quotes = false;
                } else {
                    out.push(b);
                }
            } else if b == quote {
                in_quotes = true;
                quoted = true;
            } else if b == delimiter {
                break;
            } else {
                out.push(b);
            }
            i += 1;
        }
        if in_quotes {
            return Err(bad_copy(lineno, "unterminated CSV quoted field"));
        }
        let s = utf8(out, lineno)?;
        fields.push(if !quoted && s == null { None } else { Some(s) });
        if i >= rec.len() {
            break;
        }
        i += 1; // the delimiter
    }
    Ok(fields)
}

/// Inserts records through the plan of one prepared INSERT (which checks
/// the table and columns as INSERT would), each CopyData's records as one
/// batch.
pub struct CopyLoader {
    insert: ndpdb_sql::session::Prepared,
    columns: usize,
    pub rows: u64,
}

impl CopyLoader {
    /// Prepares the INSERT for `spec` (checks table and columns).
    pub fn new(session: &mut Session, spec: &CopySpec) -> Result<CopyLoader> {
        session.start_statement();
        let columns: Vec<String> = if spec.columns.is_empty() {
            let table = session
                .database()
                .tables()
                .into_iter()
                .find(|t| t.name.eq_ignore_ascii_case(&spec.table))
                .ok_or_else(|| {
                    Error::new(
                        SqlState::UNDEFINED_TABLE,
                        format!("relation \"{}\" does not exist", spec.table),
                    )
                })?;
            table
                .schema
                .columns
                .iter()
                .map(|c| c.name.clone())
                .collect()
        } else {
            spec.columns.clone()
        };
        let quoted: Vec<String> = columns
            .iter()
            .map(|c| format!("\"{}\"", c.replace('"', "\"\"")))
            .collect();
        let params: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES ({})",
            spec.table,
            quoted.join(", "),
            params.join(", ")
        );
        Ok(CopyLoader {
            insert: session.prepare(&sql)?,
            columns: columns.len(),
            rows: 0,
        })
    }

    /// Columns per record.
    pub fn columns(&self) -> usize {
        self.columns
    }

    /// Inserts records as one batch, numbering them for errors.
    pub fn load(&mut self, session: &mut Session, records: Vec<Vec<Field>>) -> Result<()> {
        if records.is_empty() {
            return Ok(());
        }
        let mut rows = Vec::with_capacity(records.len());
        for (i, rec) in records.into_iter().enumerate() {
            if rec.len() != self.columns {
                let what = if rec.len() < self.columns {
                    "missing data for a column"
                } else {
                    "extra data after last expected column"
                };
                // Rows before it in this batch are checked, not yet loaded.
                return Err(bad_copy(self.rows + i as u64 + 1, what));
            }
            let row: Vec<Value> = rec
                .into_iter()
                .map(|f| f.map_or(Value::Null, Value::Text))
                .collect();
            rows.push(row);
        }
        let first = self.rows + 1;
        let on_error = |i: usize, e: Error| match e.detail {
            Some(_) => e,
            None => e.with_detail(format!("COPY input, row {}", first + i as u64)),
        };
        self.rows += session.insert_rows(&self.insert, rows, &on_error)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(format: CopyFormat) -> CopySpec {
        CopySpec {
            table: "t".into(),
            columns: vec![],
            format,
        }
    }

    fn text() -> CopyFormat {
        CopyFormat::Text {
            delimiter: b'\t',
            null: "\\N".into(),
        }
    }

    fn csv(header: bool) -> CopyFormat {
        CopyFormat::Csv {
            delimiter: b',',
            quote: b'"',
            escape: b'"',
            null: String::new(),
            header,
        }
    }

    fn s(x: &str) -> Field {
        Some(x.to_string())
    }

    #[test]
    fn text_records_span_chunks_and_unescape() {
        let mut c = CopyIn::new(spec(text()));
        assert!(c.push(b"1\ta\\tb\n2\t\\N").unwrap().len() == 1);
        let rest = c.push(b"\n3\t\\x41\\101\n\\.\nignored\n").unwrap();
        assert_eq!(rest, vec![vec![s("2"), None], vec![s("3"), s("AA")]]);
        assert!(c.finish().unwrap().is_empty());
    }

    #[test]
    fn csv_quotes_newlines_header_and_nulls() {
        let mut c = CopyIn::new(spec(csv(true)));
        let mut recs = c
            .push(b"id,name\n1,\"a,\"\"b\"\"\nc\"\n2,\n3,\"\"")
            .unwrap();
        recs.extend(c.finish().unwrap());
        assert_eq!(
            recs,
            vec![
                vec![s("1"), s("a,\"b\"\nc")],
                vec![s("2"), None],
                vec![s("3"), s("")],
            ]
        );
    }

    #[test]
    fn unterminated_quote_is_an_error() {
        let mut c = CopyIn::new(spec(csv(false)));
        assert!(c.push(b"1,\"abc\n").unwrap().is_empty());
        let e = c.finish().unwrap_err();
        assert_eq!(e.code, SqlState::INVALID_TEXT_REPRESENTATION);
    }

    #[test]
    fn options_parse() {
        let stmts = ndpdb_sql::session::parse(
            "COPY t (a, b) FROM STDIN WITH (FORMAT csv, HEADER true, DELIMITER ';')",
        )
        .unwrap();
        let spec = copy_spec(&stmts[0]).unwrap().unwrap();
        assert_eq!(spec.columns, vec!["a", "b"]);
        assert!(matches!(
            spec.format,
            CopyFormat::Csv {
                delimiter: b';',
                header: true,
                ..
            }
        ));
        let stmts =
            ndpdb_sql::session::parse("COPY t (a, b) TO STDOUT (FORMAT csv, HEADER)").unwrap();
        assert!(copy_spec(&stmts[0]).is_none());
        let out = copy_out_spec(&stmts[0]).unwrap().unwrap();
        assert_eq!(out.query, "SELECT a, b FROM t");
        assert!(matches!(out.format, CopyFormat::Csv { header: true, .. }));
        let stmts = ndpdb_sql::session::parse("COPY (SELECT 1) TO '/tmp/x'").unwrap();
        let e = copy_out_spec(&stmts[0]).unwrap().unwrap_err();
        assert_eq!(e.code, SqlState::FEATURE_NOT_SUPPORTED);
    }
}
