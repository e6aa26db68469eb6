"""The gnnpipe Python package (issue #43): runs, benches and inferences from dicts give what the
command line gives; a Dataset from numpy or scipy arrays trains what the same .npz trains (masks
[N, S] or [S, N], node-id splits); gnnpipe's errors are exception classes with its one-line
messages; a SIGINT stops a run with its stop checkpoint; log lines reach Python's logging.

Run by ctest (tests/CMakeLists.txt) with PYTHONPATH at the build's python/ folder, GNNPIPE_BIN at
the gnnpipe program and GNNPIPE_DATA_DIR at ../shared/datasets."""
import json
import logging
import os
import pathlib
import signal
import subprocess
import threading

import pytest

import gnnpipe

BIN = os.environ.get("GNNPIPE_BIN")
DATA = os.environ.get("GNNPIPE_DATA_DIR", "")
HAS_CORA = os.path.isdir(os.path.join(DATA, "cora"))

# A small synthetic experiment: needs no dataset.
SYNTH = {
    "name": "py_synth",
    "dataset": {"synthetic": {"nodes": 300, "avg_degree": 6, "features": 16, "classes": 3, "seed": 1}},
    "model": {"type": "gcn", "layers": 2, "hidden": 16, "dropout": 0.5},
    "sampler": {"type": "full"},
    "optimizer": {"type": "adam", "lr": 0.01},
    "run": {"epochs": 4, "seed": 2},
}


def cli_summary(tmp_path, config, name):
    """The same config through the gnnpipe program."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    out = tmp_path / f"{name}-cli"
    subprocess.run([BIN, "run", str(path), "--out", str(out), "-q"], check=True, capture_output=True)
    return json.loads((out / "summary.json").read_text())


@pytest.mark.skipif(not BIN, reason="GNNPIPE_BIN (the gnnpipe program) is not set")
def test_run_from_a_dict_equals_the_command_line(tmp_path):
    result = gnnpipe.run(SYNTH, out=tmp_path / "py")
    assert result.directory == tmp_path / "py"
    assert result.summary["status"] == "done"
    assert (result.directory / "metrics.csv").exists()
    cli = cli_summary(tmp_path, SYNTH, "synth")
    assert result.summary["params_checksum"] == cli["params_checksum"]
    assert result.summary["best_epoch"] == cli["best_epoch"]


def test_sets_override_keys_and_the_default_directory_is_found(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the default run directory is under ./runs
    result = gnnpipe.run(SYNTH, sets={"run.epochs": 2, "model.hidden": 8})
    assert result.directory.is_relative_to(pathlib.Path("runs")) or tmp_path in result.directory.resolve().parents
    assert result.summary["epochs"] == 2


def test_a_yaml_path_and_bench_and_infer(tmp_path):
    config = tmp_path / "synth.yaml"
    config.write_text(json.dumps(SYNTH))
    run = gnnpipe.run(config, out=tmp_path / "run")
    bench = gnnpipe.bench(SYNTH, out=tmp_path / "bench", sets={"run.epochs": 3})
    assert bench.summary["params_identical"] is True
    assert (bench.directory / "bench.json").exists()
    infer = gnnpipe.infer(config, run.directory / "checkpoints" / "best", out=tmp_path / "infer", logits=True)
    assert infer.summary["nodes"] == 300
    arrays = infer.arrays()
    assert sorted(arrays) == ["logits", "predictions"]
    assert arrays["logits"].shape == (300, 3) and arrays["predictions"].shape == (300,)
    assert (arrays["logits"].argmax(axis=1) == arrays["predictions"]).all()
    # The module's memory, not the files: arrays that own nothing themselves (a capsule holds the
    # job's buffer), the same buffer at every call, equal to what the files hold.
    np = __import__("numpy")
    for name, array in arrays.items():
        assert not isinstance(array, np.memmap) and not array.flags.owndata, name
        assert np.shares_memory(array, infer.arrays()[name]), name
        on_disk = np.load(infer.directory / f"{name}.npy")
        assert array.dtype == on_disk.dtype and array.shape == on_disk.shape, name
        assert np.array_equal(array, on_disk), name
    assert isinstance(infer, gnnpipe.InferResult) and isinstance(infer, gnnpipe.Result)
    with_embeddings = gnnpipe.infer(config, run.directory / "checkpoints" / "best", out=tmp_path / "infer-e",
                                    embeddings=0)
    embedded = with_embeddings.arrays()
    assert sorted(embedded) == ["embeddings_layer0", "predictions"]
    assert np.array_equal(embedded["embeddings_layer0"], np.load(with_embeddings.directory / "embeddings_layer0.npy"))
    assert np.array_equal(embedded["predictions"], arrays["predictions"])


def test_errors_are_exception_classes_with_one_line_messages(tmp_path):
    bad_key = dict(SYNTH, model={"type": "gcn", "layerz": 2})
    with pytest.raises(gnnpipe.ConfigError, match=r"model\.layerz: unknown key") as e:
        gnnpipe.run(bad_key, out=tmp_path / "a")
    assert "\n" not in str(e.value)
    assert isinstance(e.value, gnnpipe.Error)
    with pytest.raises(gnnpipe.OutOfBudget, match="memory.limit"):
        gnnpipe.run(SYNTH, out=tmp_path / "b", sets={"memory.limit": "4KiB"})
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "graph.npz").write_bytes(b"not a zip file")
    with pytest.raises(gnnpipe.DataError):
        gnnpipe.run(dict(SYNTH, dataset={"path": str(broken)}), out=tmp_path / "c")
    with pytest.raises(TypeError):
        gnnpipe.run(42)


def test_log_lines_reach_python_logging(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="gnnpipe"):
        gnnpipe.run(SYNTH, out=tmp_path / "log", sets={"run.epochs": 2})
    lines = [r.getMessage() for r in caplog.records if r.name == "gnnpipe"]
    assert any(line.startswith("epoch    2") for line in lines), lines[-5:]


def test_sigint_stops_a_run_with_its_stop_checkpoint(tmp_path):
    config = dict(SYNTH, run={"epochs": 100000, "seed": 2, "checkpoint_every": 1})
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(gnnpipe.Interrupted, match="--resume"):
            gnnpipe.run(config, out=tmp_path / "stopped")
    finally:
        timer.cancel()
    summary = json.loads((tmp_path / "stopped" / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert (tmp_path / "stopped" / "checkpoints" / "last").exists()
    # Python's own SIGINT handling is back after the call.
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.skipif(not HAS_CORA, reason="no cora in GNNPIPE_DATA_DIR")
def test_cora_from_a_dict():
    config = {"name": "py_cora", "dataset": {"path": "cora", "normalize_features": "row"},
              "model": {"type": "gcn", "layers": 2, "hidden": 16, "dropout": 0.5}, "sampler": {"type": "full"},
              "optimizer": {"type": "adam", "lr": 0.01, "weight_decay": 5e-4},
              "run": {"epochs": 30, "seed": 0, "checkpoint_every": 0}}
    import tempfile
    with tempfile.TemporaryDirectory() as out:
        result = gnnpipe.run(config, out=pathlib.Path(out) / "cora", data_dir=DATA)
        assert result.summary["test_accuracy"] > 0.6


def synthetic_arrays(seed=3, n=200, splits_as_rows=False):
    import numpy as np
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n, 1200)
    dst = rng.integers(0, n, 1200)
    edge_index = np.vstack([np.concatenate([src, dst]), np.concatenate([dst, src])]).astype(np.int64)
    y = rng.integers(0, 3, n).astype(np.int64)
    x = (rng.standard_normal((n, 12)) + y[:, None]).astype(np.float32)
    masks = np.zeros((3, 2, n), dtype=bool)  # (train, val, test) x 2 splits x nodes
    for s in range(2):
        order = rng.permutation(n)
        masks[0, s, order[:80]] = masks[1, s, order[80:120]] = masks[2, s, order[120:]] = True
    if not splits_as_rows:
        masks = np.ascontiguousarray(masks.transpose(0, 2, 1))  # [N, S], C order (as np.savez must write it)
    return edge_index, x, y, masks


MODEL = {"name": "py_arrays", "model": {"type": "gcn", "layers": 2, "hidden": 16, "dropout": 0.5},
         "sampler": {"type": "full"}, "optimizer": {"type": "adam", "lr": 0.01}, "run": {"epochs": 5, "seed": 1}}


def test_a_dataset_from_numpy_trains_what_the_same_npz_trains(tmp_path):
    import numpy as np
    edge_index, x, y, masks = synthetic_arrays()
    np.savez(tmp_path / "graph.npz", edge_index=edge_index, x=x, y=y, train_masks=masks[0], val_masks=masks[1],
             test_masks=masks[2])
    for split in (0, 1):
        from_file = gnnpipe.run(dict(MODEL, dataset={"path": str(tmp_path / "graph.npz"), "split": split}),
                                out=tmp_path / f"file{split}")
        ds = gnnpipe.Dataset(edge_index, x, y, masks[0], masks[1], masks[2], split=split, name="graph")
        from_arrays = gnnpipe.run(MODEL, dataset=ds, out=tmp_path / f"arrays{split}")
        assert from_arrays.summary["params_checksum"] == from_file.summary["params_checksum"]
        assert from_arrays.summary["dataset"] == from_file.summary["dataset"] == "graph"
    # Splits as rows ([S, N], tolokers.npz's layout) give the same runs.
    _, _, _, rows = synthetic_arrays(splits_as_rows=True)
    ds = gnnpipe.Dataset(edge_index, x, y, rows[0], rows[1], rows[2], split=1, name="graph")
    assert gnnpipe.run(MODEL, dataset=ds, out=tmp_path / "rows").summary["params_checksum"] == \
        from_file.summary["params_checksum"]


def test_a_dataset_from_scipy_and_node_id_splits(tmp_path):
    import numpy as np
    scipy_sparse = pytest.importorskip("scipy.sparse")
    edge_index, x, y, masks = synthetic_arrays()
    edge_index = np.unique(edge_index.T, axis=0).T  # distinct edges, as a sparse matrix holds them
    adjacency = scipy_sparse.csr_matrix((np.ones(edge_index.shape[1]), (edge_index[0], edge_index[1])), shape=(200, 200))
    ids = [np.flatnonzero(masks[k][:, 0]) for k in range(3)]
    from_scipy = gnnpipe.run(MODEL, dataset=gnnpipe.Dataset.from_scipy(adjacency, x, y, *ids), out=tmp_path / "sp")
    from_edges = gnnpipe.run(MODEL, dataset=gnnpipe.Dataset(edge_index, x, y, *ids), out=tmp_path / "ed")
    assert adjacency.nnz == edge_index.shape[1]
    assert from_scipy.summary["params_checksum"] == from_edges.summary["params_checksum"]


def test_bad_arrays_are_data_errors(tmp_path):
    import numpy as np
    edge_index, x, y, masks = synthetic_arrays()
    with pytest.raises(gnnpipe.DataError, match=r"arrays:edge_index: edge .* names a node beyond"):
        gnnpipe.run(MODEL, dataset=gnnpipe.Dataset(edge_index + 500, x, y, *masks), out=tmp_path / "a")
    with pytest.raises(gnnpipe.DataError, match="arrays:train_mask"):
        gnnpipe.run(MODEL, dataset=gnnpipe.Dataset(edge_index, x, y, masks[0][:10], masks[1], masks[2]),
                    out=tmp_path / "b")
    with pytest.raises(gnnpipe.DataError, match=r"arrays:x: unsupported dtype '<c8'"):
        gnnpipe.run(MODEL, dataset=gnnpipe.Dataset(edge_index, x.astype(np.complex64), y, *masks), out=tmp_path / "c")
    with pytest.raises(gnnpipe.DataError, match="arrays:edge_index: node ids must be integers, not bool"):
        gnnpipe.Dataset(edge_index.astype(bool), x, y, *masks)
    with pytest.raises(gnnpipe.DataError, match=r"arrays:x: \[N, 0\]: no feature columns"):
        gnnpipe.Dataset(edge_index, x[:, :0], y, *masks)
    wild = y.copy()
    wild[3] = 10**6  # one corrupt label would size the model by it
    with pytest.raises(gnnpipe.DataError, match="classes for 200 nodes .*a corrupt label"):
        gnnpipe.run(MODEL, dataset=gnnpipe.Dataset(edge_index, x, wild, *masks), out=tmp_path / "d")
    scipy_sparse = pytest.importorskip("scipy.sparse")
    with pytest.raises(gnnpipe.DataError, match=r"adjacency: a square \[N, N\] matrix expected, got \[200, 250\]"):
        gnnpipe.Dataset.from_scipy(scipy_sparse.csr_matrix((200, 250)), x, y, *masks)
    with pytest.raises(gnnpipe.DataError, match=r"adjacency: \[3, 3\] for 200 feature rows"):
        gnnpipe.Dataset.from_scipy(scipy_sparse.csr_matrix((3, 3)), x, y, *masks)


def test_none_in_a_config_and_bad_ranks_are_config_errors(tmp_path):
    with pytest.raises(gnnpipe.ConfigError, match="^run.epochs: expected an integer value, got null"):
        gnnpipe.run(dict(SYNTH, run={"epochs": None}), out=tmp_path / "a")  # (no temporary file named)
    with pytest.raises(gnnpipe.ConfigError, match="model: expected a mapping, got null"):
        gnnpipe.run(dict(SYNTH, model=None), out=tmp_path / "b")
    for ranks in (0, -3, 2.9, True, 5000):
        with pytest.raises(gnnpipe.ConfigError, match="ranks: an integer from 1 to 4096"):
            gnnpipe.run(SYNTH, out=tmp_path / "c", ranks=ranks)


@pytest.mark.skipif(__import__("shutil").which("mpirun") is None, reason="no mpirun (openmpi-bin)")
def test_ranks_train_what_one_process_trains(tmp_path):
    import csv
    one = gnnpipe.run(SYNTH, out=tmp_path / "one")
    two = gnnpipe.run(SYNTH, out=tmp_path / "two", ranks=2)
    assert two.summary["ranks"] == 2 and [r["rank"] for r in two.summary["rank_stages"]] == [0, 1]
    losses = [[float(r["loss"]) for r in csv.DictReader(open(d / "metrics.csv"))] for d in (one.directory, two.directory)]
    assert len(losses[0]) == len(losses[1]) == 4
    for a, b in zip(*losses):
        assert abs(a - b) <= 1e-5 * abs(a)
    with pytest.raises(gnnpipe.ConfigError, match=r"rank [01] of 2: .*model\.layerz: unknown key"):
        gnnpipe.run(dict(SYNTH, model={"type": "gcn", "layerz": 2}), out=tmp_path / "bad", ranks=2)
    with pytest.raises(gnnpipe.ConfigError, match="a Dataset in memory is not shared"):
        gnnpipe.run(SYNTH, ranks=2, dataset=gnnpipe.Dataset([[0], [1]]))
    # The program's --ranks re-runs the program: from Python it is refused, pointing at ranks=.
    with pytest.raises(gnnpipe.ConfigError, match=r"from Python use gnnpipe.run\(\.\.\., ranks=N\)"):
        gnnpipe._gnnpipe.cli(["run", str(tmp_path / "x.yaml"), "--ranks", "2"])
