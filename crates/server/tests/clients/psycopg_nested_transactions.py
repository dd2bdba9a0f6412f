"""Runs psycopg 3's nested transaction blocks, unmodified: the outermost
`with conn.transaction():` is BEGIN/COMMIT, each inner one a SAVEPOINT
that is released when the block ends normally and rolled back to (then
released) when it raises. Inner blocks that raise a Python exception, fail
on the server or raise psycopg.Rollback are undone while the outer block
commits; an outer block that raises undoes its released inner blocks too.

python3 psycopg_nested_transactions.py CONNINFO   (exit 0 = all checks hold)
"""

import sys

import psycopg
from psycopg import errors

conninfo = sys.argv[1]


class Boom(Exception):
    pass


def rows(conn):
    return conn.execute("SELECT id, note FROM nested ORDER BY id").fetchall()


with psycopg.connect(conninfo, autocommit=True) as conn:
    conn.execute("CREATE TABLE nested (id INT PRIMARY KEY, note TEXT)")

    with conn.transaction():
        conn.execute("INSERT INTO nested VALUES (1, 'outer')")

        # A Python exception in an inner block rolls back to its savepoint.
        try:
            with conn.transaction():
                conn.execute("INSERT INTO nested VALUES (2, 'inner, raised')")
                raise Boom()
        except Boom:
            pass
        assert rows(conn) == [(1, "outer")], rows(conn)

        # A statement failing on the server: the block is rolled back to its
        # savepoint and the outer transaction goes on.
        try:
            with conn.transaction():
                conn.execute("UPDATE nested SET note = 'changed' WHERE id = 1")
                conn.execute("INSERT INTO nested VALUES (1, 'duplicate')")
            raise AssertionError("the duplicate key must fail")
        except errors.UniqueViolation as e:
            assert e.sqlstate == "23505"
        assert rows(conn) == [(1, "outer")], rows(conn)

        # Two levels: Rollback() undoes the innermost block only; a block
        # that ends normally is released into its parent.
        with conn.transaction():
            conn.execute("INSERT INTO nested VALUES (3, 'middle')")
            with conn.transaction():
                conn.execute("INSERT INTO nested VALUES (4, 'innermost, rolled back')")
                conn.execute("UPDATE nested SET note = 'touched' WHERE id = 3")
                raise psycopg.Rollback()
            conn.execute("INSERT INTO nested VALUES (5, 'middle again')")
            with conn.transaction():
                conn.execute("INSERT INTO nested VALUES (6, 'innermost, kept')")

        # Rollback(tx) from an inner block undoes up to tx, released blocks
        # inside it included.
        with conn.transaction() as doomed:
            conn.execute("INSERT INTO nested VALUES (7, 'rolled back with its block')")
            with conn.transaction():
                conn.execute("INSERT INTO nested VALUES (8, 'released, then rolled back')")
            with conn.transaction():
                conn.execute("DELETE FROM nested WHERE id = 1")
                raise psycopg.Rollback(doomed)

        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INTRANS
        assert rows(conn) == [(1, "outer"), (3, "middle"), (5, "middle again"),
                              (6, "innermost, kept")], rows(conn)

    expected = [(1, "outer"), (3, "middle"), (5, "middle again"), (6, "innermost, kept")]
    assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    with psycopg.connect(conninfo) as other:
        assert rows(other) == expected, rows(other)

    # An outer block that raises rolls back everything, released inner
    # blocks included.
    try:
        with conn.transaction():
            conn.execute("INSERT INTO nested VALUES (9, 'outer, raised')")
            with conn.transaction():
                conn.execute("INSERT INTO nested VALUES (10, 'inner, released')")
            conn.execute("UPDATE nested SET note = 'gone' WHERE id = 1")
            raise Boom()
    except Boom:
        pass
    assert rows(conn) == expected, rows(conn)

    # Without autocommit the first statement opens the transaction and every
    # transaction block is a savepoint in it.
    with psycopg.connect(conninfo) as tx_conn:
        tx_conn.execute("INSERT INTO nested VALUES (11, 'implicit')")
        try:
            with tx_conn.transaction():
                tx_conn.execute("INSERT INTO nested VALUES (12, 'savepoint, raised')")
                raise Boom()
        except Boom:
            pass
        with tx_conn.transaction():
            tx_conn.execute("INSERT INTO nested VALUES (13, 'savepoint, released')")
        tx_conn.commit()
    assert [r[0] for r in rows(conn)] == [1, 3, 5, 6, 11, 13], rows(conn)

print("psycopg nested transactions ok")
