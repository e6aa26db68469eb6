"""gnnpipe.loader (issue #43 item 4): NeighborLoader, ClusterLoader and SAINTRandomWalkLoader give
gnnpipe's sampled batches in PyG's layout: every edge is a graph edge between the right rows, no
node takes more than its fanout, x is the input nodes' rows and y the targets' labels, each seed is
a target once an epoch; the same seed gives the same batches; the arrays share the batch's memory;
bad arguments are the one-line errors; and a PyG-style SAGE model written with torch, trained by
the loader, reaches the accuracy `gnnpipe run` reaches with the same model and sampler (Cora,
Amazon Computers; skipped without torch or the datasets)."""
import os

import numpy as np
import pytest

import gnnpipe
import gnnpipe.loader as L

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

DATA = os.environ.get("GNNPIPE_DATA_DIR", "")
BIN = os.environ.get("GNNPIPE_BIN")


def arr(a):
    return a.numpy() if torch is not None and isinstance(a, torch.Tensor) else np.asarray(a)


def graph(n=400, degree=6, features=8, classes=4, seed=3):
    """A random directed graph as a gnnpipe.Dataset, with its arrays."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, n * degree)
    dst = rng.integers(0, n, n * degree)
    keep = src != dst
    edges = np.unique(np.stack([src[keep], dst[keep]]), axis=1)
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = rng.integers(0, classes, n).astype(np.int64)
    train = np.zeros(n, bool)
    train[rng.permutation(n)[: n // 2]] = True
    val = ~train & (np.arange(n) % 2 == 0)
    test = ~train & ~val
    return gnnpipe.Dataset(edges, x, y, train, val, test, name="random"), edges, x, y, train


def test_neighbor_batches_are_sampled_subgraphs_of_the_graph():
    ds, edges, x, y, train = graph()
    in_neighbors = {}
    for s, d in edges.T:
        in_neighbors.setdefault(int(d), set()).add(int(s))
    loader = L.NeighborLoader(ds, [4, 3], batch_size=32, input_nodes=train, shuffle=True, seed=5)
    assert len(loader) == -(-int(train.sum()) // 32)
    for epoch in (1, 2):
        seen = []
        for b in loader:
            n_id = arr(b.n_id)
            assert b.epoch == epoch and len(b.adjs) == 2
            np.testing.assert_array_equal(arr(b.x), x[n_id])
            targets = n_id[: b.batch_size]
            np.testing.assert_array_equal(arr(b.y), y[targets])
            seen += targets.tolist()
            assert b.adjs[0].size[1] == b.adjs[1].size[0] and b.adjs[1].size[1] == b.batch_size
            assert b.adjs[0].size[0] == len(n_id)
            # Input side first. A node's picks come from the hop that first reached it: the seeds
            # keep their 4 in both blocks, the nodes hop 1 reached take 3.
            for adj, limit in zip(b.adjs, (np.where(np.arange(b.adjs[0].size[1]) < b.batch_size, 4, 3),
                                           np.full(b.batch_size, 4))):
                e = arr(adj.edge_index)
                assert e.shape[0] == 2 and e[0].max() < adj.size[0] and e[1].max() < adj.size[1]
                for s, d in e.T:  # local ids: sources are n_id's prefix, destinations its shorter prefix
                    assert int(n_id[s]) in in_neighbors[int(n_id[d])]
                per_dst = np.bincount(e[1], minlength=adj.size[1])
                assert np.all(per_dst <= limit)
                w = arr(adj.edge_weight)  # mean: 1 / (sampled in-degree)
                np.testing.assert_allclose(w, 1.0 / per_dst[e[1]], rtol=1e-6)
        assert sorted(seen) == np.flatnonzero(train).tolist()


def test_the_same_seed_gives_the_same_batches_and_shuffle_false_keeps_the_order():
    ds, *_ = graph()
    a = L.NeighborLoader(ds, [4, 3], batch_size=50, input_nodes="train", shuffle=True, seed=1)
    b = L.NeighborLoader(ds, [4, 3], batch_size=50, input_nodes="train", shuffle=True, seed=1)
    c = L.NeighborLoader(ds, [4, 3], batch_size=50, input_nodes="train", shuffle=True, seed=2)
    for _ in range(2):
        for x, y, z in zip(a, b, c):
            np.testing.assert_array_equal(arr(x.n_id), arr(y.n_id))
            np.testing.assert_array_equal(arr(x.adjs[0].edge_index), arr(y.adjs[0].edge_index))
            assert not np.array_equal(arr(x.n_id)[: x.batch_size], arr(z.n_id)[: z.batch_size])
    ordered = L.NeighborLoader(ds, [2], batch_size=1000, input_nodes=np.array([7, 3, 9]))
    batch = next(iter(ordered))
    assert arr(batch.n_id)[:3].tolist() == [7, 3, 9]


def test_batch_arrays_share_the_batch_memory():
    ds, _, x, _, _ = graph()
    loader = L.NeighborLoader(ds, [4, 3], batch_size=64, input_nodes="train")
    core = loader._core
    core.start(1)
    raw = core.next()
    for key in ("x", "n_id", "y"):
        assert not raw[key].flags.owndata and raw[key].base is not None, key
    while core.next() is not None:  # the producer moves on; the arrays keep their batch
        pass
    np.testing.assert_array_equal(raw["x"], x[raw["n_id"]])
    if torch is not None:
        t = torch.from_numpy(raw["x"])
        assert t.data_ptr() == raw["x"].ctypes.data


def test_cluster_and_saint_loaders_give_subgraph_batches():
    ds, edges, x, _, train = graph(n=600)
    for loader in (L.ClusterLoader(ds, 6, batch_size=2, num_layers=2, seed=3),
                   L.SAINTRandomWalkLoader(ds, 40, 2, num_steps=3, sample_coverage=5, num_layers=2, seed=3)):
        batches = list(loader)
        assert len(batches) == len(loader) > 0
        for b in batches:
            n_id = arr(b.n_id)
            assert b.batch_size == len(n_id) and len(b.adjs) == 2
            np.testing.assert_array_equal(arr(b.adjs[0].edge_index), arr(b.adjs[1].edge_index))
            np.testing.assert_array_equal(arr(b.x), x[n_id])
            rows = arr(b.loss_rows)
            assert np.all(train[n_id[rows]])
    saint = next(iter(L.SAINTRandomWalkLoader(ds, 40, 2, num_steps=2, sample_coverage=5, seed=3)))
    assert saint.loss_weights is not None and len(arr(saint.loss_weights)) == len(arr(saint.loss_rows))


def test_loader_errors_are_one_line():
    ds, *_ = graph()
    with pytest.raises(gnnpipe.ConfigError, match="input_nodes: 'training' is not one of train, val, test"):
        L.NeighborLoader(ds, [4], input_nodes="training")
    with pytest.raises(gnnpipe.DataError, match=r"input_nodes: id 400 at position 1 is outside \[0, 400\)"):
        L.NeighborLoader(ds, [4], input_nodes=np.array([1, 400]))
    with pytest.raises(gnnpipe.ConfigError, match="input_nodes: a mask of 3 entries for 400 nodes"):
        L.NeighborLoader(ds, [4], input_nodes=np.array([True, False, True]))
    with pytest.raises(gnnpipe.ConfigError, match="norm: 'sum' is not one of mean, gcn, none, self_loops"):
        L.NeighborLoader(ds, [4], norm="sum")
    with pytest.raises(gnnpipe.ConfigError, match="sampler.fanouts"):
        L.NeighborLoader(ds, [0])
    with pytest.raises(gnnpipe.ConfigError, match="dataset.path"):
        L.NeighborLoader("no-such-dataset", [4], data_dir=os.getcwd())
    for bad, match in (({"num_neighbors": "55"}, "num_neighbors: a list of integers expected"),
                       ({"num_neighbors": [2.7, 3]}, r"num_neighbors\[0\]: an integer in .* expected, got 2.7"),
                       ({"batch_size": 1.5}, "batch_size: an integer"),
                       ({"prefetch": 2**31}, "prefetch: an integer in"),
                       ({"memory_limit": -1}, r"memory_limit: an integer in \[0, "),
                       ({"memory_limit": "lots"}, "memory_limit: 'lots' is not a byte count")):
        args = {"num_neighbors": [4]} | bad
        with pytest.raises(gnnpipe.ConfigError, match=match):
            L.NeighborLoader(ds, args.pop("num_neighbors"), **args)
    tight = L.NeighborLoader(ds, [4, 3], batch_size=64, memory_limit="1KiB")
    with pytest.raises(gnnpipe.OutOfBudget, match="loader: batch 0 of epoch 1 takes .* beyond the memory limit of 1.00 KiB"):
        list(tight)


# --- training a PyG-style model with the loader (torch) ------------------------------------------

class SAGEConv(torch.nn.Module if torch is not None else object):
    """PyG's SAGEConv (mean aggregation, root weight): lin_l(mean_j x_j) + lin_r(x_i); the mean is
    the loader's edge weights (1 / in-degree). x·W first, then the narrow rows are aggregated."""

    def __init__(self, i, o):
        super().__init__()
        self.lin_l = torch.nn.Linear(i, o)
        self.lin_r = torch.nn.Linear(i, o, bias=False)

    def forward(self, x, x_target, adj):
        src, dst = adj.edge_index
        h = x @ self.lin_l.weight.t()
        # (index_select: its backward is an index_add, where h[src]'s is a slow accumulating index_put)
        messages = torch.index_select(h, 0, src) * adj.edge_weight.unsqueeze(1)
        agg = torch.zeros(adj.size[1], h.shape[1]).index_add_(0, dst, messages)
        return agg + self.lin_l.bias + self.lin_r(x_target)


def dropout(x, p, training):
    """F.dropout with a byte-resolution mask (p in steps of 1/256; 0.5 exactly): without MKL, torch's
    Bernoulli draw of Amazon's input rows costs eight times the layer's matrix product."""
    if not training or p == 0:
        return x
    keep = torch.randint(0, 256, x.shape, dtype=torch.uint8) >= int(round(p * 256))
    return x * keep / (1 - p)


class SAGE(torch.nn.Module if torch is not None else object):
    def __init__(self, i, hidden, o, layers, dropout):
        super().__init__()
        dims = [i] + [hidden] * (layers - 1) + [o]
        self.convs = torch.nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x, adjs):
        for l, (conv, adj) in enumerate(zip(self.convs, adjs)):
            x = dropout(x, self.dropout, self.training)
            x = conv(x, x[: adj.size[1]], adj)
            if l < len(self.convs) - 1:
                x = F.relu(x)
        return x


def torch_sage(data, fanouts, batch_size, epochs, seed, eval_every=1, hidden=64, lr=0.01, weight_decay=5e-4):
    """Trains SAGE with the loader; the test accuracy at the best validation epoch (full-neighbour
    evaluation every `eval_every` epochs, as gnnpipe run evaluates)."""
    torch.manual_seed(seed)
    train = L.NeighborLoader(data, fanouts, batch_size=batch_size, input_nodes="train", shuffle=True, seed=seed)
    full = {s: L.NeighborLoader(data, [-1] * len(fanouts), batch_size=4096, input_nodes=s) for s in ("val", "test")}
    model = SAGE(train.num_features, hidden, train.num_classes, len(fanouts), 0.5)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay)
    best_val, best_test = -1.0, 0.0
    for epoch in range(1, epochs + 1):
        model.train()
        for b in train:
            optimizer.zero_grad()
            F.cross_entropy(model(b.x, b.adjs)[: b.batch_size], b.y).backward()
            optimizer.step()
        if epoch % eval_every != 0 and epoch != epochs:
            continue
        model.eval()
        acc = {}
        with torch.no_grad():
            for split, loader in full.items():
                right = total = 0
                for b in loader:
                    right += int((model(b.x, b.adjs)[: b.batch_size].argmax(1) == b.y).sum())
                    total += b.batch_size
                acc[split] = right / total
        if acc["val"] > best_val:
            best_val, best_test = acc["val"], acc["test"]
    return best_test


# One seed's test accuracy moves by a point or two with the seed in either framework (Cora's 1,000
# test nodes; SAGE on Amazon's raw counts, whose early epochs are noisier still: PyG's own accuracy
# spreads by 11 pp over seeds, docs/BENCHMARKS.md). So the means of several seeds are compared:
# Cora ten seeds of 50 epochs within 1 point, Amazon two of 100 (evaluated every 5) within 2.5
# points: Amazon's two seeds spread by 2.5-3 points in each framework. On a 2-core AMD EPYC VM
# (2026-12-07) gnnpipe gave 0.862 and 0.886, torch 0.874 and 0.843: means 1.6 points apart. The
# build before, whose CI run (on another VM) had them within 1 point, computes the same here
# (checked: gnnpipe's parameters after 20 epochs bitwise, torch's accuracy after 10 epochs with
# either build's module). 4 to 14 minutes on 2-core VMs.
@pytest.mark.skipif(torch is None, reason="no torch (python3-torch)")
@pytest.mark.parametrize("name,config,data,batch,epochs,eval_every,seeds,tolerance", [
    ("cora", "cora_sage_neighbor.yaml", {"path": "cora", "normalize_features": "row"}, 64, 50, 1, tuple(range(10)),
     0.01),
    ("amazon", "amazon_computers_sage_neighbor.yaml", "amazon-computers", 1024, 100, 5, (0, 1), 0.025),
])
def test_a_torch_sage_trained_by_the_loader_matches_gnnpipe_run(tmp_path, name, config, data, batch, epochs, eval_every,
                                                                seeds, tolerance):
    if not os.path.isdir(os.path.join(DATA, data if isinstance(data, str) else data["path"])):
        pytest.skip(f"no {name} in {DATA}")
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ours, theirs = [], []
    for seed in seeds:
        run = gnnpipe.run(os.path.join(root, "configs", config), out=tmp_path / f"{name}-{seed}",
                          sets={"run.epochs": epochs, "run.seed": seed, "run.checkpoint_every": 0,
                                "pipeline.eval_every": eval_every})
        ours.append(run.summary["test_accuracy"])
        theirs.append(torch_sage(data, [15, 10], batch, epochs, seed, eval_every=eval_every))
    print(f"{name}: gnnpipe run {np.mean(ours):.4f} {np.round(ours, 4).tolist()}, "
          f"torch + gnnpipe.loader {np.mean(theirs):.4f} {np.round(theirs, 4).tolist()}")
    assert abs(np.mean(ours) - np.mean(theirs)) <= tolerance


def test_float32_features_are_read_in_place_and_kept_alive():
    import gc
    ds, *_ = graph()
    loader = L.NeighborLoader(ds, [2], batch_size=1000, input_nodes=np.array([5]))
    ds.arrays["x"][5] = 42.0  # the loader's dataset views the caller's float32 rows (no copy)
    assert np.all(arr(next(iter(loader)).x)[0] == 42.0)
    expected = graph()[2].copy()  # a fresh graph's rows (the same seed)
    inline = L.NeighborLoader(graph()[0], [2], batch_size=1000, input_nodes=np.array([5, 6]))
    gc.collect()  # the Dataset object is gone; the loader holds its arrays
    b = next(iter(inline))
    np.testing.assert_array_equal(arr(b.x), expected[arr(b.n_id)])


def test_the_loader_keeps_its_arrays_when_the_dataset_dict_changes():
    import gc
    ds, _, x, *_ = graph()
    loader = L.NeighborLoader(ds, [2], batch_size=1000, input_nodes=np.array([5]))
    ds.arrays["x"] = np.zeros((1, 1), np.float32)  # the Dataset's entry replaced: the loader keeps its own
    gc.collect()
    np.testing.assert_array_equal(arr(next(iter(loader)).x)[0], x[5])


def test_a_uint8_mask_over_every_node_selects_seeds_as_a_bool_mask_does():
    ds, *_, train = graph()
    as_bool = L.NeighborLoader(ds, [2], batch_size=1000, input_nodes=train)
    as_bytes = L.NeighborLoader(ds, [2], batch_size=1000, input_nodes=train.astype(np.uint8))
    assert sorted(arr(next(iter(as_bytes)).n_id)[:train.sum()]) == sorted(arr(next(iter(as_bool)).n_id)[:train.sum()])
    bad = train.astype(np.uint8)
    bad[3] = 2
    with pytest.raises(gnnpipe.DataError, match="input_nodes: a uint8 mask holds 2 at node 3"):
        L.NeighborLoader(ds, [2], input_nodes=bad)


def test_an_iterator_left_behind_by_a_newer_epoch_raises_instead_of_reading_its_batches():
    ds, *_ = graph()
    loader = L.NeighborLoader(ds, [2], batch_size=100, input_nodes="train")
    with pytest.raises(gnnpipe.Error, match="loader: epoch 1's iterator was left behind by epoch 2's"):
        for _ in zip(loader, loader):
            pass
    assert len(list(loader)) == 2  # (200 training nodes) a fresh iteration is whole
