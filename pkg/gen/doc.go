// Package gen writes synthetic click logs in picasso's Parquet layout, with
// a known true model, so that every stage can be run and checked at any size
// without downloading data.
//
// A preset (Presets, LookupPreset) names the shape to imitate: the features
// and table sizes of the workloads in seeds/001 Table 2 (Criteo Kaggle for
// RMC2, Criteo Terabyte for RMC3, Avazu for RMC4) or a small Criteo-shaped
// demo, each table's Zipf exponent (the skew that FAE exploits, seeds/001
// §2: a few percent of the rows draw most of the accesses), the click rate
// and the model the data is meant for. Preset.HotSetFor computes from the
// exponents alone how many rows a hot set of a given size holds and what
// share of the inputs it serves.
//
// Run draws rows from the preset with a planted model (see DESIGN.md,
// "Synthetic data"), writes DIR/train and DIR/test, and reports the click
// rate and the oracle AUC of the true probability p_true, the best AUC a
// trained model can expect. The same options give the same bytes whatever
// the number of workers.
package gen
