#!/usr/bin/env python3
"""Step time of picasso's four models in PyTorch, for a side-by-side comparison.

Not part of picasso's build or tests. It implements the shapes of
`go test -run '^$' -bench 'BenchmarkModelStep/.*/sgd/' ./pkg/train/`:
13 dense features, 26 one-hot sparse features over tables of 100,000 rows,
embedding dimension 16, plain SGD (lr 0.1, sparse embedding gradients), BCE
on the logit, random inputs drawn once:

  dlrm    bottom MLP 13-512-256-64-16, dot interaction (pairs below the
          diagonal plus the bottom output), top MLP 512-256-1
  wdl     deep MLP 256-128-1 over [dense, embeddings], plus a wide part: a
          dimension-1 embedding per table, summed into the logit
  dcn     DCN-v2: two full-rank cross layers x_{l+1} = x0*(W x_l + b) + x_l
          over x0 = [dense, embeddings], stacked before a 256-128-1 deep MLP
  deepfm  first-order weights as wdl, the FM term 0.5*((sum v)^2 - sum v^2)
          over the 26 pooled embeddings, and the 256-128-1 deep MLP

Usage (Debian: apt-get install python3-torch):
  /usr/bin/python3 scripts/torch_models_bench.py --model dcn --batch 1024 --threads 1
Prints one JSON line per model and batch with the median ms per step. Use
--threads 1 on a shared 2-core machine (two threads stall when another
process is busy); --check trains one fixed batch and asserts the loss falls.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn as nn

DENSE, TABLES, ROWS, DIM = 13, 26, 100_000, 16


def mlp(widths, last_act=False):
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2 or last_act:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Model(nn.Module):
    def __init__(self, arch):
        super().__init__()
        self.arch = arch
        self.emb = nn.ModuleList(nn.EmbeddingBag(ROWS, DIM, mode="sum", sparse=True) for _ in range(TABLES))
        bound = (1 / ROWS) ** 0.5  # picasso's (and DLRM's) embedding initialisation
        for e in self.emb:
            nn.init.uniform_(e.weight, -bound, bound)
        x0 = DENSE + TABLES * DIM
        if arch == "dlrm":
            self.bottom = mlp([DENSE, 512, 256, 64, DIM], last_act=True)
            f = TABLES + 1
            self.li, self.lj = torch.tril_indices(f, f, offset=-1)
            self.top = mlp([DIM + f * (f - 1) // 2, 512, 256, 1])
            return
        self.deep = mlp([x0, 256, 128, 1])
        if arch in ("wdl", "deepfm"):
            self.wide = nn.ModuleList(nn.EmbeddingBag(ROWS, 1, mode="sum", sparse=True) for _ in range(TABLES))
            for w in self.wide:
                nn.init.uniform_(w.weight, -bound, bound)
        if arch == "dcn":
            self.cross = nn.ModuleList(nn.Linear(x0, x0) for _ in range(2))

    def forward(self, dense, ids):
        embs = [e(ids[:, t:t + 1]) for t, e in enumerate(self.emb)]
        if self.arch == "dlrm":
            x = self.bottom(dense)
            t = torch.stack([x] + embs, dim=1)
            z = torch.bmm(t, t.transpose(1, 2))[:, self.li, self.lj]
            return self.top(torch.cat([x, z], dim=1)).squeeze(1)
        x0 = torch.cat([dense] + embs, dim=1)
        x = x0
        if self.arch == "dcn":
            for c in self.cross:
                x = x0 * c(x) + x
        logit = self.deep(x).squeeze(1)
        if self.arch in ("wdl", "deepfm"):
            logit = logit + sum(w(ids[:, t:t + 1]) for t, w in enumerate(self.wide)).squeeze(1)
        if self.arch == "deepfm":
            v = torch.stack(embs, dim=1)
            logit = logit + 0.5 * (v.sum(1).pow(2) - v.pow(2).sum(1)).sum(1)
        return logit


def batches(n, k, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.rand(n, DENSE, generator=g), torch.randint(0, ROWS, (n, TABLES), generator=g),
             torch.randint(0, 2, (n,), generator=g).float()) for _ in range(k)]


def step(model, opt, loss_fn, b):
    dense, ids, y = b
    opt.zero_grad()
    loss = loss_fn(model(dense, ids), y)
    loss.backward()
    opt.step()
    return loss.item()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all", help="dlrm, wdl, dcn, deepfm or all")
    ap.add_argument("--batch", default="1024,128", help="comma-separated batch sizes")
    ap.add_argument("--steps", type=int, default=60, help="timed steps (after 5 warm-up steps)")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--check", action="store_true", help="train one fixed batch and assert the loss falls")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    archs = ["dlrm", "wdl", "dcn", "deepfm"] if a.model == "all" else a.model.split(",")
    for arch in archs:
        for n in (int(x) for x in a.batch.split(",")):
            model = Model(arch)
            opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loss_fn = nn.BCEWithLogitsLoss()
            data = batches(n, 8)
            if a.check:
                first = step(model, opt, loss_fn, data[0])
                for _ in range(30):
                    last = step(model, opt, loss_fn, data[0])
                assert last < first, f"{arch}: loss {first} -> {last} did not fall"
                print(json.dumps({"model": arch, "batch": n, "check": "ok", "loss_first": first, "loss_last": last}))
                continue
            for i in range(5):
                step(model, opt, loss_fn, data[i % len(data)])
            ms = []
            for i in range(a.steps):
                t0 = time.perf_counter()
                step(model, opt, loss_fn, data[i % len(data)])
                ms.append((time.perf_counter() - t0) * 1e3)
            print(json.dumps({"model": arch, "batch": n, "threads": a.threads, "steps": a.steps,
                              "ms_per_step_median": round(statistics.median(ms), 3), "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
