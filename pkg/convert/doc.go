// Package convert turns click-log text into picasso's Parquet layout: the
// Criteo Kaggle and Terabyte logs (TSV, or CSV with a header) and Avazu CSV,
// the public datasets of the workloads in seeds/001 Table 2, and any other
// delimited log with a header whose columns' roles (label, dense with a
// transform, sparse, multi-hot, time, ignored) are given by Columns. It
// follows no section of the papers.
//
// A split (Options.Split) sends each row of the inputs to train, valid or
// test, by a seeded hash of the row's text or by its rank in time.
//
// Run streams its inputs (plain or gzip): one reader cuts them into blocks
// of whole lines, parsers turn the blocks into rows in parallel and one
// writer writes them in input order, so the output does not depend on the
// number of workers. Criteo's integer features become log(1+x) (missing and
// negative values 0); Avazu's hour becomes an hour of day and a weekday.
// Categorical values become table rows by hashing into a fixed number of
// rows per table (one pass) or by numbering each table's values in order of
// first appearance (two passes).
//
// A malformed line is a LineError naming file, line and field (it matches
// dataset.ErrBadData), or, when asked, is skipped and counted.
package convert
