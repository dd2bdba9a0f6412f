#!/usr/bin/env python3
"""Writes a sqllogictest file whose expected answers are PostgreSQL's.

Usage (under scripts/postgres-baseline.sh, which sets NDPDB_POSTGRES):

    scripts/postgres-baseline.sh -- python3 scripts/slt-from-postgres.py IN.sql OUT.slt

IN.sql holds one statement per line; `-- text` lines become comments.
A SELECT (or WITH / VALUES) becomes a `query` block with PostgreSQL's rows
in the order it returned them (so order them with ORDER BY); anything else
becomes `statement ok`; a failing statement becomes
`statement error <SQLSTATE>: <message>`, the form crates/sql/tests/slt.rs
matches.
"""
import os
import sys

import psycopg
from psycopg.types.string import TextLoader

META = set("\\.+*?()|[]{}^$")
NUMERIC_OIDS = {20, 21, 23, 700, 701, 1700}
INT_OIDS = {20, 21, 23}


def cell(v):
    if v is None:
        return "NULL"
    if v == "":
        return "(empty)"
    return v


def main():
    src, out = sys.argv[1], sys.argv[2]
    conn = psycopg.connect(os.environ["NDPDB_POSTGRES"], autocommit=True)
    # Every value as PostgreSQL's text output.
    for name in ["int2", "int4", "int8", "numeric", "float4", "float8", "bool",
                 "date", "timestamp", "timestamptz", "bytea", "bpchar", "varchar", "text",
                 "json", "jsonb"]:
        conn.adapters.register_loader(name, TextLoader)
    # Arrays too, in their text form ({1,2}), not as lists.
    for oid in [199, 1000, 1001, 1005, 1007, 1009, 1014, 1015, 1016, 1021, 1022, 1115, 1182,
                1231, 3807]:
        conn.adapters.register_loader(oid, TextLoader)
    lines = []
    for raw in open(src):
        sql = raw.strip()
        if not sql:
            lines.append("")
            continue
        if sql.startswith("--"):
            lines.append("#" + sql[2:])
            continue
        sql = sql.rstrip(";")
        cur = conn.cursor()
        try:
            cur.execute(sql)
        except psycopg.Error as e:
            # The runner reads the expectation as a regular expression.
            msg = "".join("\\" + c if c in META else c for c in e.diag.message_primary)
            lines += [f"statement error {e.sqlstate}: {msg}", sql, ""]
            continue
        if cur.description is None:
            lines += ["statement ok", sql, ""]
            continue
        types = "".join(
            "I" if d.type_code in INT_OIDS else "R" if d.type_code in NUMERIC_OIDS else "T"
            for d in cur.description
        )
        lines += [f"query {types}", sql, "----"]
        for row in cur.fetchall():
            lines.append(" ".join(cell(v) for v in row))
        lines.append("")
    with open(out, "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    main()
