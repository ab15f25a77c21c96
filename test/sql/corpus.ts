/** Valid statements covering every construct of the dialect; shared by the printer and property tests. */
export const SELECTS: readonly string[] = [
  'SELECT * FROM demo',
  'SELECT a, b AS c, s.d, x.y, count(*), meta(topic) FROM demo AS s WHERE a > 3 AND b != "x"',
  'SELECT * EXCEPT(a, b) REPLACE(a + 1 AS c) FROM topic/sensor/# WHERE a IN (1, 2, 3) OR b NOT IN arr',
  'SELECT color, avg(size) FROM demo GROUP BY color, TUMBLINGWINDOW(ss, 10) HAVING avg(size) > 2 ORDER BY color DESC LIMIT 3',
  'SELECT s1.*, s2.b FROM s1 INNER JOIN s2 ON s1.id = s2.id LEFT JOIN t3 AS t ON t.k = s1.k GROUP BY COUNTWINDOW(5, 2)',
  'SELECT * FROM s1 CROSS JOIN s2 RIGHT JOIN s3 FULL JOIN s4 ON s3.a = s4.a GROUP BY SLIDINGWINDOW(mi, 5, 1) FILTER (WHERE a > 1) OVER (WHEN b = 2)',
  'SELECT CASE a WHEN 1 THEN "one" WHEN 2 THEN "two" ELSE "many" END AS n, CASE WHEN a > 1 THEN true ELSE false END FROM demo',
  'SELECT arr[0], arr[1:3], arr[:2], arr[2:], arr[:], arr[], a->b->c, a->b.c, 2 * (arr[0]) FROM demo',
  "SELECT lag(a) OVER (PARTITION BY b WHEN c > 1) AS l, row_number() OVER (ORDER BY a DESC) FROM demo WHERE name LIKE 'a%'",
  'SELECT a FROM demo WHERE a BETWEEN 1 AND 5 AND b NOT BETWEEN -1.5 AND .5 AND c NOT LIKE "x_"',
  'SELECT a | b & c, a ^ 1, a % 2, -5, - 3, 5., 1.25, `my col`, NULL FROM demo /* comment */ -- tail',
  'SELECT meta(*), meta(s.topic), meta(k->sub), mqtt(topic) FROM demo AS s',
  'SELECT acc_sum(size) OVER (WHEN color = "red"), changed_cols("c_", true, a, b) FROM demo',
  'SELECT unnest(arr) AS v, id FROM demo GROUP BY HOPPINGWINDOW(ss, 10, 5), SESSIONWINDOW(hh, 2, 1)',
  "SELECT 'it\\'s', \"tab\\t\\u00e9\\x41\\101\" FROM demo WHERE a ! 1 AND b ! = 2 AND c < = 3 AND d > = 4 AND e - > f = 1",
  'SELECT a + b * c - d / e FROM demo ORDER BY abs(a), b LIMIT 10;',
];

export const DDLS: readonly string[] = [
  'CREATE STREAM demo (a BIGINT, b FLOAT, c STRING, d DATETIME, e BOOLEAN, f BYTEA) WITH (DATASOURCE="demo", FORMAT="json")',
  'CREATE STREAM s (arr ARRAY(ARRAY(BIGINT)), rec STRUCT(x FLOAT, y ARRAY(STRUCT(z STRING))),) WITH (SHARED="true", STRICT_VALIDATION="false")',
  'CREATE TABLE t () WITH (TYPE="memory", KIND="lookup", KEY="id", RETAIN_SIZE="3");',
  'CREATE STREAM `地址` (`ss` BIGINT) WITH ()',
  'SHOW STREAMS',
  'SHOW TABLES;',
  'DESCRIBE STREAM demo',
  'EXPLAIN TABLE t',
  'DROP STREAM demo;',
];
