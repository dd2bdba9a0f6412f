"""Client scenarios run against ndpdb and PostgreSQL 15 in the same run;
their transcripts (rows, command tags, SQLSTATEs, warnings) must be equal.

    python3 stale_plans.py NDPDB_CONNINFO POSTGRES_CONNINFO

Each scenario runs three times, once per way psycopg 3 sends statements:
its default (prepared server-side from the 5th execution of a query),
every statement prepared from the first, and none prepared (the simple
query protocol for statements without parameters). What they cover:

- prepared statements across DDL: DROP/CREATE of the tables, indexes,
  views and sequences they read and write, ALTER TABLE ADD/DROP COLUMN
  (PostgreSQL's 0A000 "cached plan must not change result type"), from
  the same connection and from another one, and SQL's PREPARE / EXECUTE
  / DEALLOCATE;
- queries without FROM: one input row for aggregates, HAVING, WHERE and
  subqueries;
- a nested BEGIN: its transaction modes applied (or refused after the
  first query) with PostgreSQL's warning.

Prints "ok" when every transcript matches, else the differences.
"""

import difflib
import sys

import psycopg


def outcome(cur, sql, params):
    try:
        cur.execute(sql, params) if params is not None else cur.execute(sql)
    except psycopg.Error as e:
        return f"ERROR {e.sqlstate}"
    rows = ""
    if cur.description is not None:
        rows = " " + repr(cur.fetchall())
    return f"{cur.statusmessage}{rows}"


class Client:
    """One connection per name, opened lazily with the mode's prepare
    setting; every result and warning goes to one transcript."""

    def __init__(self, conninfo, mode):
        self.conninfo = conninfo
        self.mode = mode
        self.conns = {}
        self.lines = []

    def conn(self, name, autocommit=True):
        if name not in self.conns:
            c = psycopg.connect(self.conninfo, autocommit=autocommit)
            if self.mode == "always":
                c.prepare_threshold = 0
            elif self.mode == "never":
                c.prepare_threshold = None
            c.add_notice_handler(
                lambda d, name=name: self.lines.append(
                    f"  {name}: {d.severity_nonlocalized} {d.sqlstate}"
                )
            )
            self.conns[name] = c
        return self.conns[name]

    def run(self, name, sql, params=None):
        c = self.conn(name)
        with c.cursor() as cur:
            self.lines.append(f"{name}> {sql} {params or ''}".rstrip())
            self.lines.append("  " + outcome(cur, sql, params))

    def close(self):
        for c in self.conns.values():
            c.close()


def drop_all(c):
    for sql in [
        "DROP VIEW IF EXISTS pv",
        "DROP TABLE IF EXISTS pa",
        "DROP TABLE IF EXISTS pb",
        "DROP SEQUENCE IF EXISTS ps",
    ]:
        c.run("setup", sql)


def cycles(c, with_delete, with_index):
    """The DROP/CREATE cycle of the issue: each statement its own
    execute, autocommit, eight times (psycopg prepares at the 5th)."""
    for cycle in range(8):
        c.run("a", "DROP TABLE IF EXISTS pa")
        c.run("a", "DROP TABLE IF EXISTS pb")
        c.run("a", "CREATE TABLE pa (pk INT PRIMARY KEY, v INT)")
        c.run("a", "CREATE TABLE pb (pk INT PRIMARY KEY, v INT)")
        if with_index:
            c.run("a", "CREATE INDEX pb_v ON pb (v)")
        c.run("a", f"INSERT INTO pa VALUES ({cycle}, 1)")
        c.run("a", "INSERT INTO pb SELECT * FROM pa")
        c.run("a", "SELECT count(*) FROM pb")
        c.run("a", "SELECT pk FROM pb WHERE v = 1")
        if with_delete:
            c.run("a", "DELETE FROM pb")


def result_shape(c):
    """A prepared `SELECT *` whose table gains and loses a column."""
    c.run("a", "CREATE TABLE pa (pk INT PRIMARY KEY, v INT)")
    c.run("a", "INSERT INTO pa VALUES (1, 10), (2, 20)")
    for _ in range(6):
        c.run("a", "SELECT * FROM pa ORDER BY pk")
        c.run("a", "SELECT v FROM pa WHERE pk = %s", (2,))
        c.run("a", "INSERT INTO pa (pk, v) VALUES (%s, %s)", (100 + _, 7))
    c.run("b", "ALTER TABLE pa ADD COLUMN w TEXT")
    c.run("a", "SELECT * FROM pa ORDER BY pk")
    c.run("a", "SELECT v FROM pa WHERE pk = %s", (2,))
    c.run("a", "INSERT INTO pa (pk, v) VALUES (%s, %s)", (200, 8))
    c.run("b", "ALTER TABLE pa DROP COLUMN w")
    c.run("a", "SELECT * FROM pa ORDER BY pk")
    c.run("b", "ALTER TABLE pa DROP COLUMN v")
    c.run("a", "SELECT * FROM pa ORDER BY pk")
    c.run("a", "SELECT v FROM pa WHERE pk = %s", (2,))
    c.run("a", "INSERT INTO pa (pk, v) VALUES (%s, %s)", (300, 9))


def other_objects(c):
    """Views, indexes and sequences dropped and made again under
    prepared statements of another connection."""
    c.run("a", "CREATE TABLE pa (pk INT PRIMARY KEY, v INT)")
    c.run("a", "INSERT INTO pa VALUES (1, 10), (2, 20), (3, 30)")
    c.run("a", "CREATE VIEW pv AS SELECT pk, v FROM pa WHERE v > 10")
    c.run("a", "CREATE INDEX pa_v ON pa (v)")
    c.run("a", "CREATE SEQUENCE ps")
    for _ in range(6):
        c.run("a", "SELECT pk FROM pv ORDER BY pk")
        c.run("a", "SELECT pk FROM pa WHERE v = %s", (20,))
        c.run("a", "SELECT nextval('ps')")
    c.run("b", "CREATE OR REPLACE VIEW pv AS SELECT pk, v FROM pa WHERE v < 30")
    c.run("b", "DROP INDEX pa_v")
    c.run("b", "DROP SEQUENCE ps")
    c.run("b", "CREATE SEQUENCE ps START 100")
    c.run("b", "UPDATE pa SET v = 20 WHERE pk = 3")
    c.run("a", "SELECT pk FROM pv ORDER BY pk")
    c.run("a", "SELECT pk FROM pa WHERE v = %s ORDER BY pk", (20,))
    c.run("a", "SELECT nextval('ps')")
    c.run("b", "CREATE UNIQUE INDEX pa_v ON pa (v, pk)")
    c.run("a", "SELECT pk FROM pa WHERE v = %s ORDER BY pk", (20,))
    c.run("b", "DROP VIEW pv")
    c.run("a", "SELECT pk FROM pv ORDER BY pk")
    c.run("b", "CREATE VIEW pv AS SELECT pk, v FROM pa")
    c.run("a", "SELECT pk FROM pv ORDER BY pk")


def sql_prepare(c):
    """SQL's PREPARE / EXECUTE / DEALLOCATE across DDL."""
    c.run("a", "CREATE TABLE pa (pk INT PRIMARY KEY, v INT)")
    c.run("a", "PREPARE q AS SELECT count(*) FROM pa")
    c.run("a", "PREPARE ins (int, int) AS INSERT INTO pa VALUES ($1, $2)")
    c.run("a", "EXECUTE ins (1, 10)")
    c.run("a", "EXECUTE ins (2, 20 + 1)")
    c.run("a", "EXECUTE q")
    c.run("a", "PREPARE q AS SELECT 1")
    c.run("b", "DROP TABLE pa")
    c.run("a", "EXECUTE q")
    c.run("a", "EXECUTE ins (3, 30)")
    c.run("b", "CREATE TABLE pa (pk INT PRIMARY KEY, v INT)")
    c.run("a", "EXECUTE ins (3, 30)")
    c.run("a", "EXECUTE q")
    c.run("a", "EXECUTE ins (4)")
    c.run("a", "EXECUTE ins ('5', '50')")
    c.run("a", "EXECUTE q")
    c.run("a", "DEALLOCATE q")
    c.run("a", "EXECUTE q")
    c.run("a", "DEALLOCATE q")
    c.run("a", "PREPARE Upper AS SELECT v FROM pa WHERE pk = $1")
    c.run("a", "EXECUTE upper (3)")
    c.run("a", "DEALLOCATE ALL")
    c.run("a", "EXECUTE ins (6, 60)")
    c.run("a", "SELECT pk, v FROM pa ORDER BY pk")


def session_values(c):
    """A plan that holds a setting's value, after SET."""
    for value in ["one", "two", "three", "four", "five", "six", "seven"]:
        c.run("a", f"SET application_name = '{value}'")
        c.run("a", "SELECT current_setting('application_name')")


def without_from(c):
    for sql in [
        "SELECT count(*)",
        "SELECT NULLIF(-COUNT(*), 5) + 54",
        "SELECT sum(1), max(2), min('a'), avg(4)",
        "SELECT 1 WHERE false",
        "SELECT count(*) WHERE false",
        "SELECT count(*) HAVING count(*) = 1",
        "SELECT count(*) HAVING false",
        "SELECT 1 HAVING 1 > 0",
        "SELECT EXISTS (SELECT 1 WHERE false)",
        "SELECT (SELECT count(*))",
        "SELECT max(x) FROM (SELECT 1 AS x WHERE false) s",
        "SELECT row_number() OVER () WHERE false",
        "SELECT row_number() OVER ()",
        "SELECT count(*) FROM (SELECT 1) s",
    ]:
        for _ in range(6):
            c.run("a", sql)


def nested_begin(c):
    """psycopg's default connection sends BEGIN before the first
    statement; the client's own BEGIN then nests."""
    cases = [
        ["BEGIN ISOLATION LEVEL REPEATABLE READ", "SHOW transaction_isolation"],
        ["SELECT 1", "BEGIN ISOLATION LEVEL SERIALIZABLE", "SHOW transaction_isolation"],
        ["BEGIN ISOLATION LEVEL READ COMMITTED", "SHOW transaction_isolation"],
        ["BEGIN READ ONLY", "SHOW transaction_read_only", "BEGIN READ WRITE"],
        ["SELECT 1", "BEGIN READ ONLY", "SHOW transaction_read_only"],
        ["SAVEPOINT s", "BEGIN ISOLATION LEVEL SERIALIZABLE"],
        ["SELECT 1/0", "BEGIN"],
    ]
    for i, case in enumerate(cases):
        name = f"tx{i}"
        conn = c.conn(name, autocommit=False)
        for sql in case:
            c.run(name, sql)
        conn.rollback()
    c.run("a", "BEGIN")
    c.run("a", "BEGIN ISOLATION LEVEL REPEATABLE READ")
    c.run("a", "SHOW transaction_isolation")
    c.run("a", "SELECT 1")
    c.run("a", "BEGIN ISOLATION LEVEL REPEATABLE READ")
    c.run("a", "BEGIN ISOLATION LEVEL SERIALIZABLE")
    c.run("a", "SHOW transaction_isolation")
    c.run("a", "ROLLBACK")
    c.run("a", "START TRANSACTION")
    c.run("a", "START TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY")
    c.run("a", "SHOW transaction_isolation")
    c.run("a", "SHOW transaction_read_only")
    c.run("a", "COMMIT")


SCENARIOS = [
    ("cycles", lambda c: cycles(c, with_delete=True, with_index=False)),
    ("cycles without DELETE", lambda c: cycles(c, with_delete=False, with_index=False)),
    ("cycles with an index", lambda c: cycles(c, with_delete=False, with_index=True)),
    ("result shape", result_shape),
    ("views, indexes, sequences", other_objects),
    ("SQL PREPARE", sql_prepare),
    ("session values", session_values),
    ("without FROM", without_from),
    ("nested BEGIN", nested_begin),
]


def transcript(conninfo, mode, scenario):
    c = Client(conninfo, mode)
    try:
        drop_all(c)
        c.lines.clear()
        scenario(c)
        lines = list(c.lines)
        drop_all(c)
        return lines
    finally:
        c.close()


def main():
    ndpdb, postgres = sys.argv[1], sys.argv[2]
    failed = False
    for mode in ["auto", "always", "never"]:
        for name, scenario in SCENARIOS:
            ours = transcript(ndpdb, mode, scenario)
            theirs = transcript(postgres, mode, scenario)
            if ours != theirs:
                failed = True
                print(f"--- {name} ({mode}): ndpdb and PostgreSQL differ")
                for line in difflib.unified_diff(
                    theirs, ours, "postgres", "ndpdb", lineterm="", n=2
                ):
                    print(line)
            else:
                print(f"{name} ({mode}): {len(ours)} lines match")
    if failed:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
