-- Views: CREATE VIEW with and without a column list, over joins,
-- aggregates and other views; a view read twice in one query and in a
-- scalar subquery (CH-benCHmark's Q15 shape); CREATE OR REPLACE VIEW
-- and its 42P16 refusals; DROP VIEW [IF EXISTS] [CASCADE]; the 42P07,
-- 42P01, 42809 and 2BP01 errors of views and the relations they read;
-- views in the catalog relations and inside a transaction block. The
-- expected answers are PostgreSQL 15's (scripts/slt-from-postgres.py
-- over src/views.sql).

CREATE TABLE vt (id INT PRIMARY KEY, grp TEXT, amount NUMERIC(8,2), made DATE);
INSERT INTO vt VALUES (1, 'a', 10.50, '2024-01-01'), (2, 'a', 4.25, '2024-02-01'), (3, 'b', 7.00, NULL), (4, NULL, 1.00, '2024-03-01');
CREATE TABLE vs (grp TEXT PRIMARY KEY, label VARCHAR(10));
INSERT INTO vs VALUES ('a', 'alpha'), ('b', 'beta'), ('c', 'gamma');
CREATE VIEW v1 AS SELECT id, grp, amount FROM vt WHERE amount > 2;
SELECT * FROM v1 ORDER BY id;
SELECT id FROM v1 WHERE grp = 'a' ORDER BY id DESC;
SELECT count(*), sum(amount) FROM v1;
-- a column list names the columns
CREATE VIEW v2 (k, total, n) AS SELECT grp, sum(amount), count(*) FROM vt GROUP BY grp;
SELECT * FROM v2 ORDER BY k;
SELECT k, total FROM v2 WHERE n > 1;
-- fewer names than columns: the rest keep the query's names
CREATE VIEW v3 (ident) AS SELECT id, amount * 2 AS doubled, made FROM vt;
SELECT * FROM v3 ORDER BY ident;
SELECT ident, doubled FROM v3 WHERE made IS NULL;
-- a view over a join, one over another view, one over a VALUES list
CREATE VIEW vj AS SELECT vt.id, vs.label, vt.amount FROM vt JOIN vs ON vt.grp = vs.grp;
SELECT * FROM vj ORDER BY id;
CREATE VIEW vv AS SELECT label, sum(amount) AS s, max(id) AS top FROM vj GROUP BY label;
SELECT * FROM vv ORDER BY label;
CREATE VIEW vvals (n, word) AS VALUES (1, 'one'), (2, 'two');
SELECT word FROM vvals WHERE n = 2;
-- views of SELECT *: the columns are the table's when the view was made
CREATE VIEW vstar AS SELECT * FROM vs;
SELECT * FROM vstar ORDER BY grp;
CREATE VIEW vstar2 AS SELECT vs.*, vt.id FROM vs JOIN vt ON vt.grp = vs.grp;
SELECT * FROM vstar2 ORDER BY id;
-- ORDER BY, LIMIT and DISTINCT inside a view
CREATE VIEW vtop AS SELECT id, amount FROM vt ORDER BY amount DESC LIMIT 2;
SELECT * FROM vtop;
CREATE VIEW vgrp AS SELECT DISTINCT grp FROM vt;
SELECT * FROM vgrp ORDER BY grp;
-- joined with itself and with tables, aliased with column names
SELECT a.id, b.id FROM v1 a JOIN v1 b ON a.grp = b.grp AND a.id < b.id ORDER BY 1, 2;
SELECT x.g, x.t, vs.label FROM v2 AS x (g, t) LEFT JOIN vs ON vs.grp = x.g ORDER BY x.g;
SELECT v1.id, vs.label FROM v1, vs WHERE v1.grp = vs.grp ORDER BY v1.id;
SELECT * FROM v2 AS x (a, b, c, d);
-- CH-benCHmark's Q15 as BenchBase sends it: the view in FROM and in a
-- scalar subquery, then dropped
CREATE TABLE order_line (ol_w_id INT, ol_o_id INT, ol_number INT, ol_i_id INT, ol_supply_w_id INT, ol_delivery_d TIMESTAMP, ol_amount NUMERIC(6,2), PRIMARY KEY (ol_w_id, ol_o_id, ol_number));
CREATE TABLE stock (s_w_id INT, s_i_id INT, s_quantity INT, PRIMARY KEY (s_w_id, s_i_id));
CREATE TABLE supplier (su_suppkey INT PRIMARY KEY, su_name CHAR(25), su_address VARCHAR(40), su_phone CHAR(15));
INSERT INTO stock VALUES (1, 1, 10), (1, 2, 20), (2, 1, 30), (2, 3, 40);
INSERT INTO order_line VALUES (1, 1, 1, 1, 1, '2007-01-03 10:00:00', 10.00), (1, 1, 2, 2, 1, '2007-01-05 00:00:00', 5.00), (1, 2, 1, 1, 2, '2007-02-01 00:00:00', 7.00), (2, 1, 1, 3, 2, '2006-12-31 23:59:59', 12.00), (2, 1, 2, 1, 1, NULL, 3.00);
INSERT INTO supplier VALUES (1, 'Supplier#1', 'one street', '11-111'), (2, 'Supplier#2', 'two street', '22-222'), (6, 'Supplier#6', 'six street', '66-666');
CREATE view revenue0 (supplier_no, total_revenue) AS SELECT mod((s_w_id * s_i_id),10000) as supplier_no, sum(ol_amount) as total_revenue FROM order_line, stock WHERE ol_i_id = s_i_id AND ol_supply_w_id = s_w_id AND ol_delivery_d >= '2007-01-02 00:00:00.000000' GROUP BY mod((s_w_id * s_i_id),10000);
SELECT * FROM revenue0 ORDER BY supplier_no;
SELECT su_suppkey, su_name, su_address, su_phone, total_revenue FROM supplier, revenue0 WHERE su_suppkey = supplier_no AND total_revenue = (SELECT max(total_revenue) FROM revenue0) ORDER BY su_suppkey;
SELECT supplier_no FROM revenue0 WHERE total_revenue < (SELECT max(total_revenue) FROM revenue0) ORDER BY supplier_no;
DROP VIEW revenue0;
SELECT * FROM revenue0;
-- views in subqueries and WITH; a WITH query of the same name hides a view
SELECT id FROM vt WHERE id IN (SELECT id FROM v1 WHERE amount < 8) ORDER BY id;
SELECT id FROM vt WHERE EXISTS (SELECT 1 FROM vj WHERE vj.id = vt.id) ORDER BY id;
SELECT id, (SELECT label FROM vstar WHERE vstar.grp = vt.grp) FROM vt ORDER BY id;
WITH w AS (SELECT k, total FROM v2) SELECT count(*) FROM w;
WITH v1 AS (SELECT 42 AS id) SELECT * FROM v1;
SELECT * FROM (SELECT id FROM v1) AS s ORDER BY id;
-- views see the tables as they are now
INSERT INTO vt VALUES (5, 'c', 3.00, '2024-04-01');
UPDATE vt SET amount = 20 WHERE id = 1;
SELECT * FROM v2 ORDER BY k;
SELECT * FROM vj ORDER BY id;
INSERT INTO vs SELECT 'd', label FROM vj WHERE id = 5;
SELECT * FROM vs ORDER BY grp;
DELETE FROM vs WHERE grp = 'd';
-- CREATE OR REPLACE VIEW: same columns, or more at the end
CREATE OR REPLACE VIEW v1 AS SELECT id, grp, amount FROM vt WHERE amount > 5;
SELECT * FROM v1 ORDER BY id;
CREATE OR REPLACE VIEW v1 AS SELECT id, grp, amount, made FROM vt;
SELECT * FROM v1 ORDER BY id;
CREATE OR REPLACE VIEW v1 AS SELECT id, grp FROM vt;
CREATE OR REPLACE VIEW v1 AS SELECT id, grp AS g, amount, made FROM vt;
CREATE OR REPLACE VIEW v1 AS SELECT id, amount AS grp, amount, made FROM vt;
CREATE OR REPLACE VIEW v3 (ident, twice) AS SELECT id, amount * 2, made FROM vt;
CREATE OR REPLACE VIEW vnew AS SELECT 1 AS one;
SELECT * FROM vnew;
CREATE OR REPLACE VIEW vt AS SELECT 1 AS id;
-- errors at CREATE VIEW
CREATE VIEW v1 AS SELECT 1;
CREATE VIEW vt AS SELECT 1;
CREATE TABLE v1 (a INT);
CREATE SEQUENCE v1;
CREATE INDEX v1 ON vt (grp);
CREATE VIEW vbad AS SELECT * FROM nope;
CREATE VIEW vbad AS SELECT nope FROM vt;
CREATE VIEW vbad AS SELECT vs.id FROM vt;
CREATE VIEW vbad (a, b, c) AS SELECT id, grp FROM vt;
CREATE VIEW vbad AS SELECT id, id FROM vt;
CREATE VIEW vbad (a, a) AS SELECT id, grp FROM vt;
CREATE VIEW vbad AS SELECT 1 + 1, 2 + 2;
CREATE VIEW vbad AS SELECT $1;
SELECT * FROM vbad;
-- what only tables do
CREATE INDEX ON v1 (id);
ALTER TABLE v1 ADD COLUMN x INT;
ALTER TABLE v1 DROP COLUMN id;
TRUNCATE v1;
ANALYZE v1;
VACUUM v1;
DROP SEQUENCE v1;
DROP INDEX v1;
-- DROP VIEW
DROP VIEW nope;
DROP VIEW IF EXISTS nope;
DROP VIEW vt;
DROP TABLE v1;
DROP TABLE vt, v1;
DROP VIEW vj;
DROP TABLE vs;
DROP VIEW vv, vj;
SELECT * FROM vj;
SELECT count(*) FROM vstar;
DROP VIEW IF EXISTS vstar, nope;
SELECT * FROM vstar;
-- DROP TABLE … CASCADE drops the views on it, and the views on those
CREATE TABLE dt (a INT, b TEXT);
INSERT INTO dt VALUES (1, 'x'), (2, 'y');
CREATE VIEW dv1 AS SELECT a, b FROM dt;
CREATE VIEW dv2 AS SELECT a FROM dv1 WHERE a > 1;
CREATE VIEW dv3 AS SELECT count(*) AS n FROM dt;
SELECT * FROM dv2;
DROP TABLE dt;
DROP TABLE dt RESTRICT;
DROP VIEW dv1;
DROP TABLE dt CASCADE;
SELECT * FROM dv1;
SELECT * FROM dv2;
SELECT * FROM dv3;
CREATE TABLE dt (a INT);
SELECT * FROM dt;
-- DROP VIEW … CASCADE
CREATE VIEW c1 AS SELECT id FROM vt;
CREATE VIEW c2 AS SELECT id FROM c1;
DROP VIEW c1 CASCADE;
SELECT * FROM c2;
SELECT * FROM c1;
-- ALTER TABLE with views on the table
CREATE TABLE at (a INT, b INT, c INT);
INSERT INTO at VALUES (1, 2, 3);
CREATE VIEW av AS SELECT * FROM at;
CREATE VIEW av2 AS SELECT a, c FROM at;
ALTER TABLE at ADD COLUMN d INT DEFAULT 4;
SELECT * FROM av;
SELECT * FROM at;
ALTER TABLE at DROP COLUMN b;
ALTER TABLE at DROP COLUMN d;
SELECT * FROM av2;
ALTER TABLE at DROP COLUMN b CASCADE;
SELECT * FROM av;
SELECT * FROM av2;
-- the catalog relations
SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name;
SELECT table_name, check_option FROM information_schema.views WHERE table_schema = 'public' ORDER BY table_name;
SELECT c.relname, c.relkind, c.relhasindex FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') ORDER BY 1;
SELECT c.relname, c.relnatts, c.relhasrules FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'v' ORDER BY 1;
SELECT table_name, column_name, ordinal_position, data_type, is_nullable FROM information_schema.columns WHERE table_name IN ('v2', 'v3') ORDER BY table_name, ordinal_position;
SELECT a.attname, t.typname, a.attnum, a.attnotnull FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_type t ON t.oid = a.atttypid WHERE c.relname = 'vstar2' ORDER BY a.attnum;
SELECT viewname, viewowner FROM pg_views WHERE schemaname = 'public' ORDER BY 1;
SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1;
-- column names that are keywords or need quotes, through SELECT *
CREATE TABLE kw (value INT, name TEXT, key INT, "user" INT, "Mixed Case" INT, "date" DATE, "select" TEXT);
INSERT INTO kw VALUES (1, 'n', 2, 3, 4, '2024-05-06', 's');
CREATE VIEW kwv AS SELECT * FROM kw;
SELECT * FROM kwv;
CREATE VIEW kwv2 AS SELECT k.*, k."user" + 1 AS next FROM kw AS k WHERE k.value = 1;
SELECT "Mixed Case", next, "select" FROM kwv2;
-- inside a transaction block
BEGIN;
CREATE VIEW tv AS SELECT id FROM vt WHERE id < 3;
SELECT * FROM tv ORDER BY id;
COMMIT;
SELECT * FROM tv ORDER BY id;
BEGIN;
CREATE VIEW tv2 AS SELECT nope FROM tv;
SELECT * FROM tv;
ROLLBACK;
BEGIN;
CREATE VIEW tv3 AS SELECT count(*) AS n FROM tv;
SELECT * FROM tv3;
DROP VIEW tv3;
ROLLBACK;
DROP VIEW IF EXISTS tv3;
DROP VIEW tv;
