"""Runs psycopg 3, unmodified, against an ndpdb server: parameterised
INSERT/SELECT/UPDATE, transactions, server-side prepared statements, binary
results, COPY FROM STDIN and an error's SQLSTATE.

python3 psycopg_client.py PORT   (exit 0 = all checks hold)
"""

import datetime
import decimal
import sys

import psycopg
from psycopg import errors

port = sys.argv[1]
conninfo = f"host=127.0.0.1 port={port} user=psy dbname=ndpdb connect_timeout=5"

with psycopg.connect(conninfo) as conn:
    assert conn.info.server_version >= 150000, conn.info.server_version
    conn.execute(
        "CREATE TABLE psy_orders (id INT PRIMARY KEY, customer TEXT, amount NUMERIC(10,2),"
        " placed DATE, at TIMESTAMP, weight DOUBLE PRECISION, paid BOOLEAN)"
    )
    rows = [
        (i, f"c{i % 3}", decimal.Decimal(f"{i}.50"), datetime.date(2024, 3, i),
         datetime.datetime(2024, 3, i, 10, 30), i / 4, i % 2 == 0)
        for i in range(1, 11)
    ]
    with conn.cursor() as cur:
        cur.executemany("INSERT INTO psy_orders VALUES (%s, %s, %s, %s, %s, %s, %s)", rows)
    conn.commit()

    # Server-side prepared statement, text and binary results.
    for binary in (False, True):
        with conn.cursor(binary=binary) as cur:
            for i in range(1, 11):
                cur.execute("SELECT * FROM psy_orders WHERE id = %s", (i,), prepare=True)
                got = cur.fetchone()
                assert got == rows[i - 1], (binary, got, rows[i - 1])

    # Aggregates and group by with a parameter.
    got = conn.execute(
        "SELECT customer, COUNT(*), SUM(amount) FROM psy_orders WHERE weight > %s"
        " GROUP BY customer ORDER BY customer",
        (0.5,),
    ).fetchall()
    assert got == [
        ("c0", 3, decimal.Decimal("19.50")),
        ("c1", 3, decimal.Decimal("22.50")),
        ("c2", 2, decimal.Decimal("14.00")),
    ], got

    # A transaction that rolls back, then one that commits (from idle:
    # psycopg would nest a SAVEPOINT inside an open one).
    conn.commit()
    with conn.transaction(force_rollback=True):
        conn.execute("UPDATE psy_orders SET paid = %s", (True,))
        assert conn.execute("SELECT COUNT(*) FROM psy_orders WHERE paid").fetchone()[0] == 10
    assert conn.execute("SELECT COUNT(*) FROM psy_orders WHERE paid").fetchone()[0] == 5
    conn.commit()
    with conn.transaction():
        cur = conn.execute("UPDATE psy_orders SET amount = amount + %s WHERE id <= %s",
                           (decimal.Decimal("1.00"), 4))
        assert cur.rowcount == 4, cur.rowcount
    assert conn.execute("SELECT SUM(amount) FROM psy_orders").fetchone()[0] == decimal.Decimal("64.00")

    # COPY FROM STDIN through the driver.
    with conn.cursor() as cur:
        with cur.copy("COPY psy_orders (id, customer, amount) FROM STDIN") as copy:
            for i in range(100, 110):
                copy.write_row((i, f"bulk{i}", decimal.Decimal("0.01")))
            copy.write_row((110, None, None))
    conn.commit()
    assert conn.execute("SELECT COUNT(*) FROM psy_orders WHERE id >= 100").fetchone()[0] == 11
    assert conn.execute("SELECT customer FROM psy_orders WHERE id = 110").fetchone()[0] is None

    # Errors carry their SQLSTATE and leave the connection usable.
    try:
        conn.execute("INSERT INTO psy_orders (id) VALUES (%s)", (1,))
        raise AssertionError("duplicate key must fail")
    except errors.UniqueViolation as e:
        assert e.sqlstate == "23505"
    conn.rollback()
    try:
        conn.execute("SELECT nope FROM psy_orders")
        raise AssertionError("unknown column must fail")
    except errors.UndefinedColumn as e:
        assert e.sqlstate == "42703"
    conn.rollback()
    # What drivers and tools ask about the server.
    assert int(conn.execute("SELECT current_setting('server_version_num')").fetchone()[0]) >= 150000
    assert conn.execute("SELECT version()").fetchone()[0].startswith("PostgreSQL 15")
    conn.execute("SET application_name = 'psy-test'")
    assert conn.execute("SHOW application_name").fetchone()[0] == "psy-test"
    assert conn.execute("SELECT current_setting('nope', true)").fetchone()[0] is None

print("psycopg ok")
