//! Statement results and their renderings (CSV and psql-style tables).

use ndpdb_formats::{DataType, SqlState, Value};

/// A message for the client that does not stop the statement (PostgreSQL
/// sends it as a NoticeResponse of severity WARNING or NOTICE).
#[derive(Clone, Debug, PartialEq)]
pub struct Notice {
    pub severity: &'static str,
    pub code: SqlState,
    pub message: String,
    pub detail: Option<String>,
}

impl Notice {
    pub fn warning(code: SqlState, message: impl Into<String>) -> Notice {
        Notice {
            severity: "WARNING",
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// Severity NOTICE, SQLSTATE 00000 (`drop cascades to …`).
    pub fn info(message: impl Into<String>) -> Notice {
        Notice {
            severity: "NOTICE",
            code: SqlState::SUCCESSFUL,
            message: message.into(),
            detail: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Notice {
        self.detail = Some(detail.into());
        self
    }
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ResultColumn {
    pub name: String,
    pub ty: DataType,
}

/// What one statement returns.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    Rows {
        columns: Vec<ResultColumn>,
        rows: Vec<Vec<Value>>,
    },
    /// A command tag such as `INSERT 0 3`, `UPDATE 2`, `BEGIN`.
    Command { tag: String },
}

impl Output {
    pub fn command(tag: impl Into<String>) -> Output {
        Output::Command { tag: tag.into() }
    }

    /// The PostgreSQL command tag (`SELECT n` for row results).
    pub fn tag(&self) -> String {
        match self {
            Output::Rows { rows, .. } => format!("SELECT {}", rows.len()),
            Output::Command { tag } => tag.clone(),
        }
    }

    /// Rows as CSV with a header line; values in PostgreSQL text format,
    /// NULL as an empty field.
    pub fn to_csv(&self) -> String {
        let Output::Rows { columns, rows } = self else {
            return String::new();
        };
        let mut out = String::new();
        let header: Vec<String> = columns.iter().map(|c| csv_field(&c.name)).collect();
        out.push_str(&header.join(","));
        out.push('\n');
        for row in rows {
            let fields: Vec<String> = row
                .iter()
                .map(|v| v.to_pg_text().map(|s| csv_field(&s)).unwrap_or_default())
                .collect();
            out.push_str(&fields.join(","));
            out.push('\n');
        }
        out
    }

    /// A psql-like aligned table.
    pub fn to_table(&self) -> String {
        let Output::Rows { columns, rows } = self else {
            return String::new();
        };
        let cells: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|v| v.to_pg_text().unwrap_or_default())
                    .collect()
            })
            .collect();
        let mut widths: Vec<usize> = columns.iter().map(|c| c.name.chars().count()).collect();
        for r in &cells {
            for (i, c) in r.iter().enumerate() {
                widths[i] = widths[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        let head: Vec<String> = columns
            .iter()
            .zip(&widths)
            .map(|(c, w)| center(&c.name, *w))
            .collect();
        out.push_str(&head.join("|"));
        out.push('\n');
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(w + 2)).collect();
        out.push_str(&rule.join("+"));
        out.push('\n');
        for (r, row) in cells.iter().zip(rows) {
            let line: Vec<String> = r
                .iter()
                .zip(&widths)
                .zip(row)
                .map(|((c, w), v)| {
                    let pad = w - c.chars().count();
                    if matches!(
                        v,
                        Value::Int(_) | Value::BigInt(_) | Value::Double(_) | Value::Numeric(_)
                    ) {
                        format!(" {}{} ", " ".repeat(pad), c)
                    } else {
                        format!(" {}{} ", c, " ".repeat(pad))
                    }
                })
                .collect();
            out.push_str(line.join("|").trim_end());
            out.push('\n');
        }
        out.push_str(&format!(
            "({} row{})\n",
            rows.len(),
            if rows.len() == 1 { "" } else { "s" }
        ));
        out
    }
}

fn center(s: &str, w: usize) -> String {
    let n = s.chars().count();
    let left = (w - n) / 2 + 1;
    let right = w - n - (w - n) / 2 + 1;
    format!("{}{}{}", " ".repeat(left), s, " ".repeat(right))
}

fn csv_field(s: &str) -> String {
    if s.is_empty() || s.contains([',', '"', '\n', '\r']) || s.starts_with(' ') || s.ends_with(' ')
    {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}
