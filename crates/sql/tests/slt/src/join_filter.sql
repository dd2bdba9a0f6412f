-- Runtime join filters (join_filter.rs): a table streamed through a hash
-- table is read through the hashed side's integer keys (an IN-set kernel
-- per page), and an empty hash table reads nothing. The filter may only
-- drop rows the join drops: NULL keys, INT against BIGINT keys, sparse
-- and negative keys, the table's own filter beside it, composite keys,
-- outer joins (never filtered) and keys computed by expressions. Also
-- long IN lists of integers, which run as the same kernel. The expected
-- answers are PostgreSQL 15's (scripts/slt-from-postgres.py over src/join_filter.sql).
CREATE TABLE jf_item (i_id int PRIMARY KEY, i_data text, i_big bigint, i_alt int)
CREATE TABLE jf_line (l_id int PRIMARY KEY, l_item int, l_qty int, l_note text, l_big bigint, l_ib bigint)
CREATE TABLE jf_pair (p_a int, p_b text, p_n int, PRIMARY KEY (p_a, p_b))
INSERT INTO jf_item SELECT g, 'd' || g, g::bigint * 1000000000000 - 500000000000000, CASE WHEN g < 10 THEN NULL ELSE g END FROM generate_series(1, 200) AS g
INSERT INTO jf_line SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE 1 + (g * 7) % 200 END, g % 11, 'n' || (g % 5), (1 + (g * 7) % 200)::bigint * 1000000000000 - 500000000000000, CASE WHEN g % 89 = 0 THEN NULL ELSE 1 + (g * 7) % 200 END FROM generate_series(1, 8000) AS g
INSERT INTO jf_pair SELECT a, 'n' || b, a * 10 + b FROM generate_series(1, 200) AS a, generate_series(0, 4) AS b WHERE (a + b) % 3 = 0
-- Q9's shape: few item rows, many lines probing them.
SELECT count(*), sum(l_qty) FROM jf_item, jf_line WHERE l_item = i_id AND i_data LIKE '%7'
SELECT i_id, count(*), sum(l_qty) FROM jf_item JOIN jf_line ON l_item = i_id WHERE i_data LIKE 'd1_' GROUP BY i_id ORDER BY i_id
SELECT l_id, i_data FROM jf_line, jf_item WHERE i_id = l_item AND i_id IN (3, 150) AND l_id < 900 ORDER BY l_id
-- No item qualifies: nothing to probe; a count over it is still 0.
SELECT count(*), sum(l_qty) FROM jf_item, jf_line WHERE l_item = i_id AND i_data = 'none'
SELECT l_id FROM jf_item, jf_line WHERE l_item = i_id AND i_data = 'none'
-- Only NULL keys on the hashed side.
SELECT count(*) FROM jf_item, jf_line WHERE l_item = i_alt AND i_id < 5
SELECT count(*) FROM jf_item, jf_line WHERE l_item = i_alt AND i_id < 15
-- INT against BIGINT keys, both ways.
SELECT count(*), min(l_id), max(l_id) FROM jf_item, jf_line WHERE l_ib = i_id AND i_data LIKE '%5'
SELECT count(*), sum(l_id) FROM jf_item, jf_line WHERE l_item = i_big / 1000000000000 + 500 AND i_data LIKE '%9'
-- Sparse, negative and large BIGINT keys.
SELECT count(*), sum(l_qty), min(i_big), max(i_big) FROM jf_item, jf_line WHERE l_big = i_big AND i_data LIKE '%3'
SELECT count(*) FROM jf_item, jf_line WHERE l_big = i_big AND (i_id = 1 OR i_id = 200 OR i_id = 500)
-- The table's own filter (an OR) beside the keys.
SELECT count(*), sum(l_qty) FROM jf_item, jf_line WHERE l_item = i_id AND i_data LIKE '%3' AND (l_qty > 5 OR l_note = 'n1')
-- A composite key of an INT and a TEXT column.
SELECT count(*), sum(p_n) FROM jf_pair, jf_line WHERE p_a = l_item AND p_b = l_note AND p_n < 400
SELECT p_a, p_b, count(*) FROM jf_line JOIN jf_pair ON p_a = l_item AND p_b = l_note WHERE p_a IN (3, 99, 180) GROUP BY p_a, p_b ORDER BY p_a, p_b
-- Two or more integer key columns (a Bloom filter over them), NULLs among the probing keys.
SELECT count(*), sum(l_id) FROM jf_pair, jf_line WHERE l_item = p_a AND l_qty = p_n % 11 AND p_b = 'n2'
SELECT count(*), sum(l_id) FROM jf_pair, jf_line WHERE l_ib = p_a AND l_qty = p_n % 11
SELECT count(*), sum(l_qty) FROM jf_item, jf_line WHERE l_big = i_big AND l_qty = i_id % 11 AND l_item = i_id AND i_data LIKE '%4'
SELECT l_id, p_n FROM jf_line JOIN jf_pair ON l_item = p_a AND l_qty + 0 = p_n % 11 AND l_note = p_b WHERE p_n < 300 ORDER BY l_id
-- Outer joins keep their unmatched rows.
SELECT count(*), count(i_id), sum(l_qty) FROM jf_line LEFT JOIN jf_item ON l_item = i_id AND i_data LIKE '%7'
SELECT i_id, count(l_id) FROM jf_item LEFT JOIN jf_line ON l_item = i_id AND l_qty > 8 WHERE i_id <= 5 GROUP BY i_id ORDER BY i_id
SELECT count(*), count(l_id) FROM jf_line RIGHT JOIN jf_item ON l_item = i_id AND l_id < 50 WHERE i_data LIKE '%7'
-- A key computed by an expression on the probing side.
SELECT count(*), sum(l_qty) FROM jf_item, jf_line WHERE l_item + 1 = i_id AND i_data LIKE '%7'
-- Three tables: the first two joined, then hashed and probed by the third.
SELECT count(*), sum(p_n) FROM jf_item, jf_pair, jf_line WHERE p_a = i_id AND i_data LIKE '%2' AND l_item = p_a AND l_note = p_b
-- A subquery as the hashed side.
SELECT count(*), sum(l_qty) FROM (SELECT DISTINCT i_id + 0 AS i_id FROM jf_item WHERE i_data LIKE '%7') AS s, jf_line WHERE l_item = s.i_id
-- Long IN lists of integers (one kernel, any length).
SELECT count(*), sum(l_qty) FROM jf_line WHERE l_item IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 150, 151, 152, 153, 154, 155, 156, 199, 200, 201, -4)
SELECT count(*) FROM jf_line WHERE l_item NOT IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 150, 151, 152, 153, 154, 155, 156, 199, 200, 201, -4)
SELECT count(*) FROM jf_line WHERE l_item NOT IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 150, 151, 152, 153, 154, 155, 156, 199, 200, 201, NULL)
SELECT count(*) FROM jf_line WHERE l_item IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 150, 151, 152, 153, 154, 155, 156, 199, 200, 201, NULL)
SELECT count(*) FROM jf_line WHERE (l_item IN (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 150, 151, 152, 153, 154, 155, 156, 199, 200, 201, NULL)) IS NULL
SELECT count(*) FROM jf_line WHERE l_big IN (-499000000000000, -300000000000000, 0, 1000, 9223372036854775807, -9223372036854775808, -498000000000000, -490000000000000, -480000000000000, -470000000000000, -460000000000000, -450000000000000, -440000000000000, -430000000000000, -420000000000000, -410000000000000, -400000000000000)
SELECT count(*) FROM jf_line WHERE l_item IN (4, 6, 3000000000, 7) AND l_qty IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17)
SELECT count(*) FROM jf_line WHERE NOT (l_item IN (4, 6, 7, 10, 11, 12, 14, 15, 16, 17, 18, 19, 20, 22, 23, 24, 25) OR l_qty IN (0, 1))
