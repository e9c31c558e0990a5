// Exact count of every ID of the 26 sparse columns of a picasso dataset
// with DuckDB, the baseline that issue 16 compares `picasso profile` with.
// Not built and not run by the tests. Usage, from a directory where
// `npm install @duckdb/node-api` was run:
//
//   node scripts/duckdb-exact-count.mjs /work/data/kaggle/train [threads]
//
// Prints the wall time of the query and the number of distinct IDs found.
import { DuckDBInstance } from '@duckdb/node-api';

const dir = process.argv[2] ?? '/work/data/kaggle/train';
const threads = process.argv[3] ?? '2';
const cols = Array.from({ length: 26 }, (_, i) => `C${i + 1}`);
const src = `read_parquet('${dir}/*.parquet')`;
const parts = cols.map(
  (c, i) => `select ${i} as t, ${c} as id, count(*) as n from ${src} group by ${c}`,
);
const sql = `select count(*) as distinct_ids, sum(n) as accesses from (${parts.join(' union all ')})`;

const db = await DuckDBInstance.create(':memory:', { threads });
const con = await db.connect();
const t0 = process.hrtime.bigint();
const reader = await con.runAndReadAll(sql);
const secs = Number(process.hrtime.bigint() - t0) / 1e9;
const [row] = reader.getRowObjects();
console.log(`duckdb exact count: ${secs.toFixed(3)} s, ${row.distinct_ids} distinct ids, ${row.accesses} accesses, ${threads} threads`);
