"""gnnpipe's samplers as data loaders for PyTorch / PyG training loops (issue #43 item 4,
docs/PYTHON.md).

NeighborLoader, ClusterLoader and SAINTRandomWalkLoader take PyG's argument names. Each epoch
(each `for batch in loader`) is sampled ahead of the loop by gnnpipe's sampler threads, which also
gather the batch's feature rows; the loop never waits for a batch that is ready. A batch is a
function of (seed, epoch, index): with shuffle=True and the same seed, the batches are the ones
`gnnpipe run` trains on with the same sampler section.

A batch has x (the input nodes' features), y (the targets' labels), n_id (the input nodes' global
ids: the targets are the first batch_size of them), batch_size, and adjs: one Adj per model layer,
input side first, in the layout of PyG's NeighborSampler (edge_index [2, E] with row 0 the source
positions in the layer's input and row 1 the target positions, destinations being the first
size[1] sources; edge_weight per `norm`, or None; size (sources, destinations)). A SAGEConv or
GCNConv layer l takes (x, x[:size[1]]) and adjs[l].edge_index. With torch installed the arrays are
torch tensors sharing the batch's memory (x, n_id and y are not copied); without it numpy arrays.
`device` moves them (pinned first, non-blocking, for a CUDA device).
"""
import json
import numbers
import os
from collections import namedtuple

from ._gnnpipe import ConfigError, Error
from ._gnnpipe import LoaderCore as _Core

try:
    import torch as _torch
except ImportError:  # numpy batches
    _torch = None

__all__ = ["NeighborLoader", "ClusterLoader", "SAINTRandomWalkLoader", "Batch", "Adj"]

Adj = namedtuple("Adj", ["edge_index", "edge_weight", "size"])


class Batch:
    """One sampled batch (see the module's docstring)."""

    def __init__(self, raw, device=None):
        convert = _tensor if _torch is not None else (lambda a, device=None: a)
        self.epoch, self.index, self.batch_size = raw["epoch"], raw["index"], raw["batch_size"]
        self.x = convert(raw["x"], device)
        self.y = None if raw["y"] is None else convert(raw["y"], device, long=True)
        self.n_id = convert(raw["n_id"], device, long=True)
        self.loss_rows = convert(raw["loss_rows"], device, long=True)
        self.loss_weights = None if raw["loss_weights"] is None else convert(raw["loss_weights"], device)
        self.adjs = [Adj(convert(e, device), None if w is None else convert(w, device), tuple(size))
                     for e, w, size in raw["adjs"]]

    def __repr__(self):
        return (f"Batch(epoch={self.epoch}, index={self.index}, batch_size={self.batch_size}, "
                f"x={tuple(self.x.shape)}, adjs={[a.size for a in self.adjs]})")


def _tensor(array, device=None, long=False):
    t = _torch.from_numpy(array)  # shares the batch's memory
    if long and t.dtype != _torch.int64:
        t = t.long()  # (ids and labels as torch indexes them)
    if device is not None and _torch.device(device).type == "cuda":
        t = t.pin_memory().to(device, non_blocking=True)
    elif device is not None:
        t = t.to(device)
    return t


def _dataset_section(data, data_dir):
    """The config's dataset section and the arrays (a gnnpipe.Dataset), from `data`: a dataset
    path (under data_dir, else $GNNPIPE_DATA_DIR), a dataset section as a dict, or a Dataset."""
    from . import Dataset
    if isinstance(data, Dataset):
        return {"path": f"python:{data.name}"}, data
    if isinstance(data, (str, os.PathLike)):
        return {"path": os.fspath(data)}, None
    if isinstance(data, dict):
        return dict(data), None
    raise TypeError(f"data: a dataset path, a dataset section (dict) or a gnnpipe.Dataset, not {type(data).__name__}")


class _Loader:
    def __init__(self, data, sampler, layers, *, input_nodes, shuffle, seed, norm, prefetch, memory_limit, device,
                 data_dir, epoch):
        section, arrays = _dataset_section(data, data_dir)
        config = {"name": "loader", "dataset": section, "model": {"type": "sage", "layers": _int("num_layers", layers)},
                  "sampler": sampler, "run": {"seed": _int("seed", seed, 0, 2**63 - 1)}}
        limit = 0
        if memory_limit is not None:
            limit = _bytes(memory_limit)
        if isinstance(input_nodes, _torch.Tensor if _torch is not None else ()):
            input_nodes = input_nodes.cpu().numpy()
        # A dict of its own: the loader keeps these arrays for its life whatever becomes of the
        # Dataset's dict (an entry replaced there would otherwise free rows being read in place).
        self._core = _Core(json.dumps(config), None if arrays is None else dict(arrays.arrays),
                           "arrays" if arrays is None else arrays.name, 0 if arrays is None else arrays.split,
                           "" if data_dir is None else os.fspath(data_dir), input_nodes, bool(shuffle), norm,
                           _int("prefetch", prefetch), limit)
        self.device = device
        self.epoch = int(epoch)  # the last epoch started; the next iteration starts epoch + 1

    @property
    def num_features(self):
        return self._core.num_features

    @property
    def num_classes(self):
        return self._core.num_classes

    def __len__(self):
        """The next epoch's batch count."""
        return self._core.batches(self.epoch + 1)

    def __iter__(self):
        # One epoch at a time: a new iteration starts the next epoch on the loader's one sampler
        # pipeline, so an iterator of an earlier epoch would read this one's batches; it raises.
        self.epoch += 1
        epoch = self.epoch
        self._core.start(epoch)
        while True:
            if self.epoch != epoch:
                raise Error(f"loader: epoch {epoch}'s iterator was left behind by epoch {self.epoch}'s (a loader "
                            "runs one iteration at a time; use a loader per concurrent iteration)")
            raw = self._core.next()
            if raw is None:
                return
            yield Batch(raw, self.device)


def _int(name, value, low=-(2**31), high=2**31 - 1):
    """An integer argument as the core takes it (a C int): a ConfigError naming it otherwise, not
    Python's or pybind's TypeError (num_neighbors=[2.7] is not [2])."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not low <= value <= high:
        raise ConfigError(f"{name}: an integer in [{low}, {high}] expected, got {value!r}")
    return int(value)


def _fanouts(num_neighbors):
    if isinstance(num_neighbors, (str, bytes)) or not hasattr(num_neighbors, "__iter__"):
        raise ConfigError(f"num_neighbors: a list of integers expected, got {num_neighbors!r}")
    return [_int(f"num_neighbors[{i}]", f) for i, f in enumerate(num_neighbors)]


def _bytes(limit):
    """memory_limit: bytes (an integer >= 0) or a text such as "64MiB"."""
    if isinstance(limit, numbers.Integral) and not isinstance(limit, bool):
        return _int("memory_limit", limit, 0, 2**63 - 1)
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "KB": 10**3, "MB": 10**6, "GB": 10**9, "B": 1}
    text = str(limit).strip()
    try:
        for unit, scale in units.items():
            if text.endswith(unit):
                value = float(text[: -len(unit)]) * scale
                break
        else:
            value = int(text)
    except ValueError:
        raise ConfigError(f"memory_limit: '{limit}' is not a byte count (bytes, or e.g. 64MiB)") from None
    return _int("memory_limit", int(value), 0, 2**63 - 1)


class NeighborLoader(_Loader):
    """PyG's NeighborLoader over gnnpipe's neighbor sampler: num_neighbors[l] in-neighbours per node
    at hop l from the seeds (-1: all), batch_size seeds per batch, input_nodes the seeds (None: every
    node; "train"/"val"/"test": the dataset's split; a bool mask or node ids), shuffled every epoch
    when shuffle. norm weights the edges (mean: 1/in-degree, gcn, none, self_loops)."""

    def __init__(self, data, num_neighbors, *, batch_size=1, input_nodes=None, shuffle=False, replace=False, seed=0,
                 norm="mean", prefetch=4, memory_limit=None, device=None, data_dir=None, epoch=0):
        sampler = {"type": "neighbor", "fanouts": _fanouts(num_neighbors), "batch_size": _int("batch_size", batch_size),
                   "replace": bool(replace)}
        super().__init__(data, sampler, len(sampler["fanouts"]), input_nodes=input_nodes, shuffle=shuffle, seed=seed,
                         norm=norm, prefetch=prefetch, memory_limit=memory_limit, device=device, data_dir=data_dir,
                         epoch=epoch)


class ClusterLoader(_Loader):
    """Cluster-GCN (PyG's ClusterData + ClusterLoader): the graph in num_parts METIS parts,
    batch_size parts a batch (shuffled every epoch), each batch the subgraph they induce; every one
    of `num_layers` adjs is its block. Loss targets: the batch's nodes among input_nodes (default
    "train"), at loss_rows."""

    def __init__(self, data, num_parts, *, batch_size=1, num_layers=2, input_nodes="train", seed=0, norm="gcn",
                 prefetch=4, memory_limit=None, device=None, data_dir=None, epoch=0):
        sampler = {"type": "cluster", "num_parts": _int("num_parts", num_parts),
                   "batch_size": _int("batch_size", batch_size)}
        super().__init__(data, sampler, num_layers, input_nodes=input_nodes, shuffle=True, seed=seed, norm=norm,
                         prefetch=prefetch, memory_limit=memory_limit, device=device, data_dir=data_dir, epoch=epoch)


class SAINTRandomWalkLoader(_Loader):
    """GraphSAINT's random-walk sampler (PyG's GraphSAINTRandomWalkSampler): batch_size roots,
    walks of walk_length, num_steps batches an epoch; loss_weights carry GraphSAINT's normalisation
    (from sample_coverage pre-sampled subgraphs) for the loss rows."""

    def __init__(self, data, batch_size, walk_length, *, num_steps=0, sample_coverage=50, num_layers=2,
                 input_nodes="train", seed=0, norm="gcn", prefetch=4, memory_limit=None, device=None, data_dir=None,
                 epoch=0):
        sampler = {"type": "saint_rw", "batch_size": _int("batch_size", batch_size),
                   "walk_length": _int("walk_length", walk_length), "steps_per_epoch": _int("num_steps", num_steps),
                   "norm_samples": _int("sample_coverage", sample_coverage)}
        super().__init__(data, sampler, num_layers, input_nodes=input_nodes, shuffle=True, seed=seed, norm=norm,
                         prefetch=prefetch, memory_limit=memory_limit, device=device, data_dir=data_dir, epoch=epoch)
