-- The system catalog as relations: information_schema (tables, columns,
-- table_constraints, key_column_usage, schemata) and the pg_catalog
-- tables drivers join, answered from ndpdb's catalog; VALUES lists and
-- generate_series in FROM. The expected answers are PostgreSQL 15's
-- (scripts/slt-from-postgres.py over src/catalog.sql).

CREATE TABLE cat_w (w_id INT NOT NULL, w_name VARCHAR(10), w_tax DECIMAL(4,4), w_ytd DECIMAL(12,2), PRIMARY KEY (w_id));
CREATE TABLE cat_h (id SERIAL PRIMARY KEY, h_date TIMESTAMP, note TEXT DEFAULT 'x', c CHAR(2) NOT NULL, amount numeric, d date, f double precision, b boolean, big bigint);
CREATE TABLE cat_k (a INT, b TEXT, c INT, PRIMARY KEY (b, a));
CREATE INDEX cat_h_d ON cat_h (d, c);
CREATE UNIQUE INDEX cat_k_c ON cat_k (c);
SELECT table_schema, table_name, table_type, is_insertable_into, is_typed FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name;
SELECT table_name, column_name, ordinal_position, column_default, is_nullable, data_type, character_maximum_length, character_octet_length, numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision, udt_schema, udt_name, dtd_identifier, is_identity, identity_cycle, is_generated, is_updatable FROM information_schema.columns WHERE table_schema = 'public' ORDER BY table_name, ordinal_position;
SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'cat_k' ORDER BY ordinal_position;
SELECT constraint_name, table_name, constraint_type, is_deferrable, initially_deferred, enforced FROM information_schema.table_constraints WHERE table_schema = 'public' AND constraint_type <> 'CHECK' ORDER BY 1;
SELECT table_name, count(*) FROM information_schema.table_constraints WHERE table_schema = 'public' AND constraint_type = 'CHECK' GROUP BY table_name ORDER BY 1;
SELECT constraint_schema, constraint_name, table_schema, table_name, column_name, ordinal_position, position_in_unique_constraint FROM information_schema.key_column_usage WHERE table_schema = 'public' ORDER BY table_name, ordinal_position;
SELECT kcu.column_name FROM information_schema.table_constraints tc JOIN information_schema.key_column_usage kcu ON tc.constraint_name = kcu.constraint_name AND tc.table_name = kcu.table_name WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_name = 'cat_k' ORDER BY kcu.ordinal_position;
SELECT schema_name FROM information_schema.schemata ORDER BY 1;
SELECT c.relname, c.relkind, c.relnatts, c.relhasindex, c.relpersistence FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' ORDER BY 1;
SELECT a.attname, t.typname, a.attnum, a.attnotnull, a.atthasdef, a.atttypmod, a.attlen, a.attidentity FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_type t ON t.oid = a.atttypid WHERE c.relname = 'cat_h' AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum;
SELECT ic.relname, i.indisunique, i.indisprimary, i.indkey::text, i.indnatts FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class tc ON tc.oid = i.indrelid WHERE tc.relname LIKE 'cat_%' ORDER BY 1;
SELECT tablename, hasindexes, hasrules, hastriggers FROM pg_tables WHERE schemaname = 'public' ORDER BY 1;
SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = 'public' ORDER BY 2;
SELECT count(*) FROM pg_database WHERE datname = current_database();
SELECT c.conname, c.contype, c.conkey::text FROM pg_constraint c JOIN pg_class r ON r.oid = c.conrelid WHERE r.relname LIKE 'cat_%' ORDER BY 1;
SELECT t.typname, t.typlen, t.typtype FROM pg_type t WHERE t.typname IN ('int4', 'varchar', 'numeric', 'bool', 'timestamp') ORDER BY 1;
SELECT count(*) FROM information_schema.columns WHERE table_name = 'no_such_table';
SELECT * FROM information_schema.no_such_view;
SELECT * FROM pg_catalog.no_such_table;
DROP TABLE cat_k;
SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1;
SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS v(x, y) ORDER BY x DESC;
VALUES (1, 2.5), (3, 4) ORDER BY 1 DESC LIMIT 1;
VALUES (1, 'x'), (2, NULL);
SELECT * FROM (VALUES (1), (NULL)) t ORDER BY 1;
SELECT column1 + 1 FROM (VALUES (1), (2)) AS t ORDER BY 1;
VALUES (1, 2), (3);
SELECT * FROM (VALUES (1, 2)) AS t(a, b, c);
SELECT g FROM generate_series(1, 5) g;
SELECT * FROM generate_series(10, 1, -3);
SELECT x FROM generate_series(1, 3) AS t(x) JOIN (VALUES (2), (3)) v(y) ON v.y = t.x ORDER BY x;
SELECT sum(g), count(*) FROM generate_series(1, 100000) AS g;
SELECT generate_series FROM generate_series(1::bigint, 3);
SELECT * FROM generate_series(0.5, 2.5, 0.5);
SELECT * FROM generate_series(1, 5, 0);
SELECT * FROM generate_series(1, NULL);
SELECT count(*) FROM generate_series(1, 3) a, generate_series(1, 4) b;
SELECT * FROM generate_series(2147483646, 2147483647);
SELECT * FROM generate_series('a', 'b');
INSERT INTO cat_w SELECT g, 'w' || g, 0.1, 0 FROM generate_series(1, 5) g;
SELECT w_id, w_name FROM cat_w ORDER BY w_id;
DROP TABLE cat_w;
DROP TABLE cat_h;
