// Package train trains click-through-rate models on compute backends, in
// the placement modes of the FAE pipeline (seeds/001 §4.3) with PICASSO's
// packing and interleaving (seeds/000 §III-B, §III-C).
//
// Every model has one embedding bag per sparse feature (sum pooling;
// features that share a table share its rows) and binary cross-entropy on
// one logit. DLRM (ArchDLRM) adds a bottom MLP over the dense features, the
// dot interaction of its output with every pooled embedding (all pairs
// below the diagonal, concatenated with the bottom output) and a top MLP.
// The others start from x0, the dense features followed by the pooled
// embeddings: DCN-v2 (ArchDCN) stacks full-rank cross layers
// x_{l+1} = x0⊙(W·x_l + b) + x_l before a deep MLP; Wide&Deep (ArchWDL)
// adds to the deep MLP's logit a first-order weight per ID; DeepFM
// (ArchDeepFM) adds those and the factorization machine's second-order
// term. First-order weights are one more value at the end of each
// embedding row, with an Adagrad accumulator of their own, so they are
// placed, packed and synchronised with the row. All embedding tables are
// packed into one compute.PackedTable, so one lookup and one sparse update
// cover every table (PICASSO's D-packing). Embeddings take SGD or row-wise
// Adagrad, the MLPs SGD, Adagrad or Adam, each with its learning rate and
// optional L2 weight decay (on the embedding rows a batch looks up), with
// DLRM's linear warm-up and polynomial decay of the learning rate. A
// validation set keeps the best model and can stop the run early.
//
// # Host, device and placements
//
// A run computes with two backends (compute.Backend): the host's, in host
// memory, and the device's: a GPU, or on a machine without one the CPU
// emulating a device (compute.CPU.Emulate), whose memory is its own. The
// trainer never asks for a concrete backend; it uses lanes when the dense
// backend offers them (compute.Splitter). Data crosses between the two only
// through the device's copy calls, and the link counts every byte that
// crosses: the figures bytes_h2d and bytes_d2h are what a GPU would move.
//
// A placement decides where each part lives; the trainer's loop has no
// branch on the mode:
//
//   - cpu: everything in host memory; no device, nothing crosses.
//   - hybrid: embeddings in host memory, MLPs on the device; every batch
//     ships its pooled embeddings (and dense inputs and labels) to the device
//     and the embedding gradients back.
//   - device: everything on the device; the IDs and inputs cross.
//   - fae: the hot rows, packed into one table, on the device and the full
//     tables (the master copy) in host memory. Hot mini-batches run entirely
//     on the device, looked up with the slots the layout stores (sent as
//     int32); cold ones look up and update the master and ship pooled
//     embeddings like hybrid. Each side records the rows it changed, and at
//     each hot/cold swap only those cross, gathered into one copy with their
//     slots and scattered on the other side.
//   - artifact: fae's placement in the FAE artifact's order, all cold
//     mini-batches of an epoch and then all hot ones.
//   - hybridhash: PICASSO's HybridHash (seeds/000 §III-D, Algorithm 1) on
//     raw data with no profile: a pkg/hybridhash cache counts the IDs and
//     picks the hot rows, which live on the device; the other rows live in
//     the cache's host tier and spill to its disk tier. Each mini-batch's
//     missed rows are staged on the device for its step and handed back,
//     and a refresh of the hot set moves only the rows that enter or leave.
//
// A phase policy (order) decides which mini-batch trains next: a raw
// dataset's shuffled row groups, a layout's two classes in one seeded
// interleaving (the modes without a hot table train on exactly fae's
// mini-batches), or hot and cold phases.
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
