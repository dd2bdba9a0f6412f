"""Random sequences of DDL interleaved with prepared and unprepared
statements on two connections, run on ndpdb and on PostgreSQL 15; every
result (rows, command tag, SQLSTATE) must be the same on both.

    python3 ddl_sequences.py NDPDB_CONNINFO POSTGRES_CONNINFO [SEQUENCES [STEPS [SEED]]]

Each sequence draws its steps from a seeded generator: DROP/CREATE of two
tables of the same names, ALTER TABLE ADD/DROP COLUMN, CREATE/DROP INDEX,
and INSERT, INSERT … SELECT, UPDATE, DELETE and SELECTs of a fixed set of
texts, so that psycopg prepares them server-side (each connection at a
prepare threshold of its own: psycopg's default of 5, every statement, or
none) and runs them again after the DDL. Both connections are in
autocommit. The first difference stops the run and prints the seed, the
steps so far and both answers.
"""

import random
import sys

import psycopg

TABLES = ["da", "db"]
EXTRA = ["x", "y"]


def outcome(conn, sql, params):
    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
            rows = ""
            if cur.description is not None:
                rows = " " + repr(cur.fetchall())
            return f"{cur.statusmessage}{rows}"
    except psycopg.Error as e:
        return f"ERROR {e.sqlstate}"


def connect(conninfo, threshold):
    c = psycopg.connect(conninfo, autocommit=True)
    c.prepare_threshold = threshold
    return c


def steps(rng, n):
    """The sequence: (connection, SQL, parameters), after both tables
    are made."""
    out = [("a", f"CREATE TABLE {t} (pk INT PRIMARY KEY, v INT)", None) for t in TABLES]
    for _ in range(n):
        t = rng.choice(TABLES)
        other = TABLES[1 - TABLES.index(t)]
        col = rng.choice(EXTRA)
        k = rng.randrange(20)
        who = rng.choice("ab")
        kind = rng.choices(
            [
                "drop", "create", "add", "dropcol", "index", "dropindex",
                "insert", "insert_literal", "insert_select", "update",
                "delete", "select_all", "aggregate", "by_value", "join",
                "extra",
            ],
            weights=[1, 3, 3, 2, 2, 2, 10, 3, 3, 5, 3, 6, 6, 5, 3, 4],
        )[0]
        if kind == "drop":
            step = (f"DROP TABLE IF EXISTS {t}", None)
        elif kind == "create":
            step = (f"CREATE TABLE {t} (pk INT PRIMARY KEY, v INT)", None)
        elif kind == "add":
            ty = rng.choice(["INT", "TEXT"])
            step = (f"ALTER TABLE {t} ADD COLUMN {col} {ty}", None)
        elif kind == "dropcol":
            step = (f"ALTER TABLE {t} DROP COLUMN {rng.choice(EXTRA + ['v'])}", None)
        elif kind == "index":
            step = (f"CREATE INDEX {t}_v ON {t} (v)", None)
        elif kind == "dropindex":
            step = (f"DROP INDEX IF EXISTS {t}_v", None)
        elif kind == "insert":
            step = (f"INSERT INTO {t} (pk, v) VALUES (%s, %s)", (k, rng.randrange(5)))
        elif kind == "insert_literal":
            step = (f"INSERT INTO {t} (pk, v) VALUES ({k}, {rng.randrange(5)})", None)
        elif kind == "insert_select":
            step = (f"INSERT INTO {t} (pk, v) SELECT pk + 100, v FROM {other} WHERE pk < %s", (k,))
        elif kind == "update":
            step = (f"UPDATE {t} SET v = v + 1 WHERE pk = %s", (k,))
        elif kind == "delete":
            step = (f"DELETE FROM {t} WHERE pk = %s", (k,))
        elif kind == "select_all":
            step = (f"SELECT * FROM {t} ORDER BY pk", None)
        elif kind == "aggregate":
            step = (f"SELECT count(*), sum(v), max(pk) FROM {t}", None)
        elif kind == "by_value":
            step = (f"SELECT pk FROM {t} WHERE v = %s ORDER BY pk", (rng.randrange(5),))
        elif kind == "join":
            step = (
                f"SELECT a.pk, b.v FROM {t} a JOIN {other} b ON a.pk = b.pk ORDER BY 1",
                None,
            )
        else:
            step = (f"SELECT {col} FROM {t} WHERE pk = %s", (k,))
        out.append((who,) + step)
    return out


def run(conninfo, thresholds, sequence):
    conns = {w: connect(conninfo, thresholds[w]) for w in "ab"}
    try:
        for t in TABLES:
            outcome(conns["a"], f"DROP TABLE IF EXISTS {t}", None)
        for who, sql, params in sequence:
            yield outcome(conns[who], sql, params)
    finally:
        for t in TABLES:
            outcome(conns["a"], f"DROP TABLE IF EXISTS {t}", None)
        for c in conns.values():
            c.close()


def main():
    ndpdb, postgres = sys.argv[1], sys.argv[2]
    sequences = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    length = int(sys.argv[4]) if len(sys.argv) > 4 else 60
    seed = int(sys.argv[5]) if len(sys.argv) > 5 else 20261202
    checked = 0
    for i in range(sequences):
        rng = random.Random(seed + i)
        thresholds = {w: rng.choice([5, 0, None]) for w in "ab"}
        sequence = steps(rng, length)
        ours = run(ndpdb, thresholds, sequence)
        theirs = run(postgres, thresholds, sequence)
        for n, (step, a, b) in enumerate(zip(sequence, ours, theirs)):
            checked += 1
            if a != b:
                print(f"sequence {seed + i} (prepare thresholds {thresholds}), step {n}:")
                for who, sql, params in sequence[: n + 1]:
                    print(f"  {who}> {sql} {params or ''}")
                print(f"  PostgreSQL: {b}")
                print(f"  ndpdb:      {a}")
                sys.exit(1)
    print(f"{sequences} sequences, {checked} results: 0 differences")
    print("ok")


if __name__ == "__main__":
    main()
