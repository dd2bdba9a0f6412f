-- Hash joins whose probing side is many batches long (join.rs probes
-- 256 rows at a time through packed_table.rs): every match of every row
-- comes out once, chains of duplicate keys keep all their rows, NULL and
-- non-integer keys match as SQL says, outer joins keep their unmatched
-- rows across batch boundaries. The expected answers are PostgreSQL 15's
-- (scripts/slt-from-postgres.py over src/join_batches.sql).
CREATE TABLE jb_big (id int PRIMARY KEY, k int, k2 bigint, tag text, amount numeric(10,2))
CREATE TABLE jb_small (k int, k2 bigint, name text, weight int)
CREATE TABLE jb_text (tag text, label text)
INSERT INTO jb_big SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE g % 700 END, (g % 3) * 5000000000, 't' || (g % 40), (g * 7 % 1000) / 4.0 FROM generate_series(1, 3000) AS g
INSERT INTO jb_small SELECT g % 500, CASE WHEN g % 2 = 0 THEN 0 ELSE 5000000000 END, 'n' || g, g % 9 FROM generate_series(1, 650) AS g
INSERT INTO jb_small VALUES (NULL, 0, 'null key', 1)
INSERT INTO jb_text SELECT 't' || g, 'label ' || g FROM generate_series(0, 59) AS g
-- The first table (3,000 rows) streams through the smaller one's hash table, 256 rows a probe batch; keys with several rows each.
SELECT count(*), sum(amount), sum(weight) FROM jb_big, jb_small WHERE jb_big.k = jb_small.k
SELECT jb_small.k, count(*), sum(amount) FROM jb_big, jb_small WHERE jb_big.k = jb_small.k GROUP BY jb_small.k ORDER BY jb_small.k LIMIT 12
-- Two key parts, one beyond 32 bits (not packed: the table of key bytes).
SELECT count(*), sum(amount) FROM jb_big, jb_small WHERE jb_big.k = jb_small.k AND jb_big.k2 = jb_small.k2
-- A residual over both sides, checked per match.
SELECT count(*), sum(weight) FROM jb_big, jb_small WHERE jb_big.k = jb_small.k AND amount > weight * 20
-- Text keys.
SELECT label, count(*), sum(amount) FROM jb_big JOIN jb_text ON jb_big.tag = jb_text.tag GROUP BY label ORDER BY label
-- The rows so far fewer than the next table's: hashed, the table's rows probe them in batches.
SELECT name, id FROM (SELECT * FROM jb_small WHERE weight = 3 AND k < 40) s, jb_big WHERE jb_big.k = s.k ORDER BY name, id
-- Outer joins: unmatched rows of either side, across batches.
SELECT count(*), count(jb_small.name), count(jb_big.id) FROM jb_big LEFT JOIN jb_small ON jb_big.k = jb_small.k
SELECT id, name FROM jb_big LEFT JOIN jb_small ON jb_big.k = jb_small.k AND weight > 7 WHERE id BETWEEN 690 AND 720 ORDER BY id, name
SELECT count(*), count(jb_small.name), count(jb_big.id) FROM jb_small FULL JOIN jb_big ON jb_big.k = jb_small.k + 300
SELECT jb_small.name, jb_small.k FROM jb_big RIGHT JOIN jb_small ON jb_big.k = jb_small.k - 1000 WHERE jb_small.k < 3 ORDER BY jb_small.name
-- Three tables, the last step streamed into GROUP BY.
SELECT label, count(*), sum(weight) FROM jb_big, jb_small, jb_text WHERE jb_big.k = jb_small.k AND jb_text.tag = jb_big.tag AND jb_small.weight < 4 GROUP BY label ORDER BY label LIMIT 10
