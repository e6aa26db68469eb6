"""gnnpipe from Python (issue #43, docs/PYTHON.md).

run(), bench() and infer() run gnnpipe's commands in this process, with the same results and
files as the command line: a config is a dict or a YAML file's path; extra keys go in `sets`
({"run.epochs": 5}, as --set does). Errors raise ConfigError, DataError, OutOfBudget (all
subclasses of gnnpipe.Error) or Interrupted, carrying the command line's one-line messages. Log
lines go to logging.getLogger("gnnpipe"). Ctrl-C stops a run before its next step, writes its
stop checkpoint and raises Interrupted, as the command line does.
"""
import json
import numbers
import os
import pathlib
import re
import tempfile
from collections import namedtuple

from ._gnnpipe import ConfigError, DataError, Error, Interrupted, OutOfBudget
from ._gnnpipe import cli as _cli
from ._gnnpipe import cli_with_outputs as _cli_with_outputs

__all__ = ["run", "bench", "infer", "Dataset", "Result", "InferResult", "Error", "ConfigError", "DataError", "OutOfBudget",
           "Interrupted"]

class Result(namedtuple("Result", ["summary", "directory"])):
    """What a command left: its summary (summary.json or bench.json, as a dict) and its directory."""

    __slots__ = ()

    def arrays(self):
        """The .npy files the command wrote (infer: predictions, logits, embeddings_layerL), by name
        without the suffix, memory-mapped read-only: numpy reads the files' pages, nothing is copied."""
        import numpy as np
        return {p.stem: np.load(p, mmap_mode="r") for p in sorted(self.directory.glob("*.npy"))}


class Dataset:
    """A graph held in numpy arrays, for run(config, dataset=...): read as a .npz with the same
    names is (docs/CONFIG.md, dataset.keys), so the run trains what it trains from that file.

    edge_index: int [2, E] (row 0 the sources, PyG's layout) or [E, 2]; x: float [N, F] (float16,
    float32 or float64); y: int [N] (-1: unlabeled) or 0/1 [N, C] (multi-label); train, val, test:
    bool or uint8 masks [N], [N, S] or [S, N] (S splits; `split` picks one), or int node-id arrays.
    Arrays are read in place when C-contiguous and copied into the run's dataset; they may change
    or go once run() returns. The config's dataset options (normalize_features, feature_dtype,
    random_features) apply; its dataset.path is replaced by "python:<name>"."""

    def __init__(self, edge_index, x=None, y=None, train=None, val=None, test=None, *, split=0, name="arrays"):
        import numpy as np
        edge_index = np.asarray(edge_index)
        if edge_index.dtype == np.bool_:
            raise DataError("arrays:edge_index: node ids must be integers, not bool")
        if x is not None and np.ndim(x) == 2 and np.shape(x)[1] == 0:
            raise DataError("arrays:x: [N, 0]: no feature columns")
        self.arrays = {"edge_index": np.ascontiguousarray(edge_index)}
        for key, value in (("x", x), ("y", y), ("train_mask", train), ("val_mask", val), ("test_mask", test)):
            if value is not None:
                self.arrays[key] = np.ascontiguousarray(value)
        self.split = int(split)
        self.name = str(name)

    @classmethod
    def from_scipy(cls, adjacency, x=None, y=None, train=None, val=None, test=None, **kwargs):
        """A scipy.sparse adjacency: entry (i, j) is an edge i -> j (PyG's from_scipy_sparse_matrix)."""
        import numpy as np
        rows, cols = adjacency.shape
        if rows != cols:
            raise DataError(f"adjacency: a square [N, N] matrix expected, got [{rows}, {cols}]")
        if x is not None and np.shape(x)[0] != rows:
            raise DataError(f"adjacency: [{rows}, {rows}] for {np.shape(x)[0]} feature rows")
        coo = adjacency.tocoo()
        edge_index = np.vstack([coo.row.astype(np.int64), coo.col.astype(np.int64)])
        return cls(edge_index, x, y, train, val, test, **kwargs)


class _Config:
    """The config as a file the command line reads: the path given, or a dict written as JSON
    (which is YAML) into a temporary file, removed on exit."""

    def __init__(self, config):
        self._tmp = None
        if isinstance(config, (str, os.PathLike)):
            self.path = os.fspath(config)
        elif isinstance(config, dict):
            fd, self.path = tempfile.mkstemp(prefix="gnnpipe-config-", suffix=".yaml")
            with os.fdopen(fd, "w") as f:
                json.dump(config, f)
            self._tmp = self.path
        else:
            raise TypeError(f"config: a dict or a YAML file's path, not {type(config).__name__}")

    def __enter__(self):
        return self.path

    def __exit__(self, exc_type, exc, traceback):
        if self._tmp is None:
            return
        os.unlink(self._tmp)
        # An error about a dict config names the dict, not the temporary file that held it.
        if isinstance(exc, Error) and self._tmp in str(exc):
            raise type(exc)(str(exc).replace(f"{self._tmp}: ", "").replace(self._tmp, "the config dict")) from None


def _options(data_dir=None, sets=None, out=None):
    args = []
    if out is not None:
        args += ["--out", os.fspath(out)]
    if data_dir is not None:
        args += ["--data-dir", os.fspath(data_dir)]
    for key, value in (sets or {}).items():
        text = value if isinstance(value, str) else json.dumps(value)
        args += ["--set", f"{key}={text}"]
    return args


def _summary_dir(printed, out):
    """The directory the command wrote: `out`, or the one its last line names ("summary in ...")."""
    if out is not None:
        return pathlib.Path(out)
    found = re.findall(r"summary in (.+?summary\.json)\s*$", printed, re.M)
    if not found:
        raise Error(f"gnnpipe printed no summary path: {printed.strip()[-200:]}")
    return pathlib.Path(found[-1]).parent


def _load(path):
    with open(path) as f:
        return json.load(f)


def run(config, *, out=None, data_dir=None, sets=None, resume=None, ranks=None, dataset=None):
    """Trains `config` (gnnpipe run) and returns Result(summary, run directory).

    out: the run directory (default: the command line's, under runs/); data_dir: where relative
    dataset paths are found (default: $GNNPIPE_DATA_DIR, else the current directory); resume: a
    run directory to go on from (its checkpoints/last); ranks: train data-parallel as this many
    MPI ranks on this machine (mpirun runs them as child processes; docs/SCALE.md);
    dataset: a Dataset in memory instead of the config's dataset.path. One run per call: configs
    with run.seeds or sweep write several directories (use the command line)."""
    if ranks is not None:
        if isinstance(ranks, bool) or not isinstance(ranks, numbers.Integral) or not 1 <= ranks <= 4096:
            raise ConfigError(f"ranks: an integer from 1 to 4096, got {ranks!r}")
    if ranks is not None and int(ranks) > 1:
        if dataset is not None:
            raise ConfigError("ranks: a Dataset in memory is not shared with other processes; write it to a .npz")
        return _run_ranks(config, int(ranks), out=out, data_dir=data_dir, sets=sets, resume=resume)
    if dataset is not None:
        if not isinstance(dataset, Dataset):
            raise TypeError(f"dataset: a gnnpipe.Dataset, not {type(dataset).__name__}")
        sets = dict(sets or {}, **{"dataset.path": f"python:{dataset.name}"})
        if isinstance(config, dict):
            section = {k: v for k, v in config.get("dataset", {}).items() if k not in ("path", "synthetic")}
            config = dict(config, dataset=dict(section, path=f"python:{dataset.name}"))
    with _Config(config) as path:
        args = ["run", path] + _options(data_dir, sets, out)
        if resume is not None:
            args += ["--resume", os.fspath(resume)]
        if dataset is None:
            printed = _cli(args)
        else:
            # A dict of its own, held for the call: another thread replacing an entry of the
            # Dataset's dict cannot free rows the run reads in place.
            printed = _cli(args, dict(dataset.arrays), dataset.name, dataset.split)
    directory = pathlib.Path(resume) if resume is not None and out is None else _summary_dir(printed, out)
    return Result(_load(directory / "summary.json"), directory)


# Exit codes of _RANK_MAIN by error class (the program's, docs/DESIGN.md §5).
_EXIT_CLASSES = {2: ConfigError, 3: DataError, 4: OutOfBudget, 5: Interrupted}
_RANK_MAIN = """
import json, sys
import gnnpipe
from gnnpipe._gnnpipe import cli
try:
    cli(json.loads(sys.argv[1]))
except gnnpipe.Error as e:
    sys.stderr.write(f"gnnpipe: {e}\\n")
    codes = {cls: code for code, cls in gnnpipe._EXIT_CLASSES.items()}
    sys.exit(codes.get(type(e), 1))
"""


def _end_with_parent():
    """In mpirun's process before it starts: it gets SIGTERM when this interpreter ends (Linux's
    PR_SET_PDEATHSIG), so a killed caller leaves no job training on its own."""
    import ctypes
    import signal
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the job then outlives a killed caller, as before


def _stop_ranks(mpirun_pid):
    """SIGTERM to mpirun's children, the ranks: each stops before the same step, rank 0 writes
    its stop checkpoint, and the job ends with the Interrupted exit code."""
    import signal
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == mpirun_pid:
            try:
                os.kill(int(entry), signal.SIGTERM)
            except OSError:
                pass


def _run_ranks(config, ranks, *, out, data_dir, sets, resume):
    """run() as `ranks` MPI ranks: mpirun starts this interpreter that many times, each running the
    command line in-process (the module joins MPI when a launcher started it as ranks); rank 0
    writes the run directory, read back here."""
    import shutil
    import subprocess
    import sys
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise Error("ranks: no mpirun on PATH (Debian: openmpi-bin; tools/setup.sh)")
    if out is None and resume is None:
        out = tempfile.mkdtemp(prefix="gnnpipe-run-")  # every rank must name the same directory
    with _Config(config) as path:
        args = ["run", path] + _options(data_dir, sets, out)
        if resume is not None:
            args += ["--resume", os.fspath(resume)]
        command = [mpirun, "-np", str(ranks)]
        if os.geteuid() == 0:
            command.append("--allow-run-as-root")
        if ranks > (os.cpu_count() or 1):
            command.append("--oversubscribe")
        env = dict(os.environ)
        package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH", "")) if p)
        # mpirun in a session of its own: a Ctrl-C reaches this interpreter alone, which hands it on
        # to the ranks (a signal to mpirun makes it end the job before they record the stop).
        proc = subprocess.Popen(command + [sys.executable, "-c", _RANK_MAIN, json.dumps(args)], env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, preexec_fn=_end_with_parent)
        try:
            _, stderr = proc.communicate()
        except KeyboardInterrupt:
            _stop_ranks(proc.pid)
            _, stderr = proc.communicate()
    if proc.returncode != 0:
        lines = [line for line in stderr.splitlines() if line.startswith("gnnpipe: ")]
        # Rank 0's line first where there is one (it names the run's stop checkpoint).
        lines.sort(key=lambda line: re.match(r"gnnpipe: rank [1-9][0-9]* of ", line) is not None)
        message = lines[0][len("gnnpipe: "):] if lines else stderr.strip()[-500:]
        raise _EXIT_CLASSES.get(proc.returncode, Error)(message)
    directory = pathlib.Path(resume if out is None else out)
    return Result(_load(directory / "summary.json"), directory)


def bench(config, *, out=None, data_dir=None, sets=None):
    """The sequential baseline and the pipeline side by side (gnnpipe bench); returns
    Result(bench.json as a dict, its directory). out: default, a new temporary directory."""
    if out is None:
        out = tempfile.mkdtemp(prefix="gnnpipe-bench-")
    with _Config(config) as path:
        _cli(["bench", path] + _options(data_dir, sets, out))
    found = sorted(pathlib.Path(out).rglob("bench.json"))
    if not found:
        raise Error(f"gnnpipe bench wrote no bench.json under {out}")
    return Result(_load(found[0]), found[0].parent)


class InferResult(Result):
    """What infer() returns: Result(summary, directory), whose arrays() are the job's outputs in the
    module's memory (numpy arrays that own it; no copy, no file read), equal to the .npy files it
    wrote (predictions.npy and, when asked, logits.npy and embeddings_layerL.npy)."""

    def __new__(cls, summary, directory, arrays):
        self = super().__new__(cls, summary, directory)
        self._arrays = arrays
        return self

    def arrays(self):
        """The outputs by name without the suffix: the same arrays at every call."""
        return dict(self._arrays)


def infer(config, checkpoint, *, out=None, data_dir=None, sets=None, memory_limit=None, logits=False,
          embeddings=None):
    """Layer-wise inference with a checkpoint (gnnpipe infer); returns InferResult(summary,
    directory), its arrays() in memory (predictions.npy and, when asked, logits.npy and embeddings
    are in the directory too)."""
    with _Config(config) as path:
        args = ["infer", path, "--checkpoint", os.fspath(checkpoint)] + _options(data_dir, sets, out)
        if memory_limit is not None:
            args += ["--memory-limit", str(memory_limit)]
        if logits:
            args += ["--logits"]
        if embeddings is not None:
            args += ["--embeddings", str(int(embeddings))]
        printed, arrays = _cli_with_outputs(args)
    directory = _summary_dir(printed, out)
    return InferResult(_load(directory / "summary.json"), directory, arrays)
