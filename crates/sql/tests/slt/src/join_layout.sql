-- Joins whose last step keeps only the columns read after FROM
-- (join_layout.rs): WHERE terms over several tables, per-row subqueries,
-- grouping, HAVING, ORDER BY on columns not in the output, DISTINCT and
-- outer joins must see the same rows as over the full layout. The expected
-- answers are PostgreSQL 15's (scripts/slt-from-postgres.py over src/join_layout.sql).
CREATE TABLE jl_c (c_id int, c_w int, c_name text, c_city varchar(12), c_pad text, c_bal numeric(8,2), PRIMARY KEY (c_w, c_id))
CREATE TABLE jl_o (o_id int, o_w int, o_c int, o_day int, o_pad text, o_cnt int, PRIMARY KEY (o_w, o_id))
CREATE TABLE jl_l (l_o int, l_w int, l_n int, l_amount numeric(8,2), l_day int, l_pad text, PRIMARY KEY (l_w, l_o, l_n))
CREATE TABLE jl_n (n_key int PRIMARY KEY, n_name text, n_pad text)
INSERT INTO jl_c SELECT c, w, 'c' || c || '-' || w, 'city' || (c % 4), 'xxxxxxxxxxxxxxxxxxxx', (c * 13 + w * 7) % 100 FROM generate_series(1, 12) AS c, generate_series(1, 2) AS w
INSERT INTO jl_o SELECT o, w, 1 + (o * 5 + w) % 12, o % 9, 'oooooooooo', 1 + o % 4 FROM generate_series(1, 30) AS o, generate_series(1, 2) AS w
INSERT INTO jl_l SELECT o, w, n, (o * 3 + n * 11 + w) % 50 + 0.25, (o + n) % 11, 'pad' FROM generate_series(1, 30) AS o, generate_series(1, 2) AS w, generate_series(1, 4) AS n WHERE n <= 1 + o % 4
INSERT INTO jl_n SELECT g, 'nation' || g, 'p' FROM generate_series(0, 3) AS g
-- Q10's shape: three equi-joined tables, a residual over two, a key computed from a column.
SELECT c_id, c_w, c_name, sum(l_amount) AS revenue, c_city, n_name FROM jl_c, jl_o, jl_l, jl_n WHERE c_id = o_c AND c_w = o_w AND l_w = o_w AND l_o = o_id AND o_day <= l_day AND n_key = c_id % 4 GROUP BY c_id, c_w, c_name, c_city, n_name ORDER BY revenue DESC, c_id, c_w
-- Q18's shape: HAVING over the sum, ORDER BY an aggregate and a grouped column.
SELECT c_name, o_id, o_w, o_day, o_cnt, sum(l_amount) AS amount FROM jl_c, jl_o, jl_l WHERE c_id = o_c AND c_w = o_w AND l_w = o_w AND l_o = o_id GROUP BY o_id, o_w, c_id, c_name, o_day, o_cnt HAVING sum(l_amount) > 60 ORDER BY amount DESC, o_day, o_id, o_w
-- A WHERE term over two tables that is not a join key (an OR), a column read only by ORDER BY.
SELECT c_name, o_id, l_n FROM jl_c JOIN jl_o ON c_id = o_c AND c_w = o_w JOIN jl_l ON l_w = o_w AND l_o = o_id WHERE (c_bal > 50 OR l_day = 3) AND o_cnt >= 3 ORDER BY l_amount DESC, c_name, o_id, l_n
-- A per-row subquery over columns of two joined tables.
SELECT o_id, o_w, l_n FROM jl_o, jl_l WHERE l_w = o_w AND l_o = o_id AND l_amount > (SELECT avg(x.l_amount) FROM jl_l AS x WHERE x.l_w = o_w AND x.l_day = l_day) ORDER BY o_id, o_w, l_n
-- A correlated subquery in the output, DISTINCT over joined columns.
SELECT DISTINCT c_city, (SELECT count(*) FROM jl_o AS y WHERE y.o_c = c_id AND y.o_w = c_w AND y.o_day < o_day) AS earlier FROM jl_c, jl_o WHERE c_id = o_c AND c_w = o_w AND o_id < 8 ORDER BY c_city, earlier
-- Outer joins: the NULL-extended rows keep their NULLs, a column read only by WHERE.
SELECT n_key, n_name, c_id, c_w FROM jl_n LEFT JOIN jl_c ON c_id % 4 = n_key AND c_w = 2 AND c_bal > 40 WHERE n_pad = 'p' ORDER BY n_key, c_id, c_w
SELECT o_id, o_w, count(l_n) AS lines, coalesce(sum(l_amount), 0) AS total FROM jl_o LEFT JOIN jl_l ON l_w = o_w AND l_o = o_id AND l_day > 5 WHERE o_id <= 6 GROUP BY o_id, o_w ORDER BY o_id, o_w
-- count(*) over a join reads no column after FROM.
SELECT count(*) FROM jl_c, jl_o, jl_l WHERE c_id = o_c AND c_w = o_w AND l_w = o_w AND l_o = o_id
-- Every column of every table (the full layout out of a narrow plan).
SELECT * FROM jl_n, jl_c WHERE c_id = n_key + 10 AND c_w = 1 ORDER BY n_key
-- The first table larger than the item joined to it: that item is read first and hashed, the first table's rows stream through it.
SELECT count(*), sum(l_amount) FROM jl_l, (SELECT o_id AS t_o, o_w AS t_w FROM jl_o WHERE o_day = 2) t WHERE l_o = t_o AND l_w = t_w
SELECT n_name, count(*), sum(l_amount) FROM jl_l, jl_n WHERE n_key = l_n AND l_day > n_key GROUP BY n_name ORDER BY n_name
SELECT l_o, l_w, l_n, n_name FROM jl_l, jl_n WHERE n_key = l_n AND l_amount > 45 ORDER BY l_o, l_w, l_n
-- A subquery with more rows than the first table: the first table is read first after all.
SELECT n_name, count(*) FROM jl_n, (SELECT l_n AS k FROM jl_l) t WHERE n_key = k GROUP BY n_name ORDER BY n_name
-- Q16's shape: grouped by plain columns and a computed one, a DISTINCT count of an expression, a per-row NOT IN over an uncorrelated subquery.
SELECT c_name, substring(o_pad from 1 for 3) AS brand, c_bal, count(DISTINCT mod(o_id * o_w, 7)) AS kinds, sum(DISTINCT o_cnt) AS cnts FROM jl_c, jl_o WHERE c_id = o_c AND c_w = o_w AND mod(o_id * o_w, 7) NOT IN (SELECT n_key FROM jl_n WHERE n_name LIKE '%2') GROUP BY c_name, brand, c_bal ORDER BY kinds DESC, c_name
-- The same grouping without the subquery: computed group values first, then plain columns, a group seen again after others.
SELECT o_day % 3 AS d, c_city, count(*), min(c_name), max(o_id) FROM jl_c, jl_o WHERE c_id = o_c AND c_w = o_w GROUP BY d, c_city ORDER BY d, c_city
