-- The catalog SQL JDBC's DatabaseMetaData sends: regular-expression
-- operators, integer & and |, casts to regclass / regproc / oid,
-- subscripts of the catalog's arrays, array_upper / array_lower,
-- current_schemas, replace, trim(… from …), pg_get_expr,
-- pg_get_indexdef, _pg_expandarray in the SELECT list, ranking window
-- functions, JOIN … USING, and pg_description, pg_attrdef, pg_am,
-- pg_settings. The expected answers are PostgreSQL 15's
-- (scripts/slt-from-postgres.py over src/catalog_jdbc.sql).

CREATE TABLE cj_t (id INT NOT NULL, k VARCHAR(20), v NUMERIC(10,2) DEFAULT 0, s TEXT DEFAULT 'x', PRIMARY KEY (id));
CREATE INDEX cj_t_k ON cj_t (k, v);
CREATE TABLE cj_p (a INT, b TEXT, c INT, PRIMARY KEY (b, a));
SELECT 'pg_catalog' ~ '^pg_', 'public' ~ '^pg_', 'public' !~ '^pg_', 'PUBLIC' ~* '^pub', 'PUBLIC' !~* '^pub', 'abc' ~ 'b+', 'abc' ~ '^(a|x)[b-c]{2}$';
SELECT NULL ~ 'a', 'a' ~ NULL, NULL !~ 'a';
SELECT 'a' ~ '(';
SELECT 'a' ~ '[a';
SELECT nspname FROM pg_namespace WHERE nspname !~ '^pg_' ORDER BY 1;
SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname <> 'pg_toast' AND (nspname !~ '^pg_temp_' OR nspname = (pg_catalog.current_schemas(true))[1]) AND (nspname !~ '^pg_toast_temp_' OR nspname = replace((pg_catalog.current_schemas(true))[1], 'pg_temp_', 'pg_toast_temp_')) ORDER BY 1;
SELECT 5 & 3, 5 | 3, 6 & 1::smallint, 12 | 3::bigint, 7 & NULL;
SELECT 'pg_class'::regclass::oid::int, 'pg_catalog.pg_type'::regclass::oid::int, 'pg_namespace'::regclass::oid::int, 'pg_attribute'::regclass::oid::int;
SELECT 'cj_t'::regclass::oid = c.oid FROM pg_class c WHERE c.relname = 'cj_t';
SELECT 'public.cj_t_pkey'::regclass::oid = c.oid, c.relkind FROM pg_class c WHERE c.relname = 'cj_t_pkey';
SELECT 'no_such_rel'::regclass;
SELECT 'pg_catalog.array_in'::regproc::oid::int, 'int4in'::regproc::oid::int;
SELECT 'no_such_function'::regproc;
SELECT t.typname, t.typinput = 'pg_catalog.array_in'::regproc FROM pg_type t WHERE t.typname IN ('int4', 'varchar', 'numeric') ORDER BY 1;
SELECT c.relname, i.indnatts, i.indkey[0], i.indkey[1], i.indkey[2], array_lower(i.indkey, 1), array_upper(i.indkey, 1), i.indoption[0] & 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'cj_%' ORDER BY 1;
SELECT c.relname, i.indkey::text, i.indoption::text, i.indpred IS NULL, i.indisclustered FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'cj_%' ORDER BY 1;
SELECT current_schemas(false)::text, current_schemas(true)::text, (current_schemas(true))[1], (current_schemas(true))[2], (current_schemas(false))[5], array_upper(current_schemas(false), 1), array_lower(current_schemas(true), 1);
SELECT replace('pg_temp_1', 'pg_temp_', 'pg_toast_temp_'), replace('abc', '', 'x'), replace(NULL, 'a', 'b');
SELECT trim(both '"' from '"Mixed"'), trim(leading 'x' from 'xxaxx'), trim(trailing 'x' from 'xxaxx'), trim(both ' ' from '  a  ');
SELECT c.relname, a.attname, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_class c ON c.oid = d.adrelid JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum ORDER BY 1, 2;
SELECT c.relname, pg_get_indexdef(c.oid, 0, false), pg_get_indexdef(c.oid, 1, false), pg_get_indexdef(c.oid) FROM pg_class c WHERE c.relkind = 'i' AND c.relname LIKE 'cj_%' ORDER BY 1;
SELECT c.relname, trim(both '"' from pg_get_indexdef(c.oid, 2, false)) FROM pg_class c WHERE c.relname IN ('cj_t_k', 'cj_p_pkey') ORDER BY 1;
SELECT c.relname, (information_schema._pg_expandarray(i.indkey)).n, (information_schema._pg_expandarray(i.indkey)).x FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'cj_%' ORDER BY 1, 2;
SELECT r.relname, (r.keys).x, (r.keys).n FROM (SELECT c.relname, information_schema._pg_expandarray(i.indkey) AS keys FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname LIKE 'cj_%') r ORDER BY 1, 3;
SELECT r.keys::text FROM (SELECT information_schema._pg_expandarray(i.indkey) AS keys FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'cj_p_pkey') r ORDER BY 1;
SELECT (information_schema._pg_expandarray(current_schemas(true))).x AS nsp, (information_schema._pg_expandarray(current_schemas(true))).n ORDER BY 2;
SELECT result.column_name, result.key_seq FROM (SELECT a.attname AS column_name, (information_schema._pg_expandarray(i.indkey)).n AS key_seq, information_schema._pg_expandarray(i.indkey) AS keys, a.attnum AS a_attnum FROM pg_class ct JOIN pg_attribute a ON (ct.oid = a.attrelid) JOIN pg_index i ON (a.attrelid = i.indrelid) WHERE ct.relname = 'cj_p' AND i.indisprimary) result WHERE result.a_attnum = (result.keys).x ORDER BY result.key_seq;
SELECT c.relname, a.attname, row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum DESC) AS rn FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname IN ('cj_t', 'cj_p') AND a.attnum > 0 ORDER BY 1, 3;
SELECT x, row_number() OVER (ORDER BY x), rank() OVER (ORDER BY x), dense_rank() OVER (ORDER BY x DESC) FROM (VALUES (3), (1), (3), (2)) v(x) ORDER BY 1, 2;
SELECT ns.nspname, r.r FROM pg_namespace ns JOIN (SELECT s.r, (current_schemas(true))[s.r] AS nspname FROM generate_series(1, array_upper(current_schemas(true), 1)) AS s(r)) AS r USING (nspname) ORDER BY 2;
SELECT count(*) FROM pg_description WHERE objoid IN (SELECT oid FROM pg_class WHERE relname LIKE 'cj_%');
SELECT count(*) FROM pg_class c LEFT JOIN pg_description d ON (c.oid = d.objoid AND d.objsubid = 0 AND d.classoid = 'pg_class'::regclass) WHERE c.relname LIKE 'cj_%' AND d.description IS NULL;
SELECT oid::int, amname, amtype FROM pg_am WHERE amname IN ('heap', 'btree', 'hash') ORDER BY oid;
SELECT c.relname, am.amname FROM pg_class c JOIN pg_am am ON c.relam = am.oid WHERE c.relname LIKE 'cj_%' ORDER BY 1;
SELECT c.relname, c.relpages FROM pg_class c WHERE c.relkind = 'i' AND c.relname LIKE 'cj_%' ORDER BY 1;
SELECT setting FROM pg_catalog.pg_settings WHERE name = 'max_index_keys';
SELECT name, setting, unit FROM pg_settings WHERE name IN ('max_identifier_length', 'server_encoding', 'integer_datetimes', 'standard_conforming_strings', 'statement_timeout') ORDER BY 1;
SELECT a.attname, a.attidentity = '', a.attgenerated = '', a.attisdropped, a.attlen, a.atttypmod, nullif(a.attidentity, '') IS NULL FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'cj_t' AND a.attnum > 0 ORDER BY a.attnum;
SELECT t.typname, t.typtype, t.typnotnull, t.typbasetype::int, t.typtypmod, t.typdelim, t.typelem::int, t.typrelid::int FROM pg_type t WHERE t.typname IN ('int4', 'numeric', 'varchar', 'text', 'bool') ORDER BY 1;
SELECT c.conname, c.conkey::text, c.conkey[1], c.conkey[2], c.conkey[3] FROM pg_constraint c WHERE c.conname LIKE 'cj_%' AND c.contype = 'p' ORDER BY 1;
SELECT count(*) FROM pg_constraint con, generate_series(1, 32) pos(n), pg_attribute a WHERE con.contype = 'f' AND a.attnum = con.confkey[pos.n];
