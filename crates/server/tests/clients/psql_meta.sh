#!/usr/bin/env bash
# psql's catalog commands and \gdesc, run by psql against ndpdb and
# PostgreSQL 15 in the same run; the two outputs must be equal.
#
#   bash psql_meta.sh NDPDB_CONNINFO POSTGRES_CONNINFO
#
# Prints "ok" when they are, else the differences.
set -euo pipefail
ndpdb=$1
postgres=$2
script=$(mktemp)
trap 'rm -f "$script" "$script".*' EXIT
cat >"$script" <<'SQL'
CREATE TABLE pm_item (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL, price NUMERIC(10,2), added DATE);
INSERT INTO pm_item VALUES (1, 'pen', 1.50, '2024-01-02'), (2, 'ink', NULL, NULL);
CREATE TABLE pm_order (no SERIAL PRIMARY KEY, item INT REFERENCES pm_item (id), code TEXT UNIQUE);
CREATE VIEW pm_cheap AS SELECT id, name FROM pm_item WHERE price < 2;
\dt
\dt pm_i*
\di
\dv
\ds
\d
\dn
\l postgres
SELECT id, name FROM pm_item UNION SELECT 3, 'cap' \gdesc
SELECT price, added FROM pm_item UNION ALL SELECT 2.5, NULL \gdesc
SELECT name FROM pm_item UNION SELECT 'a much longer name than twenty' ORDER BY 1;
SELECT format_type(1043, 24) AS varchar, format_type(1700, 655366) AS numeric, format_type(1042, NULL) AS bpchar, pg_get_userbyid(10) AS owner, pg_encoding_to_char(6) AS encoding, octet_length('né') AS bytes;
SELECT bool_and(price > 1), bool_or(price > 1), every(name <> '') FROM pm_item;
SELECT '42'::int2::int8, 4.5::float8::int4, ceil(4.5), floor(4.5), id::int8, (id + 1)::int8, ARRAY[1, 2], (ARRAY[id])[1], true::text FROM pm_item ORDER BY id;
SELECT array_agg(id ORDER BY id DESC), string_agg(name, ',' ORDER BY name) FROM pm_item;
SELECT unnest(ARRAY['a', 'b']) AS x, id FROM pm_item ORDER BY 1, 2;
COMMENT ON TABLE pm_item IS 'items for sale';
COMMENT ON COLUMN pm_item.price IS 'in euros';
CREATE TABLE pm_note (k INT NOT NULL, body TEXT DEFAULT 'none', doc JSONB, tags TEXT[]);
COMMENT ON COLUMN pm_note.body IS 'what was said';
\d pm_note
\d+ pm_note
DROP TABLE pm_note;
SELECT obj_description('pm_item'::regclass, 'pg_class') AS t, col_description('pm_item'::regclass, 3) AS c, pg_get_serial_sequence('pm_order', 'no') AS s, pg_get_serial_sequence('public.pm_order', 'item') AS n;
SELECT pg_catalog.set_config('search_path', '', false);
SHOW search_path;
SELECT count(*) FROM public.pm_item;
DROP VIEW public.pm_cheap;
DROP TABLE public.pm_order;
DROP TABLE public.pm_item;
SQL
for side in ndpdb postgres; do
  conninfo=${!side}
  PGOPTIONS= psql -X -q -v ON_ERROR_STOP=0 -P pager=off "$conninfo" -f "$script" >"$script.$side" 2>&1 || true
done
if ! diff -u --label postgres --label ndpdb "$script.postgres" "$script.ndpdb"; then
  exit 1
fi
cat "$script.ndpdb"
echo ok
