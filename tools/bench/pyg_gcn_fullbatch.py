#!/usr/bin/env python3
"""PyG baseline for docs/BENCHMARKS.md: full-batch 3-layer GCN epochs on the real ogbn-arxiv graph.

Same setup as `gnnpipe_bench_gpu --graph arxiv`: the graph from netbenchmark/adj_full.npz made
undirected (PyG's to_undirected; GCNConv adds self-loops and the symmetric normalisation, cached),
seeded random 128-dim features (arxiv's real features are not in ../shared), hidden 128, 40
classes, ReLU, no dropout, Adam, cross-entropy on the train split. One epoch = forward + loss +
backward + step, timed with torch.cuda.synchronize() around `--epochs` epochs after `--warmup`.
Prints one JSON line. Needs PyTorch, PyG and numpy (present on the GPU machine); no scipy.
"""
import argparse
import json
import os
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv
from torch_geometric.utils import to_undirected


def load_arxiv(data_dir):
    base = os.path.join(data_dir, "ogbn-arxiv")
    adj = np.load(os.path.join(base, "netbenchmark", "adj_full.npz"))
    indptr, indices = adj["indptr"].astype(np.int64), adj["indices"].astype(np.int64)
    n = int(adj["shape"][0])
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    edge_index = to_undirected(torch.from_numpy(np.stack([rows, indices])), num_nodes=n)
    labels = torch.from_numpy(np.load(os.path.join(base, "converted", "labels.npy")).astype(np.int64))
    train = torch.from_numpy(np.load(os.path.join(base, "converted", "train_idx.npy")).astype(np.int64))
    return n, edge_index, labels, train


class Gcn(torch.nn.Module):
    def __init__(self, dims):
        super().__init__()
        self.convs = torch.nn.ModuleList(GCNConv(a, b, cached=True) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x, edge_index):
        for i, conv in enumerate(self.convs):
            x = conv(x, edge_index)
            if i + 1 < len(self.convs):
                x = F.relu(x)
        return x


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "datasets"))
    p.add_argument("--features", type=int, default=128)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--tf32", action="store_true", help="allow TF32 matmuls (PyTorch's default is off)")
    a = p.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    dev = torch.device("cuda")
    n, edge_index, labels, train = load_arxiv(a.data_dir)
    g = torch.Generator().manual_seed(0)
    x = torch.rand(n, a.features, generator=g).to(dev)
    edge_index, labels, train = edge_index.to(dev), labels.to(dev), train.to(dev)
    classes = int(labels.max()) + 1
    model = Gcn([a.features] + [a.hidden] * (a.layers - 1) + [classes]).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)

    def epoch():
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(x, edge_index)[train], labels[train])
        loss.backward()
        opt.step()

    for _ in range(a.warmup):
        epoch()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.epochs):
        epoch()
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3 / a.epochs
    print(json.dumps({"impl": "pyg", "torch": torch.__version__, "graph": "ogbn-arxiv", "nodes": n,
                      "edges_undirected_directed_pairs": int(edge_index.size(1)), "features": a.features,
                      "hidden": a.hidden, "layers": a.layers, "tf32": a.tf32, "epoch_ms": ms,
                      "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
