-- harness/bench/overhead.sh's sqlite3 workload: 200k inserts into an in-memory table,
-- then two indexes over it.
CREATE TABLE t(a INTEGER, b TEXT, c REAL);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO t SELECT i, printf('row-%08d-%s', i, hex(randomblob(8))), i * 0.5 FROM n;
CREATE INDEX t_b ON t(b);
CREATE INDEX t_c ON t(c);
SELECT count(*) FROM t;
