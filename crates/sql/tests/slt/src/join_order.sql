-- Inner joins in the order join_order.rs chooses (items connected by
-- equi-terms first, cross products last) and the terms an OR of AND lists
-- implies (or_terms.rs): the answers, `*` and `t.*` column order must be
-- those of the FROM order. The expected answers are PostgreSQL 15's
-- (scripts/slt-from-postgres.py over src/join_order.sql).

CREATE TABLE jo_a (a_id int PRIMARY KEY, a_name text, a_grp int);
CREATE TABLE jo_b (b_id int PRIMARY KEY, b_a int, b_val int);
CREATE TABLE jo_c (c_a int, c_n int, c_qty int, c_note varchar(10), PRIMARY KEY (c_a, c_n));
CREATE TABLE jo_d (d_id int PRIMARY KEY, d_label varchar(10));
CREATE TABLE jo_e (e_d int, e_note text);
INSERT INTO jo_a SELECT g, 'a' || g, g % 3 FROM generate_series(1, 10) AS g;
INSERT INTO jo_b SELECT g, 1 + g % 12, CASE WHEN g % 7 = 0 THEN NULL ELSE g % 20 END FROM generate_series(1, 40) AS g;
INSERT INTO jo_c SELECT a, n, (a * 7 + n * 3) % 11, 'n' || n FROM generate_series(1, 10) AS a, generate_series(1, 6) AS n;
INSERT INTO jo_d SELECT g, 'd' || g FROM generate_series(1, 8) AS g;
INSERT INTO jo_e SELECT 1 + g % 9, 'e' || g FROM generate_series(1, 12) AS g;
-- Comma joins listed so that neighbours are not connected.
SELECT a_name, d_label, c_qty FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND a_grp = 1 ORDER BY a_name, d_label;
SELECT count(*), sum(c_qty), sum(b_val) FROM jo_d, jo_b, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND b_a = a_id;
SELECT a_name, d_label, b_id, c_qty, e_note FROM jo_e, jo_b, jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND b_a = a_id AND e_d = d_id AND a_grp = 2 AND b_val > 5 ORDER BY a_name, d_label, b_id, e_note;
SELECT a_grp, count(*), sum(c_qty) FROM jo_c, jo_d, jo_e, jo_a WHERE e_d = d_id AND c_n = d_id AND c_a = a_id GROUP BY a_grp ORDER BY a_grp;
SELECT jo_a.a_id, jo_d.d_id FROM jo_a JOIN jo_d ON jo_d.d_id = jo_a.a_grp + 1 JOIN jo_c ON jo_c.c_a = jo_a.a_id AND jo_c.c_n = jo_d.d_id WHERE jo_c.c_qty > 3 ORDER BY 1, 2;
SELECT a_id, d_id, c_qty FROM jo_d CROSS JOIN jo_a JOIN jo_c ON c_a = a_id AND c_n = d_id WHERE a_id < 4 ORDER BY a_id, d_id;
-- An unconnected item is a cross product, joined last.
SELECT count(*) FROM jo_d, jo_a, jo_c WHERE c_a = a_id;
SELECT a_id, d_id FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND c_n = 1 AND d_id < 3 AND a_id > 8 ORDER BY a_id, d_id;
SELECT count(*) FROM jo_d d1, jo_d d2, jo_d d3 WHERE d1.d_id < d2.d_id AND d2.d_id < d3.d_id;
-- SELECT * and t.* keep the FROM order's columns.
SELECT * FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND a_id = 3 ORDER BY c_n;
SELECT jo_c.*, jo_d.*, a_name FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND a_id = 4 ORDER BY c_n;
SELECT * FROM jo_e, jo_d, jo_b, jo_a WHERE e_d = d_id AND b_a = a_id AND b_id = d_id AND a_grp = 0 ORDER BY e_note;
SELECT jo_a.*, x.* FROM jo_d x, jo_c, jo_a WHERE c_a = a_id AND x.d_id = c_n AND c_qty = 0 ORDER BY a_id, d_id;
-- Derived tables and VALUES in the join.
SELECT v.k, v.s, a_name, c_n FROM (VALUES (1, 'x'), (2, 'y')) AS v(k, s), jo_c, jo_a WHERE v.k = a_grp AND c_a = a_id AND c_qty = 5 ORDER BY 1, 3, 4;
SELECT a_name, t.total, c_n FROM jo_c, (SELECT b_a, sum(b_val) AS total FROM jo_b GROUP BY b_a) AS t, jo_a WHERE t.b_a = a_id AND c_a = a_id AND c_n = 2 ORDER BY a_name;
SELECT * FROM (VALUES (2, 'two'), (5, 'five')) AS v(k, s), jo_d, jo_a WHERE a_id = d_id AND k = a_id ORDER BY k;
SELECT g, a_name, d_label FROM generate_series(1, 4) AS g, jo_d, jo_a WHERE d_id = g AND a_id = g + 1 ORDER BY g;
-- Self joins.
SELECT c1.c_a, c1.c_n, c2.c_n, a_name FROM jo_c c1, jo_c c2, jo_a WHERE c1.c_a = c2.c_a AND c1.c_n + 1 = c2.c_n AND a_id = c1.c_a AND c1.c_qty > c2.c_qty AND a_grp = 1 ORDER BY 1, 2;
SELECT x.a_id, y.a_id, z.a_id FROM jo_a x, jo_a y, jo_a z WHERE y.a_id = x.a_id + 1 AND z.a_id = y.a_id + 1 AND x.a_grp = 0 ORDER BY 1;
-- ORs of AND lists: a common join term, per-table filters, the OR kept.
SELECT a_name, b_id, b_val FROM jo_a, jo_b WHERE (a_id = b_a AND a_grp = 1 AND b_val < 5) OR (a_id = b_a AND a_grp = 2 AND b_val > 15) ORDER BY a_name, b_id;
SELECT a_name, b_id, b_val FROM jo_a, jo_b WHERE (a_id = b_a AND b_val IS NULL) OR (b_a = a_id AND b_val = 3) OR (a_id = b_a AND a_grp = 0 AND b_id < 4) ORDER BY a_name, b_id;
SELECT count(*) FROM jo_a, jo_b WHERE (a_id = b_a AND a_grp = 1) OR (a_id = b_a + 1 AND a_grp = 2);
SELECT count(*) FROM jo_a, jo_b WHERE (a_id = b_a AND a_grp = 1) OR b_val = 19;
SELECT sum(c_qty), count(*) FROM jo_c, jo_d, jo_a WHERE (c_a = a_id AND c_n = d_id AND a_grp = 0 AND d_label LIKE '%1') OR (c_a = a_id AND c_n = d_id AND a_grp = 2 AND c_qty > 4) OR (c_a = a_id AND c_n = d_id AND d_id = 3);
SELECT a_id, c_n FROM jo_c, jo_a WHERE ((c_a = a_id AND (c_n = 1 OR c_n = 2)) OR (c_a = a_id AND c_qty = 10)) AND a_id < 6 ORDER BY 1, 2;
SELECT a_id, b_id FROM jo_a, jo_b WHERE a_id = b_a AND ((a_id = b_a AND b_val = 1) OR (a_id = b_a AND b_val = 2)) ORDER BY 1, 2;
SELECT a_id, d_id FROM jo_a LEFT JOIN jo_d ON d_id = a_id WHERE (a_grp = 1 AND d_id IS NULL) OR (a_grp = 1 AND d_label = 'd4') ORDER BY 1;
SELECT a_id, b_id, d_id FROM jo_a LEFT JOIN jo_b ON b_a = a_id AND b_val > 15 JOIN jo_d ON d_id = a_id WHERE (a_grp = 0 AND b_id IS NULL) OR (a_grp = 0 AND b_val = 19) ORDER BY 1, 2;
-- Correlated subqueries over a reordered join, and reordered inside one.
SELECT a_name, c_n, d_label FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND a_grp = 1 AND NOT EXISTS (SELECT 1 FROM jo_b WHERE b_a = a_id AND b_val > c_qty) ORDER BY 1, 2;
SELECT a_name, (SELECT count(*) FROM jo_d, jo_c, jo_b WHERE c_a = a_id AND d_id = c_n AND b_a = c_a AND b_val > d_id) AS n FROM jo_a ORDER BY a_name;
SELECT a_name, c_n FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n AND c_qty = (SELECT max(c2.c_qty) FROM jo_c c2 WHERE c2.c_a = jo_a.a_id) ORDER BY 1, 2;
-- A key-lookup chain (the CH-benCHmark shape) and an expression key.
SELECT a_name, c_n, c_qty, d_label FROM jo_b, jo_c, jo_d, jo_a WHERE b_id = 5 AND c_a = b_a AND d_id = c_n AND a_id = c_a ORDER BY c_n;
SELECT d_label, count(*) FROM jo_b, jo_a, jo_d WHERE (b_id * a_id) % 8 + 1 = d_id AND a_id = b_a GROUP BY d_label ORDER BY d_label;
SELECT a_grp, count(*) FROM jo_e, jo_a, jo_d WHERE a_grp + 1 = e_d AND e_d = d_id GROUP BY a_grp ORDER BY a_grp;
SELECT a_name, d_label FROM jo_d, jo_a, jo_c WHERE c_a = a_id AND d_id = c_n ORDER BY a_id DESC, d_id LIMIT 5;
SELECT zz FROM jo_d, jo_a, jo_c WHERE c_a = a_id;
DROP TABLE jo_a;
DROP TABLE jo_b;
DROP TABLE jo_c;
DROP TABLE jo_d;
DROP TABLE jo_e;
