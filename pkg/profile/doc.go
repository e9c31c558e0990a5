// Package profile samples a dataset, logs how often each embedding row is
// accessed, and picks the hot-access threshold t that fills a device memory
// budget, following §4.1 of the FAE paper (seeds/001, "Calibrating the Access
// Threshold", Eq. 1-4).
//
// The pipeline has four parts:
//
//   - Sampler (Run, PlanSample): a seeded random x% of the inputs, either
//     whole row groups (reads only the sample; the default when the sample
//     spans enough row groups) or single rows chosen by a keyed hash of their
//     position (reads everything, valid even when rows are ordered).
//   - Embedding logger (Logger): per table, the sampled access count k of
//     every row, a dense []uint32 for tables up to DenseRowLimit rows and a
//     hash map above. Loggers of disjoint shards merge by adding counts.
//     WriteFile/ReadLogger keep them in a versioned, checksummed side file
//     that classify reads.
//   - Chunk estimator (Eq. 1-4): for table z and threshold t the sample
//     cutoff is H_zt = t·T_z·x/100 (Eq. 1), with T_z estimated from the
//     sample as A_z·100/x (A_z = sampled accesses of z), so H_zt = t·A_z; a
//     row is hot when its count k >= H_zt (MinCount: k >= ceil(H_zt), at
//     least 1). The logger's entries are the E rows seen in the sample; n
//     of its N = ceil(E/m) chunks are drawn without replacement, C_i counts
//     the entries with k >= H_zt (Eq. 2), ȳ and s are their mean and
//     standard deviation (Eq. 3) and ȳ ± t_{α/2,n-1}·sqrt((N-n)/N·s²/n) is
//     the interval (Eq. 4), scaled by N to hot rows. A table with at most n
//     chunks is counted exactly. Chunks are read through a keyed bijective
//     permutation of the logger's indices and cut to balanced sizes, so the
//     interval holds whatever the ID order (popular rows clustered at low
//     IDs included). Like any sample of n·m entries, the chunks can miss
//     the few rows above a very high cutoff; the exact count on the sample
//     is always reported next to the estimate.
//   - Threshold optimizer (Analyze): bisection in log space for the smallest
//     t whose upper bound of hot bytes (rows plus optimizer state) fits the
//     budget, plus the exact (histogram) and artifact-compatible top-K
//     methods, and the leave-one-out share of hot inputs.
//
// The result (Result) is JSON, versioned, and carries everything classify
// needs: the threshold, each table's integer cutoff (MinCount) and the path
// of the logger side file.
package profile
