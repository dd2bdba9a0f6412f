-- Joins whose equi-terms give the joined table's whole primary key look
-- each partner up by key when the rows so far are few (join_lookup.rs):
-- inner and LEFT joins, ON residuals, constants in the key, mixed numeric
-- types. The expected answers are PostgreSQL 15's
-- (scripts/slt-from-postgres.py over src/join_lookup.sql).

CREATE TABLE jl_st (w int, i int, q int, name char(4), PRIMARY KEY (w, i));
CREATE TABLE jl_li (w int, o int, n int, i bigint, PRIMARY KEY (w, o, n));
CREATE TABLE jl_dg (v int);
INSERT INTO jl_dg VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
INSERT INTO jl_st SELECT 1 + a.v % 2, a.v + 10*b.v + 100*c.v, (a.v*3 + b.v*7 + c.v) % 20, 'n' || a.v FROM jl_dg a, jl_dg b, jl_dg c;
INSERT INTO jl_li SELECT 1, a.v + 10 * b.v, c.v, (a.v * 37 + b.v * 11 + c.v * 101) % 1100 FROM jl_dg a, jl_dg b, jl_dg c WHERE c.v < 5;
SELECT COUNT(DISTINCT s.i) FROM jl_li, jl_st s WHERE jl_li.w = 1 AND jl_li.o < 20 AND jl_li.o >= 10 AND s.w = 1 AND s.i = jl_li.i AND s.q < 10;
SELECT COUNT(*) FROM jl_li, jl_st s WHERE jl_li.w = 1 AND jl_li.o < 3 AND s.w = jl_li.w AND s.i = jl_li.i;
SELECT jl_li.o, jl_li.n, jl_li.i, s.i, s.q, s.name FROM jl_li LEFT JOIN jl_st s ON s.w = 1 AND s.i = jl_li.i WHERE jl_li.w = 1 AND jl_li.o = 7 ORDER BY jl_li.n;
SELECT jl_li.o, jl_li.n, jl_li.i, s.i, s.q FROM jl_li LEFT JOIN jl_st s ON s.w = 1 AND s.i = jl_li.i AND s.q > 5 WHERE jl_li.w = 1 AND jl_li.o = 7 ORDER BY jl_li.n;
SELECT jl_li.o, jl_li.n, s.q FROM jl_li JOIN jl_st s ON s.w = jl_li.w AND s.i = jl_li.i AND s.q > jl_li.n WHERE jl_li.w = 1 AND jl_li.o = 7 ORDER BY jl_li.n;
SELECT jl_li.o, jl_li.n, s.q FROM jl_li JOIN jl_st s ON s.w = 1.0 AND s.i = jl_li.i::numeric WHERE jl_li.w = 1 AND jl_li.o = 7 ORDER BY jl_li.n;
SELECT jl_li.o, jl_li.n, s.q FROM jl_li JOIN jl_st s ON s.w = 1 AND s.i::text = jl_li.i::text WHERE jl_li.w = 1 AND jl_li.o = 7 ORDER BY jl_li.n;
SELECT count(*) FROM jl_li JOIN jl_st s ON s.w = 1 AND s.i = jl_li.i WHERE jl_li.w = 1;
DROP TABLE jl_st;
DROP TABLE jl_li;
DROP TABLE jl_dg;
