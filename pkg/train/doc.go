// Package train trains DLRM click-through-rate models on the compute
// backend, in the placement modes of the FAE pipeline (seeds/001 §4.3) with
// PICASSO's packing and interleaving (seeds/000 §III-B, §III-C).
//
// The model is DLRM: a bottom MLP over the dense features, one embedding bag
// per sparse feature (sum pooling; features that share a table share its
// rows), the dot interaction of the bottom output with every pooled
// embedding (all pairs below the diagonal, concatenated with the bottom
// output), a top MLP whose input width is derived from the feature count,
// and binary cross-entropy on the logit. All embedding tables of the model's
// dimension are packed into one compute.PackedTable, so one lookup and one
// sparse update cover every table (PICASSO's D-packing). Optimizers are SGD
// and Adagrad (row-wise for embeddings), with DLRM's linear warm-up and
// polynomial decay of the learning rate.
//
// Placement modes decide where each part lives. No GPU is needed: the
// device is emulated in host memory, and every byte that would cross the
// host/device link is counted.
//
//   - cpu: everything in host memory; nothing crosses the link.
//   - hybrid: embeddings in host memory, MLPs on the device; every batch
//     ships its pooled embeddings (and dense inputs and labels) to the device
//     and the embedding gradients back.
//   - device: everything on the device; inputs cross the link.
//   - fae: the hot rows, packed into one table, on the device and the full
//     tables (the master copy) in host memory. Hot mini-batches run entirely
//     on the device; cold ones look up and update the master and ship pooled
//     embeddings like hybrid. At each hot/cold swap only the hot rows changed
//     since the last synchronisation are copied across.
//   - artifact: the FAE artifact's order, all cold mini-batches of an epoch
//     and then all hot ones.
//
// In fae mode the Shuffle Scheduler (seeds/001 Eq. 5) sets how many
// mini-batches of each class run between swaps: it starts cold at R(50),
// evaluates the loss on a fixed held-out set after every swap, halves the
// rate when the loss rose and doubles it after Patience consecutive falls.
//
// Reading overlaps compute: a bounded prefetch goroutine decodes the next
// mini-batches while the current one trains, and a mini-batch can be cut
// into micro-batches whose gradients are accumulated before one update
// (PICASSO's D-interleaving, seeds/000 Eq. 2).
//
// A run directory receives metrics.jsonl (training loss, throughput, bytes
// moved, scheduler decisions and test metrics at fixed step intervals),
// summary.json and a checkpoint from which a run resumes and reaches the
// same result as an uninterrupted one.
package train
