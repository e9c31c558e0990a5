// Package bench runs picasso's training modes side by side on the same data,
// seed and number of steps, and reports what each costs and reaches: the
// throughput, the time per phase, the bytes moved between host and device
// (FAE, seeds/001 Table 7), the test AUC and log loss at fixed checkpoints
// (Table 4), the share of hot inputs, the Shuffle Scheduler's rate over time,
// and the speedup of every mode over the hybrid CPU-GPU baseline. Ablations
// rerun a mode without one of PICASSO's optimisations (seeds/000 §III):
// without packing (train.packing false) or without interleaving
// (train.prefetch 0).
//
// Prepare runs profile and classify when their outputs are missing or were
// made from other data or settings, so that every mode trains on the same
// FAE layout. Run trains every variant once per repeat, all variants of a
// repeat before the next repeat starts, so that ratios between modes come
// from runs close in time on a noisy machine; it prints Go benchmark lines as
// runs finish, so benchstat can compare two benches. Report.WriteFiles writes
// report.json, report.md and PNG charts.
package bench
