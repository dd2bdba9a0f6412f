-- mod, ascii, chr, strpos / position, and substring over CHAR(n)
-- (CH-benCHmark's joins of stock to supplier and customer to nation).
-- The expected answers are PostgreSQL 15's (scripts/slt-from-postgres.py
-- over src/string_functions.sql).

CREATE TABLE sf_c (id INT PRIMARY KEY, state CHAR(2), name VARCHAR(10), n NUMERIC(6,2), big BIGINT);
INSERT INTO sf_c VALUES (1, 'AB', 'alpha', 7.5, 10000000000), (2, 'z ', 'beta', -7.5, -3), (3, NULL, '', 0, 0), (4, 'É1', 'ñandú', 2, 7);
SELECT mod(7, 3), mod(-7, 3), mod(7, -3), mod(7.5, 2), mod(10000000000, 7), mod(NULL, 3);
SELECT id, mod(id * 7, 3), mod(big, 4), mod(n, 2) FROM sf_c ORDER BY id;
SELECT mod(1, 0);
SELECT mod(1.5, 0);
SELECT mod('a', 2);
SELECT id, ascii(state), ascii(name), ascii(substring(state from 1 for 1)) FROM sf_c ORDER BY id;
SELECT ascii(''), ascii('€'), ascii(NULL);
SELECT chr(65), chr(8364), chr(ascii('x') + 1);
SELECT chr(0);
SELECT chr(-1);
SELECT chr(1114112);
SELECT id, substring(state from 1 for 1), substring(state, 2), substr(state, 1, 5), substring(state for 1) FROM sf_c ORDER BY id;
SELECT id, strpos(name, 'a'), position('a' IN name), strpos(state, ' '), position('' IN name) FROM sf_c ORDER BY id;
SELECT strpos('ñandú', 'dú'), position('x' IN 'abc'), strpos(NULL, 'a');
SELECT id FROM sf_c WHERE ascii(substring(state from 1 for 1)) = 65;
SELECT count(*) FROM sf_c WHERE mod(id, 2) = 0;
SELECT substring(name from 1 for 1) AS f, count(*) FROM sf_c GROUP BY substring(name from 1 for 1) ORDER BY substring(name, 1, 1);
SELECT LOWER(name), count(*) FROM sf_c GROUP BY lower(name) ORDER BY Lower(name);
SELECT mod(id, 2) + 1, count(*) FROM sf_c GROUP BY mod(id, 2) ORDER BY mod(id, 2);
SELECT upper(name) FROM sf_c GROUP BY lower(name);
DROP TABLE sf_c;
