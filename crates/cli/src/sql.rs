//! `ndpdb sql`: one session per invocation; `-c` and `-f` run statements
//! in order and stop at the first error (printed as `ERROR <SQLSTATE>:
//! message` on stderr, exit status 1); without them, an interactive loop.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use ndpdb_host::{Config, Result};
use ndpdb_sql::{Output, Session};

fn print(out: &Output, csv: bool) {
    match out {
        Output::Rows { .. } if csv => print!("{}", out.to_csv()),
        Output::Rows { .. } => print!("{}", out.to_table()),
        Output::Command { tag } if !csv => println!("{tag}"),
        Output::Command { .. } => {}
    }
}

fn report(e: &ndpdb_host::Error) {
    eprintln!("ERROR {}: {}", e.code, e.message);
    if let Some(d) = &e.detail {
        eprintln!("DETAIL: {d}");
    }
}

fn flush_notices(s: &mut Session) {
    for n in s.notices.drain(..) {
        eprintln!("{}: {n}", n.severity);
        if let Some(d) = &n.detail {
            eprintln!("DETAIL: {d}");
        }
    }
}

pub fn run(
    dir: &Path,
    commands: &[String],
    file: Option<&Path>,
    csv: bool,
    config: Config,
    device: &crate::args::DeviceArgs,
) -> Result<ExitCode> {
    let db = device.open(dir, config)?;
    let mut session = Session::new(db);
    let mut scripts: Vec<String> = commands.to_vec();
    if let Some(f) = file {
        scripts.push(std::fs::read_to_string(f)?);
    }
    if !scripts.is_empty() {
        for sql in &scripts {
            let r = session.execute_each(sql, |out| print(&out, csv));
            flush_notices(&mut session);
            if let Err(e) = r {
                std::io::stdout().flush().ok();
                report(&e);
                return Ok(ExitCode::FAILURE);
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    interactive(&mut session, csv)
}

fn interactive(session: &mut Session, csv: bool) -> Result<ExitCode> {
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    let mut buf = String::new();
    let prompt = |buf: &str| {
        if tty {
            print!(
                "{}",
                if buf.is_empty() {
                    "ndpdb=> "
                } else {
                    "ndpdb-> "
                }
            );
            std::io::stdout().flush().ok();
        }
    };
    prompt(&buf);
    for line in stdin.lock().lines() {
        let line = line?;
        let t = line.trim();
        if buf.is_empty() && (t == "\\q" || t == "quit" || t == "exit") {
            break;
        }
        buf.push_str(&line);
        buf.push('\n');
        if t.ends_with(';') {
            if let Err(e) = session.execute_each(&buf, |out| print(&out, csv)) {
                report(&e);
            }
            flush_notices(session);
            buf.clear();
        }
        prompt(&buf);
    }
    if !buf.trim().is_empty() {
        if let Err(e) = session.execute_each(&buf, |out| print(&out, csv)) {
            report(&e);
        }
    }
    Ok(ExitCode::SUCCESS)
}
