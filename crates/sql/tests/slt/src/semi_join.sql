-- Correlated EXISTS and NOT EXISTS over enough rows that they run as hash semi / anti joins (EXPLAIN: "or Hash Semi Join").
CREATE TABLE orders (o_w int, o_d int, o_id int, o_entry date, o_cnt int, o_note text, PRIMARY KEY (o_w, o_d, o_id));
CREATE TABLE lines (l_w int, l_d int, l_o bigint, l_n int, l_delivery date, l_amount numeric(8,2), l_tag varchar(10), PRIMARY KEY (l_w, l_d, l_o, l_n));
INSERT INTO orders SELECT 1 + i % 3, 1 + i % 5, i, date '2024-01-01' + i / 10, 5 + i % 11, CASE WHEN i % 7 = 0 THEN NULL ELSE 'n' || (i % 13) END FROM generate_series(1, 3000) AS g(i);
INSERT INTO lines SELECT 1 + o % 3, 1 + o % 5, o, n, CASE WHEN (o + n) % 4 = 0 THEN NULL ELSE date '2024-01-01' + (o + n * 3 - 20) / 10 END, (o * n) % 1000 / 7.0, CASE WHEN n = 2 THEN NULL ELSE 't' || (o % 9) END FROM generate_series(1, 3000) AS g(o), generate_series(1, 4) AS h(n) WHERE o % 6 <> 0 AND (o + n) % 5 <> 0;
SELECT o_cnt, count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_w = o_w AND l_d = o_d AND l_delivery >= o_entry) GROUP BY o_cnt ORDER BY o_cnt;
SELECT o_cnt, count(*) FROM orders WHERE NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_w = o_w AND l_d = o_d AND l_delivery >= o_entry) GROUP BY o_cnt ORDER BY o_cnt;
SELECT count(*) FROM orders WHERE EXISTS (SELECT 1 FROM lines WHERE o_id = l_o AND o_w = l_w AND o_d = l_d);
SELECT count(*) FROM orders WHERE NOT EXISTS (SELECT 1 FROM lines WHERE o_id = l_o AND o_w = l_w AND o_d = l_d);
-- A local term of the subquery filters the build; a term over the caller alone decides per row.
SELECT count(*), sum(o_id) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_amount > 50 AND l_tag LIKE 't1%');
SELECT count(*), sum(o_id) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND o_cnt > 9);
SELECT count(*), sum(o_id) FROM orders WHERE NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id AND o_cnt > 9);
-- NULL keys match nothing: EXISTS false, NOT EXISTS true.
SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_tag = o_note);
SELECT count(*) FROM orders WHERE NOT EXISTS (SELECT * FROM lines WHERE l_tag = o_note);
SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_tag = 't' || (o_id % 9) AND l_o = o_id);
-- Keys of other types: int = bigint, a numeric expression, a text expression.
SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o + 1 = o_id + 1 AND l_n = o_cnt - 8);
SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_amount = o_id / 7.0);
-- Residual terms over both sides, OR, and a statement parameter-free constant.
SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND (l_delivery > o_entry + 1 OR l_n > o_cnt - 7));
SELECT count(*) FROM orders o WHERE EXISTS (SELECT * FROM lines l WHERE l.l_o = o.o_id AND l.l_w = o.o_w AND l.l_d = o.o_d AND l.l_n = 3) AND o.o_cnt < 12;
-- In a join: the caller's row is a joined row (CH-benCHmark Q21's shape).
SELECT l1.l_tag, count(*) FROM lines l1 JOIN orders ON l1.l_o = o_id AND l1.l_w = o_w AND l1.l_d = o_d WHERE l1.l_delivery > o_entry AND NOT EXISTS (SELECT * FROM lines l2 WHERE l2.l_o = l1.l_o AND l2.l_w = l1.l_w AND l2.l_d = l1.l_d AND l2.l_delivery > l1.l_delivery) GROUP BY l1.l_tag ORDER BY l1.l_tag;
-- Callers sharing a key with different residual arguments: each gets its own answer.
SELECT s, count(*), sum(o_id) FROM orders, generate_series(0, 4) AS g(s) WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_w = o_w AND l_n > s) GROUP BY s ORDER BY s;
SELECT s, count(*) FROM orders, generate_series(0, 4) AS g(s) WHERE NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_delivery >= o_entry + s) GROUP BY s ORDER BY s;
-- Caller keys with NULL parts among held rows: EXISTS false, NOT EXISTS true.
SELECT count(*), sum(o_id) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = CASE WHEN o_id % 4 = 0 THEN NULL ELSE o_id END AND l_w = o_w);
SELECT count(*), sum(o_id) FROM orders WHERE NOT EXISTS (SELECT * FROM lines WHERE l_o = CASE WHEN o_id % 4 = 0 THEN NULL ELSE o_id END AND l_w = o_w);
-- Two EXISTS on one caller, one of them negated.
SELECT count(*), sum(o_id) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_n = 1) AND NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_n = 3 AND l_delivery < o_entry);
-- A few caller rows: answered per row, same answers.
SELECT o_id FROM orders WHERE o_id < 40 AND EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_n = 4) ORDER BY o_id;
SELECT o_id FROM orders WHERE o_id < 40 AND NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_n = 4) ORDER BY o_id;
-- In UPDATE and DELETE.
UPDATE orders SET o_note = 'shipped' WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_w = o_w AND l_d = o_d AND l_delivery < o_entry);
SELECT o_note, count(*) FROM orders GROUP BY o_note ORDER BY o_note;
DELETE FROM orders WHERE NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id);
SELECT count(*), sum(o_id) FROM orders;
-- The subquery's rows change between executions of one statement.
DELETE FROM lines WHERE l_n = 1;
SELECT count(*) FROM orders WHERE EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_n = 1);
SELECT count(*) FROM orders WHERE NOT EXISTS (SELECT * FROM lines WHERE l_o = o_id AND l_w = o_w AND l_d = o_d);
