-- Prepared statements across DDL, after PostgreSQL's plancache regression
-- test (src/test/regress/sql/plancache.sql): a cached plan is made again
-- when a table, view, index or sequence it uses is dropped, made again or
-- altered; a prepared statement must not change its result columns
-- (0A000) but may change back; PREPARE's declared parameter types;
-- EXECUTE's argument count; DEALLOCATE [ALL]; currval after a sequence is
-- made again under its name.

CREATE TABLE pc_foo (q1 BIGINT PRIMARY KEY, q2 BIGINT)
INSERT INTO pc_foo VALUES (123, 456), (123456789, 4567890123), (4567890123456789, 123)
PREPARE prepstmt AS SELECT * FROM pc_foo ORDER BY q1
EXECUTE prepstmt
PREPARE prepstmt2(bigint) AS SELECT * FROM pc_foo WHERE q1 = $1
EXECUTE prepstmt2(123)

-- invalidate the plans and see what happens
DROP TABLE pc_foo
EXECUTE prepstmt
EXECUTE prepstmt2(123)

-- made again: the statements run against the new table
CREATE TABLE pc_foo (q1 BIGINT PRIMARY KEY, q2 BIGINT)
INSERT INTO pc_foo VALUES (123, 4567890123456789), (4567890123456789, -4567890123456789)
EXECUTE prepstmt
EXECUTE prepstmt2(123)

-- prepared statements must not change their result columns ...
ALTER TABLE pc_foo ADD COLUMN q3 BIGINT
EXECUTE prepstmt
EXECUTE prepstmt2(123)

-- ... but the change may be undone
ALTER TABLE pc_foo DROP COLUMN q3
EXECUTE prepstmt
EXECUTE prepstmt2(123)

-- a view, which the plan reads through
CREATE VIEW pc_voo AS SELECT * FROM pc_foo
PREPARE vprep AS SELECT * FROM pc_voo ORDER BY q1
EXECUTE vprep
CREATE OR REPLACE VIEW pc_voo AS SELECT q1, q2 / 2 AS q2 FROM pc_foo
EXECUTE vprep
DROP VIEW pc_voo
EXECUTE vprep

-- an index the plan chose, dropped and made again
CREATE TABLE pc_ix (k INT PRIMARY KEY, v INT)
INSERT INTO pc_ix VALUES (1, 10), (2, 20), (3, 20), (4, 40)
CREATE INDEX pc_ix_v ON pc_ix (v)
PREPARE byv(int) AS SELECT k FROM pc_ix WHERE v = $1 ORDER BY k
EXECUTE byv(20)
DROP INDEX pc_ix_v
INSERT INTO pc_ix VALUES (5, 20)
EXECUTE byv(20)
CREATE INDEX pc_ix_v ON pc_ix (v)
INSERT INTO pc_ix VALUES (6, 20)
EXECUTE byv(20)

-- writes through prepared statements, their table made again between
PREPARE ins(int, int) AS INSERT INTO pc_ix VALUES ($1, $2)
PREPARE upd(int) AS UPDATE pc_ix SET v = v + 1 WHERE k = $1
PREPARE del(int) AS DELETE FROM pc_ix WHERE k = $1
EXECUTE ins(7, 70)
EXECUTE upd(7)
DROP TABLE pc_ix
EXECUTE ins(8, 80)
CREATE TABLE pc_ix (k INT PRIMARY KEY, v INT, w TEXT)
EXECUTE ins(8, 80)
EXECUTE upd(8)
EXECUTE del(7)
SELECT k, v, w FROM pc_ix ORDER BY k
EXECUTE byv(81)

-- PREPARE's parameter types; EXECUTE's arguments
EXECUTE ins('9', '90')
EXECUTE ins(10)
EXECUTE ins(10, 100, 1000)
EXECUTE nosuch(1)
PREPARE ins AS SELECT 1
SELECT k, v FROM pc_ix ORDER BY k
DEALLOCATE ins
EXECUTE ins(11, 110)
DEALLOCATE ins
DEALLOCATE ALL
EXECUTE upd(8)

-- a query without FROM has one input row
PREPARE one AS SELECT count(*), sum(1), NULLIF(-COUNT(*), 5) + 54
EXECUTE one
EXECUTE one
PREPARE none AS SELECT count(*) WHERE false
EXECUTE none

-- currval belongs to the sequence, not to its name
CREATE SEQUENCE pc_seq
SELECT nextval('pc_seq')
SELECT currval('pc_seq')
DROP SEQUENCE pc_seq
CREATE SEQUENCE pc_seq START 50
SELECT currval('pc_seq')
SELECT nextval('pc_seq')
SELECT currval('pc_seq')

DROP TABLE pc_foo
DROP TABLE pc_ix
DROP SEQUENCE pc_seq
