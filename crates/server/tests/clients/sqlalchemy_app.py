"""An application as users write it — SQLAlchemy 2 Core and ORM, and
pandas — run against ndpdb and PostgreSQL 15 in the same run; the
transcripts (rows, generated keys, errors' SQLSTATEs) must be equal.

    python3 sqlalchemy_app.py NDPDB_CONNINFO POSTGRES_CONNINFO [core|orm|frames …]

Each scenario runs through both of SQLAlchemy's PostgreSQL drivers,
psycopg 3 and psycopg2. What it covers:

- connecting (the dialect's first queries: `pg_catalog.version()`,
  `current_schema()`, psycopg's type lookup through `to_regtype`);
- `MetaData.create_all` / `drop_all` (the dialect's `has_table` query:
  `relkind = ANY (ARRAY[…])`, `pg_table_is_visible`), SERIAL keys,
  foreign keys, indexes, UNIQUE, server defaults;
- Core: executemany inserts, `INSERT … RETURNING`, `UPDATE … RETURNING`,
  `DELETE … RETURNING`, outer joins with grouping, IN lists, and a
  constraint violation's SQLSTATE;
- ORM: a unit of work with a relationship (the bulk `INSERT … SELECT …
  FROM (VALUES …) ORDER BY … RETURNING` SQLAlchemy sends for several
  rows), loading, changing and deleting objects;
- pandas `DataFrame.to_sql` (replace and append, which reflects the
  table: the dialect's column query with `json_build_object`) and
  `read_sql`;
- documents: `JSON` and `JSONB` columns (dicts in, dicts out), the
  `->`, `->>`, `@>` and `?` operators as SQLAlchemy writes them, and
  `MetaData.reflect` of the table.

Prints "ok" when every transcript matches, else the differences.
"""

import datetime
import decimal
import difflib
import sys

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship


def engine(driver, conninfo):
    if driver == "psycopg":
        import psycopg

        return sa.create_engine(
            "postgresql+psycopg://", creator=lambda: psycopg.connect(conninfo)
        )
    import psycopg2

    return sa.create_engine(
        "postgresql+psycopg2://", creator=lambda: psycopg2.connect(conninfo)
    )


def sqlstate(e):
    orig = getattr(e, "orig", None)
    return getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)


def core(e, out):
    md = sa.MetaData()
    users = sa.Table(
        "app_users",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(50), nullable=False, unique=True),
        sa.Column("balance", sa.Numeric(10, 2)),
        sa.Column("active", sa.Boolean, server_default=sa.true()),
        sa.Column("created", sa.DateTime),
    )
    orders = sa.Table(
        "app_orders",
        md,
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("user_id", sa.Integer, sa.ForeignKey("app_users.id"), index=True),
        sa.Column("amount", sa.Float),
        sa.Column("note", sa.Text),
    )
    md.drop_all(e)
    md.create_all(e)
    out.append(("has_table", sa.inspect(e).has_table("app_users"), sa.inspect(e).has_table("nope")))
    with e.begin() as c:
        c.execute(
            users.insert(),
            [
                {"name": "ann", "balance": decimal.Decimal("10.50"),
                 "created": datetime.datetime(2024, 1, 2, 3, 4, 5)},
                {"name": "bob", "balance": decimal.Decimal("3.25"), "created": None},
            ],
        )
        r = c.execute(users.insert().returning(users.c.id, users.c.active), {"name": "cy"})
        out.append(("insert returning", r.all()))
        c.execute(
            orders.insert(),
            [
                {"user_id": 1, "amount": 1.5, "note": "x"},
                {"user_id": 1, "amount": 2.5, "note": None},
                {"user_id": 2, "amount": 4.0, "note": "y"},
            ],
        )
    with e.begin() as c:
        q = (
            sa.select(users.c.name, sa.func.count(orders.c.id), sa.func.sum(orders.c.amount))
            .select_from(users.outerjoin(orders))
            .group_by(users.c.name)
            .order_by(users.c.name)
        )
        out.append(("outer join", c.execute(q).all()))
        out.append(("in", c.execute(
            sa.select(users.c.name).where(users.c.id.in_([1, 3])).order_by(users.c.id)).all()))
        r = c.execute(
            users.update()
            .where(users.c.balance < 5)
            .values(balance=users.c.balance + 1)
            .returning(users.c.name, users.c.balance)
        )
        out.append(("update returning", sorted(r.all())))
        r = c.execute(orders.delete().where(orders.c.note.is_(None)).returning(orders.c.id, orders.c.amount))
        out.append(("delete returning", r.all()))
    try:
        with e.begin() as c:
            c.execute(users.insert(), {"name": "ann"})
        out.append(("duplicate", "no error"))
    except sa.exc.IntegrityError as err:
        out.append(("duplicate", sqlstate(err)))
    md.drop_all(e)


def orm(e, out):
    class Base(DeclarativeBase):
        pass

    class Author(Base):
        __tablename__ = "app_authors"
        id: Mapped[int] = mapped_column(primary_key=True)
        name: Mapped[str] = mapped_column(sa.String(40))
        books: Mapped[list["Book"]] = relationship(back_populates="author", order_by="Book.id")

    class Book(Base):
        __tablename__ = "app_books"
        id: Mapped[int] = mapped_column(primary_key=True)
        title: Mapped[str] = mapped_column(sa.String(80))
        author_id: Mapped[int] = mapped_column(sa.ForeignKey("app_authors.id"))
        author: Mapped[Author] = relationship(back_populates="books")

    Base.metadata.drop_all(e)
    Base.metadata.create_all(e)
    with Session(e) as s:
        a = Author(
            name="le guin",
            books=[Book(title="the dispossessed"), Book(title="the lathe of heaven"),
                   Book(title="the word for world is forest")],
        )
        s.add(a)
        s.commit()
        out.append(("orm keys", a.id, [b.id for b in a.books]))
    with Session(e) as s:
        got = s.scalars(sa.select(Author).where(Author.name == "le guin")).one()
        out.append(("orm load", [b.title for b in got.books]))
        got.books[0].title = "changed"
        s.delete(got.books[1])
        s.commit()
        out.append(("orm after", s.execute(sa.select(Book.id, Book.title).order_by(Book.id)).all()))
    Base.metadata.drop_all(e)


def inspect(e, out):
    md = sa.MetaData()
    sa.Table("app_parent", md,
             sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("name", sa.String(40), nullable=False, unique=True),
             sa.Column("tags", ARRAY(sa.Text)),
             comment="parents")
    sa.Table("app_child", md,
             sa.Column("id", sa.Integer, primary_key=True),
             sa.Column("pid", sa.ForeignKey("app_parent.id")),
             sa.Column("v", sa.Float, index=True))
    md.drop_all(e)
    md.create_all(e)
    i = sa.inspect(e)
    out.append(("tables", sorted(i.get_table_names())))
    out.append(("pk", i.get_pk_constraint("app_parent")))
    out.append(("fks", i.get_foreign_keys("app_child")))
    out.append(("indexes", i.get_indexes("app_child")))
    out.append(("unique", i.get_unique_constraints("app_parent")))
    out.append(("comment", i.get_table_comment("app_parent")))
    with e.begin() as c:
        c.execute(sa.text("insert into app_parent values (1, 'a', ARRAY['x', 'y']), (2, 'b', '{}')"))
        rows = c.execute(sa.text(
            "select id, tags, array_length(tags, 1), :t = ANY(tags) from app_parent order by id"
        ), {"t": "y"}).all()
        out.append(("arrays", rows))
        got = c.execute(sa.select(md.tables["app_parent"].c.name).where(
            md.tables["app_parent"].c.tags.contains(["x"]))).all()
        out.append(("contains", got))
    md.drop_all(e)


def frames(e, out):
    import pandas as pd

    df = pd.DataFrame({"k": [1, 2, 3], "v": [0.5, None, 2.5], "s": ["a", "b", None]})
    df.to_sql("app_frame", e, if_exists="replace", index=False)
    df.to_sql("app_frame", e, if_exists="append", index=False)
    back = pd.read_sql("select k, v, s from app_frame order by k, v", e)
    out.append(("pandas", repr(back.to_dict("list")), [str(t) for t in back.dtypes]))
    df.to_sql("app_frame", e, if_exists="replace", index=False)
    out.append(("pandas replace", len(pd.read_sql("select * from app_frame", e))))
    with e.begin() as c:
        c.execute(sa.text("drop table app_frame"))


def documents(e, out):
    md = sa.MetaData()
    docs = sa.Table("app_docs", md,
                    sa.Column("id", sa.Integer, primary_key=True),
                    sa.Column("body", JSONB, nullable=False),
                    sa.Column("raw", sa.JSON))
    md.drop_all(e)
    md.create_all(e)
    with e.begin() as c:
        c.execute(docs.insert(), [
            {"id": 1, "body": {"kind": "book", "tags": ["a", "b"], "n": 1.50}, "raw": {"z": 1, "a": [1, 2]}},
            {"id": 2, "body": {"kind": "film", "n": 2}, "raw": None},
            {"id": 3, "body": {"kind": "book", "extra": None}, "raw": [1, "x"]},
        ])
        rows = c.execute(sa.select(docs.c.id, docs.c.body, docs.c.raw).order_by(docs.c.id)).all()
        out.append(("docs", rows))
        books = c.execute(sa.select(docs.c.id).where(docs.c.body["kind"].astext == "book")
                          .order_by(docs.c.id)).all()
        out.append(("astext", books))
        has = c.execute(sa.select(docs.c.id).where(docs.c.body.has_key("tags"))).all()
        out.append(("has_key", has))
        contains = c.execute(sa.select(docs.c.id).where(docs.c.body.contains({"n": 2}))).all()
        out.append(("contains", contains))
        agg = c.execute(sa.text(
            "select body ->> 'kind' as kind, count(*), jsonb_agg(id order by id) "
            "from app_docs group by 1 order by 1")).all()
        out.append(("grouped", agg))
        c.execute(docs.update().where(docs.c.id == 2).values(
            body=docs.c.body + sa.cast({"seen": True}, JSONB)))
        out.append(("updated", c.execute(sa.select(docs.c.body).where(docs.c.id == 2)).scalar()))
    reflected = sa.MetaData()
    reflected.reflect(e, only=["app_docs"])
    out.append(("reflect", [(col.name, str(col.type), col.nullable, col.primary_key)
                            for col in reflected.tables["app_docs"].columns]))
    md.drop_all(e)


SCENARIOS = {"core": core, "orm": orm, "inspect": inspect, "frames": frames,
             "documents": documents}


def transcript(conninfo, scenarios):
    out = []
    for driver in ("psycopg", "psycopg2"):
        e = engine(driver, conninfo)
        out.append(("driver", driver))
        for scenario in scenarios:
            try:
                scenario(e, out)
            except Exception as err:  # a failure is part of the transcript
                out.append((scenario.__name__, "failed", type(err).__name__, sqlstate(err)))
        e.dispose()
    return [repr(line) for line in out]


def main():
    ndpdb, postgres = sys.argv[1], sys.argv[2]
    # Scenarios by name after the two conninfos; all of them by default.
    scenarios = [SCENARIOS[n] for n in sys.argv[3:]] or list(SCENARIOS.values())
    got, want = transcript(ndpdb, scenarios), transcript(postgres, scenarios)
    if any("'failed'" in line for line in want):
        print("the scenario fails on PostgreSQL itself:\n" + "\n".join(want))
        sys.exit(1)
    if got != want:
        print("\n".join(difflib.unified_diff(want, got, "postgres", "ndpdb", lineterm="")))
        sys.exit(1)
    print("\n".join(got))
    print("ok")


if __name__ == "__main__":
    main()
