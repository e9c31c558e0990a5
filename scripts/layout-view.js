// layout-view.js LAYOUT INPUT: reads a FAE layout back as its input rows
// with DuckDB (the view of docs/layout.md, built from manifest.json's
// columns) and checks that they are exactly the rows of INPUT (a Parquet
// directory), as a multiset. Prints the counts; exits 1 on a difference.
// NODE_PATH must reach @duckdb/node-api (scripts/layout-check.sh sets it).
const fs = require('fs');
const path = require('path');
const { DuckDBInstance } = require('@duckdb/node-api');

async function main() {
  const [dir, input] = process.argv.slice(2);
  const spec = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')).spec;
  const q = (s) => '"' + s.replaceAll('"', '""') + '"';
  const sparse = spec.sparse.map((f) => f.name);
  const all = [spec.label, ...spec.dense, ...sparse].map(q).join(', ');
  const lookups = sparse.map((c) => `ids.id[h.${q(c)} + 1] AS ${q(c)}`).join(', ');
  const db = await DuckDBInstance.create(':memory:');
  const c = await db.connect();
  const stmts = [
    `CREATE VIEW hotmap AS SELECT * FROM '${dir}/hotmap.parquet'`,
    `CREATE VIEW ids AS SELECT list(id ORDER BY slot) AS id FROM hotmap`,
    `CREATE VIEW layout_rows AS
       SELECT 'hot' AS class, h.* REPLACE (${lookups}) FROM '${dir}/hot/*.parquet' h, ids
       UNION ALL BY NAME
       SELECT 'cold' AS class, * FROM '${dir}/cold/*.parquet'`,
    `CREATE VIEW input_rows AS SELECT ${all} FROM '${input}/*.parquet'`,
  ];
  for (const s of stmts) await c.run(s);
  const r = await c.runAndReadAll(`SELECT
      (SELECT count(*) FROM layout_rows) AS layout_rows,
      (SELECT count(*) FROM input_rows) AS input_rows,
      (SELECT count(*) FROM (SELECT ${all} FROM layout_rows EXCEPT ALL SELECT ${all} FROM input_rows)) AS not_in_input,
      (SELECT count(*) FROM (SELECT ${all} FROM input_rows EXCEPT ALL SELECT ${all} FROM layout_rows)) AS not_in_layout`);
  const row = r.getRowObjectsJson()[0];
  console.log(JSON.stringify(row));
  if (row.layout_rows !== row.input_rows || row.not_in_input !== '0' || row.not_in_layout !== '0') process.exit(1);
}

main().catch((e) => { console.error(String(e)); process.exit(1); });
