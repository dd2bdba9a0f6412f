-- EXTRACT (NUMERIC) and date_part (DOUBLE PRECISION) of DATE and
-- TIMESTAMP values: every field, NULLs, GROUP BY and WHERE on them (on
-- the device under ndp = on), PostgreSQL's errors for time fields of a
-- date, unknown units and non-datetime arguments. The expected answers
-- are PostgreSQL 15's (scripts/slt-from-postgres.py over
-- src/datetime_part.sql).

CREATE TABLE ev (id INT PRIMARY KEY, t TIMESTAMP, d DATE);
INSERT INTO ev VALUES (1, '2024-01-02 03:04:05.5', '2024-02-29'), (2, '1999-12-31 23:59:59', '2021-01-01'), (3, NULL, NULL), (4, '0044-03-15 12:00:00', '2000-01-01');
SELECT id, extract(year from t), extract(month from t), extract(day from t), extract(hour from t), extract(minute from t), extract(second from t) FROM ev ORDER BY id;
SELECT id, extract(epoch from t), extract(milliseconds from t), extract(microseconds from t), extract(julian from t) FROM ev ORDER BY id;
SELECT id, extract(dow from t), extract(isodow from t), extract(doy from t), extract(week from t), extract(isoyear from t), extract(quarter from t) FROM ev ORDER BY id;
SELECT id, extract(decade from t), extract(century from t), extract(millennium from t) FROM ev ORDER BY id;
SELECT id, extract(year from d), extract(epoch from d), extract(week from d), extract(isoyear from d), extract(julian from d), extract(dow from d) FROM ev ORDER BY id;
SELECT id, date_part('year', t), date_part('second', t), date_part('epoch', t), date_part('doy', d), date_part('epoch', d) FROM ev ORDER BY id;
SELECT extract(year from t) AS yr, count(*) FROM ev GROUP BY extract(year from t) ORDER BY 1;
SELECT count(*) FROM ev WHERE extract(year from t) = 2024;
SELECT sum(extract(month from d)), max(date_part('epoch', t)) FROM ev;
SELECT extract(YEAR FROM timestamp '2024-05-06'), extract(day from '2024-05-06'::date), extract(minute from '2024-05-06 07:08:09'::timestamp), extract(secs from timestamp '2024-05-06 07:08:09');
SELECT extract(hour from d) FROM ev;
SELECT extract(foo from t) FROM ev;
SELECT date_part('foo', d) FROM ev;
SELECT extract(year from id) FROM ev;
-- Interval literals in date and timestamp arithmetic.
SELECT date '2024-01-31' + interval '1 day', date '2024-01-31' + interval '1 month', timestamp '2024-03-31 10:00' - interval '1 month';
SELECT timestamp '2024-01-31 23:30' + interval '1 year 2 mons 3 days 04:05:06.5', interval '2 hours' + timestamp '2024-01-01 23:00';
SELECT '2024-01-01'::date - interval '1 week', timestamp '2024-01-01' + interval '2' hour, date '2024-01-01' + interval '@ 1 day ago';
SELECT id, t + interval '1 month', d - interval '1 year' FROM ev ORDER BY id;
SELECT count(*) FROM ev WHERE t >= timestamp '2024-01-01' - interval '1 day';
SELECT count(*) FROM ev WHERE d + interval '30 days' > date '2024-03-01';
SELECT 5 + interval '1 day';
SELECT date '2024-01-01' + interval '1 fortnight';
