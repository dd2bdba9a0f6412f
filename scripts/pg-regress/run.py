#!/usr/bin/env python3
"""PostgreSQL 15's regression statements against ndpdb and PostgreSQL 15.

Runs the files listed in files.txt (vendored from PostgreSQL REL_15_STABLE,
src/test/regress) through psql against a throwaway PostgreSQL 15 and an
ndpdb server side by side, splits both outputs into statements, compares
them statement by statement and reports, per file, the share of statements
whose output matches PostgreSQL's.  See README.md beside this file and
docs/REGRESSION.md.

    python3 scripts/pg-regress/run.py --ndpdb target/release/ndpdb
    python3 scripts/pg-regress/run.py --pg 'host=… port=… user=postgres' \\
        --ndpdb-conninfo 'host=127.0.0.1 port=5433 user=postgres'

Python 3 standard library only; needs psql 15 (PSQL, default psql) and, to
start PostgreSQL, scripts/postgres-baseline.sh.
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, OrderedDict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MARK = "@@ndpdb-pg-regress:%d@@"
MARK_RE = re.compile(r"^@@ndpdb-pg-regress:(\d+)@@$")
MARK_ECHO_RE = re.compile(r"^\\echo @@ndpdb-pg-regress:(\d+)@@$")
TRUNC = 4000


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# Splitting a psql script into statements, the way psql does.
# ---------------------------------------------------------------------------

IDENT_START = re.compile(r"[A-Za-z_\x80-\U0010ffff]")
IDENT = re.compile(r"[A-Za-z_\x80-\U0010ffff][A-Za-z_0-9$\x80-\U0010ffff]*")
DOLLAR = re.compile(r"\$([A-Za-z_\x80-\U0010ffff][A-Za-z_0-9\x80-\U0010ffff]*)?\$")
# meta commands that send the query buffer
SENDING_META = {"g", "gx", "gset", "gdesc", "gexec", "crosstabview", "watch"}


class Chunk:
    """One statement (or a few on its last line) with the lines before it."""

    def __init__(self, first_line):
        self.first_line = first_line  # 1-based line number in the file
        self.lines = []  # input lines, as read by psql
        self.copy_data = set()  # indexes into lines that are COPY data
        self.quoted = set()  # indexes of lines that begin inside a quote or comment

    @property
    def last_line(self):
        return self.first_line + len(self.lines) - 1

    def sql(self):
        return "\n".join(l for i, l in enumerate(self.lines) if i not in self.copy_data)

    def echo(self):
        """The lines psql -a echoes: not COPY data, and not empty lines
        outside quotes and comments (psql skips those unread)."""
        return [l for i, l in enumerate(self.lines)
                if i not in self.copy_data and (l != "" or i in self.quoted)]

    def statement_text(self):
        """The statement without leading comment and blank lines."""
        lines = self.echo()
        while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
            lines = lines[1:]
        return "\n".join(lines)


def split_statements(text):
    """Split a psql script into chunks at line boundaries where psql's query
    buffer is empty: a chunk ends with the line on which its statement (a
    semicolon outside quotes, parentheses and BEGIN … END of a function
    body, a query-sending meta command, or a meta command on its own) ends.
    COPY … FROM STDIN data lines up to \\. belong to the COPY's chunk."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    chunks = []
    cur = None
    # lexer state, carried across lines
    mode = None  # None, "'", "E'", '"', "$", "/*"
    dollar_tag = None
    comment_depth = 0
    paren = 0
    begin_depth = 0
    idents = []  # first identifiers of the statement (lower case)
    ident_count = 0
    buf = False  # the query buffer holds something
    copy_stmt = []  # text of the statement so far (for the COPY check)
    in_copy = False
    std_strings = True  # standard_conforming_strings, as psql tracks it
    for ln, line in enumerate(lines, 1):
        if cur is None:
            cur = Chunk(ln)
        cur.lines.append(line)
        if mode is not None:
            cur.quoted.add(len(cur.lines) - 1)
        if in_copy:
            cur.copy_data.add(len(cur.lines) - 1)
            if line == "\\.":
                in_copy = False
                chunks.append(cur)
                cur = None
            continue
        ended = False  # a statement ended on this line
        copy_started = False
        i = 0
        n = len(line)
        stmt_piece_start = 0
        while i < n:
            c = line[i]
            if mode == "/*":
                if line.startswith("/*", i):
                    comment_depth += 1
                    i += 2
                elif line.startswith("*/", i):
                    comment_depth -= 1
                    i += 2
                    if comment_depth == 0:
                        mode = None
                else:
                    i += 1
                continue
            if mode == "'" or mode == "E'":
                if mode == "E'" and c == "\\":
                    i += 2
                    continue
                if c == "'":
                    if i + 1 < n and line[i + 1] == "'":
                        i += 2
                        continue
                    mode = None
                i += 1
                continue
            if mode == '"':
                if c == '"':
                    if i + 1 < n and line[i + 1] == '"':
                        i += 2
                        continue
                    mode = None
                i += 1
                continue
            if mode == "$":
                end = "$" + (dollar_tag or "") + "$"
                j = line.find(end, i)
                if j < 0:
                    i = n
                else:
                    i = j + len(end)
                    mode = None
                continue
            # normal state
            if c in " \t\r\f\v":
                i += 1
                continue
            if line.startswith("--", i):
                break
            if line.startswith("/*", i):
                mode = "/*"
                comment_depth = 1
                i += 2
                continue
            if c == "\\":
                if i + 1 < n and line[i + 1] in ";:":
                    buf = True
                    i += 2
                    continue
                m = re.match(r"\\([A-Za-z?!.]*)", line[i:])
                cmd = m.group(1) if m else ""
                if buf:
                    if cmd in SENDING_META:
                        ended = True
                        buf = False
                        paren = begin_depth = ident_count = 0
                        idents = []
                        copy_stmt = []
                else:
                    ended = True
                break  # a meta command runs to the end of the line
            buf = True
            if c == "'":
                mode = "'" if std_strings else "E'"
                i += 1
                continue
            if c in "uU" and line.startswith("&'", i + 1):
                mode = "'"  # U&'…' never takes backslash escapes
                i += 3
                continue
            if c in "eE" and i + 1 < n and line[i + 1] == "'":
                prev = line[i - 1] if i > 0 else " "
                if not re.match(r"[A-Za-z_0-9$\x80-\U0010ffff]", prev):
                    mode = "E'"
                    i += 2
                    continue
            if c == '"':
                mode = '"'
                i += 1
                continue
            if c == "$":
                prev = line[i - 1] if i > 0 else " "
                m = DOLLAR.match(line, i)
                if m and not re.match(r"[A-Za-z_0-9$\x80-\U0010ffff]", prev):
                    dollar_tag = m.group(1)
                    mode = "$"
                    i = m.end()
                    continue
                i += 1
                continue
            if c == "(":
                paren += 1
                i += 1
                continue
            if c == ")":
                if paren > 0:
                    paren -= 1
                i += 1
                continue
            if c == ";":
                if paren == 0 and begin_depth == 0:
                    stmt = " ".join(copy_stmt + [line[stmt_piece_start:i]])
                    m = re.match(r"\s*(set\s+standard_conforming_strings\s*(=|to)\s*'?(\w+)|"
                                 r"reset\s+standard_conforming_strings)\b", stmt, re.I)
                    if m:
                        std_strings = (m.group(3) or "on").lower() not in ("off", "false", "0")
                    if re.match(r"\s*copy\b.*\bfrom\s+std(in|out)\b", stmt, re.I | re.S):
                        copy_started = True
                    ended = True
                    buf = False
                    ident_count = 0
                    idents = []
                    copy_stmt = []
                    stmt_piece_start = i + 1
                i += 1
                continue
            m = IDENT.match(line, i)
            if m:
                word = m.group(0).lower()
                if ident_count == 0:
                    idents = []
                if word in ("create", "function", "procedure", "or", "replace"):
                    if len(idents) == ident_count:
                        idents.append(word[0])
                elif len(idents) == ident_count:
                    idents.append("")
                ident_count += 1
                ids = idents + [""] * 4
                if ids[0] == "c" and (ids[1] in ("f", "p") or (
                        ids[1] == "o" and ids[2] == "r" and ids[3] in ("f", "p"))) and paren == 0:
                    if word == "begin":
                        begin_depth += 1
                    elif word == "case" and begin_depth >= 1:
                        begin_depth += 1
                    elif word == "end" and begin_depth > 0:
                        begin_depth -= 1
                i = m.end()
                continue
            i += 1
        if buf:
            copy_stmt.append(line[stmt_piece_start:])
        if copy_started and not buf and mode is None:
            in_copy = True
            continue
        if ended and not buf and mode is None:
            chunks.append(cur)
            cur = None
    if cur is not None:
        # trailing comments, or an unterminated statement (psql sends it at EOF)
        if any(l.strip() and not l.lstrip().startswith("--") for l in cur.lines):
            chunks.append(cur)
    return chunks


COPY_FILE_RE = re.compile(r"^(\s*)COPY\s+(.*?)\s+FROM\s+:'filename'\s*;\s*$", re.I)
SET_FILE_RE = re.compile(r"^\s*\\set\s+filename\s+:abs_srcdir\s+'([^']*)'\s*$")


def rewrite_copy(chunks):
    """Server-side COPY … FROM a data file becomes psql's \\copy of the same
    file (relative to this directory, psql's working directory), for both
    servers.  Returns the number of statements rewritten."""
    filename = None
    count = 0
    for ch in chunks:
        for k, line in enumerate(ch.lines):
            m = SET_FILE_RE.match(line)
            if m:
                filename = m.group(1).lstrip("/")
                continue
            m = COPY_FILE_RE.match(line)
            if m and filename:
                ch.lines[k] = "%s\\copy %s FROM '%s'" % (m.group(1), m.group(2), filename)
                count += 1
    return count


def marked_script(chunks):
    out = []
    for idx, ch in enumerate(chunks):
        out.append("\\echo " + MARK % idx)
        out.extend(ch.lines)
    out.append("\\echo " + MARK % len(chunks))
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------
# Servers
# ---------------------------------------------------------------------------

def port_free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def psql_base(args):
    return [args.psql, "-X", "-q", "-v", "VERBOSITY=terse"]


def regress_env(workdir):
    """pg_regress's environment (PostgreSQL 15 pg_regress.c,
    initialize_environment), with --no-locale."""
    env = dict(os.environ)
    for k in list(env):
        if k.startswith("PG") or k.startswith("LC_") or k in ("LANG", "LANGUAGE"):
            del env[k]
    env.update({
        "PGAPPNAME": "pg_regress",
        "PG_ABS_SRCDIR": HERE,
        "PG_ABS_BUILDDIR": workdir,
        "PG_LIBDIR": os.path.join(workdir, "lib"),
        "PG_DLSUFFIX": ".so",
        "LC_MESSAGES": "C",
        "PGTZ": "America/Los_Angeles",
        "PGDATESTYLE": "Postgres, MDY",
        "PGOPTIONS": "-c intervalstyle=postgres_verbose",
        "PGCONNECT_TIMEOUT": "10",
    })
    return env


def with_db(conninfo, db):
    if conninfo.startswith(("postgres://", "postgresql://")):
        sys.exit("give conninfos as key=value strings, not URIs")
    return conninfo + " dbname=" + db


class Ndpdb:
    """An ndpdb server this runner started (and restarts after a crash)."""

    def __init__(self, binary, port, workdir):
        self.binary = binary
        self.port = port
        self.dbdir = os.path.join(workdir, "ndpdb-db")
        self.logpath = os.path.join(workdir, "ndpdb.log")
        self.proc = None
        self.restarts = 0

    def conninfo(self):
        return "host=127.0.0.1 port=%d user=postgres" % self.port

    def start(self):
        for _ in range(10):
            if port_free(self.port):
                break
            self.port += 1
        logf = open(self.logpath, "a")
        self.proc = subprocess.Popen(
            [self.binary, "serve", "--db", self.dbdir, "--listen", "127.0.0.1:%d" % self.port],
            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("ndpdb exited at start (status %s); see %s"
                                   % (self.proc.returncode, self.logpath))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.2)
        raise RuntimeError("ndpdb did not listen on port %d within 60 s" % self.port)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self):
        self.stop()
        self.restarts += 1
        self.start()

    def status(self):
        if self.proc is None:
            return "not running"
        rc = self.proc.poll()
        if rc is None:
            return "running"
        if rc < 0:
            try:
                return "killed by %s" % signal.Signals(-rc).name
            except ValueError:
                return "killed by signal %d" % -rc
        return "exited with status %d" % rc


def admin(args, env, conninfo, sql):
    """Run setup SQL; return its output (errors included)."""
    p = subprocess.run(psql_base(args) + ["-tA", "-d", conninfo, "-c", sql], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120,
                       stdin=subprocess.DEVNULL)
    return p.stdout.decode("utf-8", "replace").strip()


# ---------------------------------------------------------------------------
# Running one file on one side
# ---------------------------------------------------------------------------

CONN_LOST = re.compile(r"server closed the connection unexpectedly|connection to server was lost|"
                       r"could not connect to server|connection to server at .* failed|"
                       r"no connection to the server")


def run_psql(args, env, conninfo, script, stmt_timeout, file_timeout):
    """Feed script to psql -a; return (output lines, how it ended) where how
    is "ok", "timeout" (no output for stmt_timeout seconds, or the file ran
    past file_timeout) or "lost" (the connection went away)."""
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False,
                                     encoding="utf-8", errors="surrogateescape") as f:
        f.write(script)
        path = f.name
    try:
        with open(path, "rb") as stdin:
            proc = subprocess.Popen(psql_base(args) + ["-a", "-v", "ON_ERROR_STOP=0", "-d", conninfo],
                                    stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, env=env, cwd=HERE,
                                    start_new_session=True)
            chunks = []
            last = [time.time()]

            def reader():
                for data in iter(lambda: proc.stdout.read1(65536), b""):
                    chunks.append(data)
                    last[0] = time.time()

            t = threading.Thread(target=reader, daemon=True)
            t.start()
            start = time.time()
            how = "ok"
            while True:
                try:
                    proc.wait(0.5)
                    break
                except subprocess.TimeoutExpired:
                    now = time.time()
                    if now - last[0] > stmt_timeout or now - start > file_timeout:
                        how = "timeout"
                        try:
                            os.killpg(proc.pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        proc.wait()
                        break
            t.join(10)
    finally:
        os.unlink(path)
    text = b"".join(chunks).decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if how == "ok" and CONN_LOST.search(text):
        how = "lost"
    return lines, how


def segments(lines):
    """Map chunk index -> output lines (echo included) after its marker."""
    seg = {}
    cur = None
    for line in lines:
        m = MARK_RE.match(line)
        if m:
            cur = int(m.group(1))
            seg[cur] = []
            continue
        if MARK_ECHO_RE.match(line):
            continue
        if cur is not None:
            seg[cur].append(line)
    return seg


def run_side(args, env, conninfo, chunks, server=None, label=""):
    """Run all chunks; on a lost connection or a timeout, note it, restart
    the server (if this runner owns it) and go on from the next statement in
    a new session.  Returns (segments, events)."""
    result = {}
    events = []
    start = 0
    while start < len(chunks):
        script = marked_script(chunks[start:])
        # markers count from 0 in each run: shift them back
        lines, how = run_psql(args, env, conninfo, script, args.statement_timeout, args.file_timeout)
        seg = segments(lines)
        got = {k + start: v for k, v in seg.items() if k + start < len(chunks)}
        result.update(got)
        server_dead = server is not None and not server.alive()
        if how == "ok" and not server_dead and (len(chunks) - start) in seg:
            break
        # where did it stop?
        reached = [k for k in got]
        stuck = max(reached) if reached else start
        if how == "timeout":
            what = "timeout"
        elif server_dead:
            what = "crash (ndpdb %s)" % server.status()
        elif how == "lost":
            what = "connection lost"
        else:
            tail = [l for l in got.get(stuck, []) if l.strip()]
            what = "psql exited (%s)" % (tail[-1][:100] if tail else "no message")
        events.append({"statement": stuck, "line": chunks[stuck].first_line, "event": what})
        if not what.startswith("psql exited"):
            log("  %s: %s at line %d" % (label, what, chunks[stuck].first_line))
        if server is not None and (server_dead or how == "timeout"):
            if server.restarts >= args.max_restarts:
                log("  %s: %d restarts already; giving up on this run" % (label, server.restarts))
                events.append({"statement": stuck, "line": chunks[stuck].first_line,
                               "event": "restart limit reached"})
                break
            server.restart()
        if how == "timeout":
            result.setdefault(stuck, []).append("<<timed out: no output for %d s>>"
                                                % args.statement_timeout)
        else:
            result.setdefault(stuck, []).append("<<%s>>" % what)
        start = stuck + 1
    return result, events


# ---------------------------------------------------------------------------
# Comparing
# ---------------------------------------------------------------------------

ERROR_RE = re.compile(r"^(ERROR|FATAL|PANIC):\s")
PSQL_ERR_RE = re.compile(r"^(invalid command \\|psql:|\\[a-z]+: )")
DECORATION_RE = re.compile(r"^(LINE \d+: |\s*\^\s*$|DETAIL:  |HINT:  |CONTEXT:  |QUERY:  )")
MESSAGE_RE = re.compile(r"^(NOTICE|WARNING|INFO|DETAIL|HINT|CONTEXT):  ")
VERSION_RE = re.compile(r"PostgreSQL \d+(\.\d+)?\S*( \([^)]*\))?( on [^,|]*,[^|]*)?")


def output_only(chunk, seg):
    """The output of a chunk without the echo of its input."""
    echo = chunk.echo()
    out = []
    j = 0
    for line in seg:
        if j < len(echo) and line == echo[j]:
            j += 1
            continue
        out.append(line)
    return out


def normalise(lines):
    """Normalisations applied to both sides before comparing (README.md lists them)."""
    out = []
    for line in lines:
        line = VERSION_RE.sub("PostgreSQL <version>", line)
        out.append(line)
    return out


def errors_of(lines):
    return [l for l in lines if ERROR_RE.match(l) or PSQL_ERR_RE.match(l) or l.startswith("<<")]


def strip_decoration(lines):
    return [l for l in lines if not DECORATION_RE.match(l)]


def has_order_by(sql):
    """Whether the statement orders its result: ORDER BY outside parentheses
    (not one inside a subquery, an OVER clause or an aggregate call)."""
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"'(?:[^']|'')*'", "''", sql)
    prev = None
    while prev != sql:
        prev = sql
        sql = re.sub(r"\([^()]*\)", " ", sql)
    return re.search(r"\border\s+by\b", sql, re.I) is not None


def table_cells(lines):
    """Result lines as rows of trimmed cells, without header lines (a line
    followed by a ----+---- rule)."""
    rows = []
    for k, line in enumerate(lines):
        if re.match(r"^-+(\+-+)*$", line):
            continue
        if k + 1 < len(lines) and re.match(r"^-+(\+-+)*$", lines[k + 1]):
            continue
        rows.append(tuple(c.strip() for c in line.split("|")))
    return rows


def difference_cause(stmt, pg, nd, pg_err):
    """A best guess at why two successful outputs differ, for grouping."""
    if pg_err:
        return "ndpdb accepted what PostgreSQL rejects: " + error_class(pg_err[0])
    if sorted(pg) == sorted(nd):
        return "same rows in another order"
    if re.match(r"\s*\\d", stmt):
        return "psql \\d describe output"
    if re.match(r"\s*show\b", stmt, re.I):
        return "SHOW reports another setting"
    if table_cells(pg) == table_cells(nd):
        return "same values, other column names or column widths"
    if sorted(table_cells(pg)) == sorted(table_cells(nd)):
        return "same values in another order, other column names or widths"
    if re.match(r"\s*(select|table)\s+(\*\s+from\s+)?[\w.]+(\s+\w+)?(\s+order\s+by\s+[\w, ]+)?\s*;?\s*(--.*)?$",
                stmt, re.I):
        return "table contents differ (an earlier statement left other rows)"
    return "different values"


def classify(chunk, pg_seg, nd_seg):
    """Return (class, cause) for one statement."""
    if nd_seg is None:
        return "lost", "not reached"
    if pg_seg is None:
        return "lost", "not reached on PostgreSQL"
    pg_all, nd_all = normalise(pg_seg), normalise(nd_seg)
    if pg_all == nd_all:
        return "match", ""
    pg, nd = output_only(chunk, pg_all), output_only(chunk, nd_all)
    pg_err, nd_err = errors_of(pg), errors_of(nd)
    if any(l.startswith("<<") for l in nd_err):
        return "lost", nd_err[-1].strip("<>")
    if pg_err and nd_err and strip_decoration(pg) == strip_decoration(nd):
        return "match", ""
    stmt = chunk.statement_text()
    if not has_order_by(stmt) and sorted(pg) == sorted(nd):
        return "match", ""
    if nd_err and not pg_err:
        return "refused", nd_err[0]
    if nd_err and pg_err:
        return "error_differs", nd_err[0]
    quiet = [l for l in pg if not MESSAGE_RE.match(l)] == [l for l in nd if not MESSAGE_RE.match(l)]
    if quiet:
        return "messages", "notices or warnings differ"
    if re.match(r"\s*explain\b", stmt, re.I | re.S):
        return "plan", "EXPLAIN output"
    return "different", difference_cause(stmt, pg, nd, pg_err)


def error_class(msg):
    """An error message with names and values replaced, for grouping."""
    msg = re.sub(r"^(ERROR|FATAL|PANIC):\s+", "", msg)
    msg = re.sub(r'"[^"]*"', '"…"', msg)
    msg = re.sub(r"'[^']*'", "'…'", msg)
    msg = re.sub(r"\b\d+\b", "N", msg)
    return msg[:160]


def trunc(lines, limit=TRUNC):
    s = "\n".join(lines)
    return s if len(s) <= limit else s[:limit] + "\n…(truncated)"


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def read_files(path):
    files = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            files.append((line[0], len(line) > 1 and line[1] == "setup"))
    return files


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ndpdb", default=os.path.join(REPO, "target", "release", "ndpdb"),
                    help="ndpdb binary to serve (default target/release/ndpdb)")
    ap.add_argument("--ndpdb-conninfo", help="use a running ndpdb server instead (key=value conninfo, no dbname)")
    ap.add_argument("--ndpdb-port", type=int, default=55611)
    ap.add_argument("--pg", help="use a running PostgreSQL 15 instead (key=value conninfo of a superuser, no dbname)")
    ap.add_argument("--pg-port", type=int, default=55612, help="port for the throwaway PostgreSQL")
    ap.add_argument("--psql", default=shutil.which("psql") or "psql")
    ap.add_argument("--files", default=os.path.join(HERE, "files.txt"))
    ap.add_argument("--only", help="comma-separated file names to score (setup files still run)")
    ap.add_argument("--statement-timeout", type=int, default=60,
                    help="seconds without any output before a statement counts as hung (default 60)")
    ap.add_argument("--file-timeout", type=int, default=1800, help="seconds for one file on one side")
    ap.add_argument("--max-restarts", type=int, default=20)
    ap.add_argument("--report", help="write the Markdown report here (default: stdout)")
    ap.add_argument("--json", help="write the machine-readable report here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (outputs, ndpdb log)")
    ap.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    if not args.pg and not args.inner:
        # run inside a throwaway PostgreSQL 15 cluster
        cmd = ["bash", os.path.join(REPO, "scripts", "postgres-baseline.sh"),
               "--port", str(args.pg_port), "--", sys.executable, os.path.abspath(__file__)] + argv + ["--inner"]
        return subprocess.call(cmd)
    if args.inner:
        args.pg = os.environ.get("NDPDB_POSTGRES")
        if not args.pg:
            sys.exit("NDPDB_POSTGRES is not set")
        # the baseline script's conninfo names its own database; ours is "regression"
        args.pg = re.sub(r"\s*dbname=\S+", "", args.pg)
    t0 = time.time()
    workdir = tempfile.mkdtemp(prefix="ndpdb-pg-regress.")
    env = regress_env(workdir)
    files = read_files(args.files)
    only = set(args.only.split(",")) if args.only else None
    server = None
    try:
        # PostgreSQL: a fresh database, as pg_regress makes it
        pg_admin = with_db(args.pg, "postgres")
        out = admin(args, env, pg_admin, "DROP DATABASE IF EXISTS regression")
        out = admin(args, env, pg_admin, "CREATE DATABASE regression TEMPLATE=template0")
        if "ERROR" in out:
            sys.exit("PostgreSQL: " + out)
        for setting in ("lc_messages TO 'C'", "lc_monetary TO 'C'", "lc_numeric TO 'C'",
                        "lc_time TO 'C'", "bytea_output TO 'hex'", "timezone_abbreviations TO 'Default'"):
            admin(args, env, pg_admin, "ALTER DATABASE regression SET " + setting)
        pg_version = admin(args, env, with_db(args.pg, "regression"), "SELECT version()")
        # ndpdb
        if args.ndpdb_conninfo:
            nd_base = args.ndpdb_conninfo
        else:
            if not os.access(args.ndpdb, os.X_OK):
                sys.exit("no ndpdb binary at %s (build it, or give --ndpdb BIN)" % args.ndpdb)
            server = Ndpdb(args.ndpdb, args.ndpdb_port, workdir)
            server.start()
            nd_base = server.conninfo()
        nd_db_note = "regression (CREATE DATABASE regression)"
        out = admin(args, env, with_db(nd_base, "postgres"), "CREATE DATABASE regression")
        if "ERROR" in out:
            nd_db_note = ("CREATE DATABASE is not supported (%s): statements run in %s, under the name regression"
                          % (out.splitlines()[0], "a fresh ndpdb directory" if server else "the given server's database"))
        for setting in ("lc_messages TO 'C'", "lc_monetary TO 'C'", "lc_numeric TO 'C'",
                        "lc_time TO 'C'", "bytea_output TO 'hex'", "timezone_abbreviations TO 'Default'"):
            admin(args, env, with_db(nd_base, "postgres"), "ALTER DATABASE regression SET " + setting)
        nd_version = admin(args, env, with_db(nd_base, "regression"), "SELECT version()")
        log("PostgreSQL: %s" % pg_version)
        log("ndpdb:      %s" % nd_version)
        log("ndpdb database: %s" % nd_db_note)

        pg_conn = with_db(args.pg, "regression")
        report = OrderedDict()
        rewritten = 0
        for name, setup in files:
            if only is not None and not setup and name not in only:
                continue
            path = os.path.join(HERE, "sql", name + ".sql")
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            chunks = split_statements(text)
            rewritten += rewrite_copy(chunks)
            ft = time.time()
            pg_seg, pg_events = run_side(args, env, pg_conn, chunks, None, "PostgreSQL " + name)
            nd_conn = with_db(server.conninfo() if server else nd_base, "regression")
            nd_seg, nd_events = run_side(args, env, nd_conn, chunks, server, "ndpdb " + name)
            counts = Counter()
            items = []
            for idx, ch in enumerate(chunks):
                cls, cause = classify(ch, pg_seg.get(idx), nd_seg.get(idx))
                counts[cls] += 1
                if cls != "match":
                    items.append({
                        "statement": idx + 1,
                        "line": ch.first_line,
                        "class": cls,
                        "cause": cause,
                        "sql": trunc(ch.statement_text().split("\n"), 2000),
                        "postgres": trunc(output_only(ch, pg_seg.get(idx) or [])),
                        "ndpdb": trunc(output_only(ch, nd_seg.get(idx) or [])),
                    })
            total = len(chunks)
            share = 100.0 * counts["match"] / total if total else 0.0
            report[name] = {
                "setup": setup,
                "statements": total,
                "matched": counts["match"],
                "refused": counts["refused"],
                "error_differs": counts["error_differs"],
                "different": counts["different"],
                "plan": counts["plan"],
                "messages": counts["messages"],
                "lost": counts["lost"],
                "share": round(share, 1),
                "seconds": round(time.time() - ft, 1),
                "events": {"postgres": pg_events, "ndpdb": nd_events},
                "mismatches": items,
            }
            log("%-18s %s%4d/%-4d %5.1f%%  (%.0f s)%s" % (
                name, "setup " if setup else "", counts["match"], total, share, time.time() - ft,
                "  [ndpdb: %s]" % "; ".join(sorted(set(e["event"] for e in nd_events)))
                if nd_events else ""))
        wall = time.time() - t0
        meta = {
            "postgres": pg_version,
            "ndpdb": nd_version,
            "ndpdb_database": nd_db_note,
            "ndpdb_restarts": server.restarts if server else 0,
            "copy_rewrites": rewritten,
            "wall_seconds": round(wall, 1),
            "statement_timeout": args.statement_timeout,
        }
        md = markdown(report, meta)
        if args.report:
            with open(args.report, "w") as f:
                f.write(md)
        else:
            sys.stdout.write(md)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"meta": meta, "files": report}, f, indent=1, ensure_ascii=False)
        log("done in %.0f s" % wall)
        return 0
    finally:
        if server is not None:
            server.stop()
        if args.keep:
            log("work directory kept: %s" % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


def markdown(report, meta):
    out = []
    out.append("| File | Statements | Matched | Refused | Other error | Different answers | Plan or notices differ | Not answered | Matched % |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    tot = Counter()
    for name, r in report.items():
        if r["setup"]:
            continue
        for k in ("statements", "matched", "refused", "error_differs", "different", "plan", "messages", "lost"):
            tot[k] += r[k]
        out.append("| %s | %d | %d | %d | %d | %d | %d | %d | %.1f |" % (
            name, r["statements"], r["matched"], r["refused"], r["error_differs"], r["different"],
            r["plan"] + r["messages"], r["lost"], r["share"]))
    share = 100.0 * tot["matched"] / tot["statements"] if tot["statements"] else 0.0
    out.append("| **total** | %d | %d | %d | %d | %d | %d | %d | **%.1f** |" % (
        tot["statements"], tot["matched"], tot["refused"], tot["error_differs"], tot["different"],
        tot["plan"] + tot["messages"], tot["lost"], share))
    setups = [(n, r) for n, r in report.items() if r["setup"]]
    if setups:
        out.append("")
        out.append("Setup files (not scored): " + ", ".join(
            "%s %d/%d" % (n, r["matched"], r["statements"]) for n, r in setups) + ".")
    events = [(n, e) for n, r in report.items() for e in r["events"]["ndpdb"]]
    if events:
        out.append("")
        out.append("ndpdb crashes, timeouts and psql exits (the file goes on in a new session):")
        out.append("")
        for n, e in events:
            out.append("- %s line %d: %s" % (n, e["line"], e["event"]))
    # refused statements by error message
    refused = Counter()
    for r in report.values():
        if r["setup"]:
            continue
        for it in r["mismatches"]:
            if it["class"] in ("refused", "error_differs"):
                refused[error_class(it["cause"])] += 1
    if refused:
        out.append("")
        out.append("Most frequent ndpdb errors (refused statements and other errors, names and numbers replaced):")
        out.append("")
        out.append("| Count | Error |")
        out.append("|---:|---|")
        for msg, n in refused.most_common(20):
            out.append("| %d | %s |" % (n, msg.replace("|", "\\|")))
    diffs = [(n, it) for n, r in report.items() if not r["setup"] for it in r["mismatches"]
             if it["class"] == "different"]
    if diffs:
        out.append("")
        out.append("Different answers (%d):" % len(diffs))
        out.append("")
        by = OrderedDict()
        for n, it in diffs:
            top, _, sub = it["cause"].partition(": ")
            by.setdefault(top, OrderedDict()).setdefault(sub, []).append("%s:%d" % (n, it["line"]))
        for top, subs in sorted(by.items(), key=lambda kv: -sum(len(v) for v in kv[1].values())):
            if list(subs) == [""]:
                out.append("- %s (%d): %s" % (top, len(subs[""]), ", ".join(subs[""])))
                continue
            out.append("- %s (%d):" % (top, sum(len(v) for v in subs.values())))
            for sub, where in sorted(subs.items(), key=lambda kv: -len(kv[1])):
                out.append("  - %s (%d): %s" % (sub.replace("|", "\\|"), len(where), ", ".join(where)))
    out.append("")
    out.append("%s; ndpdb %s; %d s wall." % (meta["postgres"], meta["ndpdb"], meta["wall_seconds"]))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
