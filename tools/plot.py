#!/usr/bin/python3
"""Draws the pictures of a gnnpipe run directory or bench directory as PNG files beside its data.

Usage:
    python3 tools/plot.py RUN_DIR [--epoch N]     # a directory written by `gnnpipe run ... --out RUN_DIR`
    python3 tools/plot.py BENCH_DIR [--epoch N]   # a directory written by `gnnpipe bench ... --out BENCH_DIR`

Needs matplotlib (Debian: python3-matplotlib, installed by tools/setup.sh). Run by another python3
that lacks it (one first on PATH), it runs itself again under Debian's /usr/bin/python3. Draws
with the non-interactive Agg backend; opens no window.

A run directory (metrics.csv, summary.json, trace.json with --trace) gets:
    curves.png    training loss and the train / val / test score (accuracy or F1) per epoch (metrics.csv), the best
                  epoch of summary.json marked;
    timeline.png  the stages of one epoch from trace.json: one lane per thread (the trace's thread
                  names), a box per stage item coloured by stage, time in ms from the epoch's first
                  event; items of neighbouring epochs in the same window are drawn faded. The epoch
                  is the last one metrics.csv completed, or --epoch N. Skipped with a note when
                  there is no trace.json;
    memory.png    device memory against the budget: per batch when the trace's items carry a byte
                  count (args "bytes"), else the peak per epoch (metrics.csv peak_device_bytes)
                  against summary.json's memory.budget_bytes (no line when no limit was set, or
                  when the budget is far above the peaks: then the budget is written in the plot).
A bench directory (bench.json, sequential/, pipelined/) gets:
    stages.png    sequential vs pipelined: busy seconds per epoch of each stage, and the epoch time
                  with the speedup, the ideal bound and the efficiency;
and each of sequential/ and pipelined/ gets the run-directory pictures above.

Prints each PNG written, one path per line, on stdout; notes (a skipped picture) go to stderr.
Exit codes: 0 drawn, 1 matplotlib cannot be imported, 2 usage error, not a run or bench directory,
or a file that cannot be read or parsed (one line naming the file).
"""

import argparse
import csv
import json
import math
import os
import sys

# Pipeline order of the stages: lanes and legends follow it; unknown stages come after, by name.
STAGE_ORDER = ["sample", "gather", "govern", "transfer", "train", "eval"]
STAGE_COLORS = {
    "sample": "#4C72B0",
    "gather": "#55A868",
    "govern": "#8172B2",
    "transfer": "#DD8452",
    "train": "#C44E52",
    "eval": "#937860",
}
EXTRA_COLORS = ["#DA8BC3", "#8C8C8C", "#CCB974", "#64B5CD"]
# Trace args that carry a batch's device bytes, in order of preference (none is written today).
BYTES_ARGS = ["bytes", "peak_bytes", "device_bytes", "peak_device_bytes"]
# A budget at or above this is "no limit".
UNLIMITED_BYTES = 1 << 60


class InputError(Exception):
    """A file or directory that cannot be plotted; the message names it."""


def note(message):
    print(f"plot.py: {message}", file=sys.stderr)


def stage_rank(stage):
    return (STAGE_ORDER.index(stage), "") if stage in STAGE_ORDER else (len(STAGE_ORDER), stage)


def stage_color(stage, extra):
    if stage in STAGE_COLORS:
        return STAGE_COLORS[stage]
    if stage not in extra:
        extra[stage] = EXTRA_COLORS[len(extra) % len(EXTRA_COLORS)]
    return extra[stage]


def to_float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def finite(x):
    return x is not None and not math.isnan(x) and not math.isinf(x)


# ---------------------------------------------------------------------------------------------
# Reading

def read_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not valid JSON: {e}") from None


def read_metrics(path):
    """metrics.csv as {column: [float per epoch]}, read by column name; 'epoch' is required."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise InputError(f"{path}: not a CSV file: {e}") from None
    if not rows or "epoch" not in rows[0]:
        raise InputError(f"{path}: no header with an 'epoch' column")
    header = rows[0]
    columns = {name: [] for name in header}
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(f"{path}: line {line} has {len(row)} fields, the header {len(header)}")
        for name, value in zip(header, row):
            columns[name].append(to_float(value))
    if any(not finite(e) for e in columns["epoch"]):
        raise InputError(f"{path}: an epoch that is not a number")
    return columns


def read_trace(path):
    """trace.json as (lane names {tid: name}, complete events [dict]) ."""
    trace = read_json(path)
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        raise InputError(f"{path}: no traceEvents list")
    lanes, items = {}, []
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            lanes[e.get("tid")] = str((e.get("args") or {}).get("name", e.get("tid")))
        elif e.get("ph") == "X":
            args = e.get("args") or {}
            ts, dur, epoch = to_float(e.get("ts")), to_float(e.get("dur")), to_float(args.get("epoch"))
            if not (finite(ts) and finite(dur) and finite(epoch)):
                continue
            items.append({"stage": str(e.get("name", "?")), "tid": e.get("tid"), "ts": ts, "dur": max(dur, 0.0),
                          "epoch": int(epoch), "batch": args.get("batch"), "args": args})
    return lanes, items


def load_run(run_dir, epoch):
    """A run directory's data, read and checked before anything is drawn; epoch: --epoch or None."""
    metrics_path = os.path.join(run_dir, "metrics.csv")
    summary_path = os.path.join(run_dir, "summary.json")
    trace_path = os.path.join(run_dir, "trace.json")
    run = {"dir": run_dir, "metrics": read_metrics(metrics_path), "summary": {}, "trace": None}
    if os.path.exists(summary_path):
        run["summary"] = read_json(summary_path)
        if not isinstance(run["summary"], dict):
            raise InputError(f"{summary_path}: not a JSON object")
    else:
        note(f"no summary.json in {run_dir} (run unfinished?): no best epoch or budget")
    if os.path.exists(trace_path):
        run["trace"] = read_trace(trace_path)
    run["name"] = run["summary"].get("name") or os.path.basename(os.path.normpath(run_dir))
    run["timeline_epoch"] = pick_epoch(run, epoch) if run["trace"] is not None else None
    return run


# ---------------------------------------------------------------------------------------------
# Formatting

def byte_unit(max_bytes):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if max_bytes >= scale:
            return unit, float(scale)
    return "B", 1.0


def fmt_bytes(n):
    unit, scale = byte_unit(n)
    return f"{n / scale:.1f} {unit}" if unit != "B" else f"{int(n)} B"


def run_title(run, what):
    s = run["summary"]
    parts = [run["name"]]
    if s.get("mode"):
        parts.append(str(s["mode"]))
    if s.get("sampler"):
        parts.append(f"{s['sampler']} sampler")
    if s.get("device"):
        parts.append(str(s["device"]))
    return f"{what}: " + ", ".join(parts)


def save(fig, path):
    fig.savefig(path, dpi=120)
    import matplotlib.pyplot as plt
    plt.close(fig)
    print(path)


# ---------------------------------------------------------------------------------------------
# Run-directory pictures

def plot_curves(plt, run):
    m = run["metrics"]
    epochs = m["epoch"]
    if not epochs:
        note(f"{run['dir']}/metrics.csv has no epochs yet: no curves")
        return
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(11, 4.2))

    def marker(xs):  # points marked while they are few enough to tell apart
        return "o" if len(xs) <= 40 else None

    def series(name):
        xs = [e for e, v in zip(epochs, m.get(name, [])) if finite(v)]
        ys = [v for v in m.get(name, []) if finite(v)]
        return xs, ys

    xs, ys = series("loss")
    if xs:
        ax_loss.plot(xs, ys, color="#C44E52", marker=marker(xs), markersize=3)
    else:
        ax_loss.text(0.5, 0.5, "no loss recorded", ha="center", va="center", transform=ax_loss.transAxes)
    ax_loss.set_title("training loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("loss")

    # The run's score: metrics.csv names its columns after it (train_acc for accuracy,
    # train_micro_f1, ... for a multi-label run), as summary.json's "metric" does.
    s = run["summary"]
    metric = s.get("metric", "accuracy") if isinstance(s.get("metric"), str) else "accuracy"
    column = "acc" if metric == "accuracy" else metric
    drawn = False
    for split, color in (("train", "#4C72B0"), ("val", "#DD8452"), ("test", "#55A868")):
        label = split
        xs, ys = series(f"{split}_{column}")
        if xs:
            ax_acc.plot(xs, ys, label=label, color=color, marker=marker(xs), markersize=3)
            drawn = True
    best = s.get("best_epoch")
    if isinstance(best, (int, float)) and best > 0:
        test = s.get(f"test_{metric}")
        label = f"best epoch {int(best)}"
        if isinstance(test, (int, float)) and finite(float(test)):
            label += f" (test {test:.4f})"
        ax_acc.axvline(best, color="0.4", linestyle="--", linewidth=1, label=label)
        drawn = True
    if drawn:
        ax_acc.legend(loc="best", fontsize=9)
    else:
        ax_acc.text(0.5, 0.5, "no evaluation yet", ha="center", va="center", transform=ax_acc.transAxes)
    ax_acc.set_title(metric)
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel(metric)
    for ax in (ax_loss, ax_acc):
        ax.grid(alpha=0.3)
        ax.xaxis.get_major_locator().set_params(integer=True)
    fig.suptitle(run_title(run, "curves"))
    fig.tight_layout()
    save(fig, os.path.join(run["dir"], "curves.png"))


def pick_epoch(run, requested):
    """The epoch to draw: requested, else the last one both metrics.csv and the trace have (the last in
    the trace when metrics.csv has none of them); None when the trace has no stage events."""
    lanes, items = run["trace"]
    in_trace = sorted({it["epoch"] for it in items if it["epoch"] >= 1})
    if requested is not None:
        if not in_trace:
            raise InputError(f"{run['dir']}/trace.json: no stage events, so no epoch {requested}")
        if requested not in in_trace:
            raise InputError(f"{run['dir']}/trace.json: no events of epoch {requested} "
                             f"(it has epochs {in_trace[0]}..{in_trace[-1]})")
        return requested
    if not in_trace:
        return None
    done = {int(e) for e in run["metrics"]["epoch"]}
    complete = [e for e in in_trace if e in done]
    return complete[-1] if complete else in_trace[-1]


def plot_timeline(plt, run):
    from matplotlib.patches import Patch
    if run["trace"] is None:
        note(f"no trace.json in {run['dir']} (run with --trace): no timeline")
        return
    lanes, items = run["trace"]
    epoch = run["timeline_epoch"]
    if epoch is None:
        note(f"{run['dir']}/trace.json has no stage events: no timeline")
        return
    mine = [it for it in items if it["epoch"] == epoch]
    t0 = min(it["ts"] for it in mine)
    t1 = max(it["ts"] + it["dur"] for it in mine)
    others = [it for it in items if it["epoch"] != epoch and it["ts"] < t1 and it["ts"] + it["dur"] > t0]

    # Lanes: every thread with an item in the window, ordered by the earliest pipeline stage it runs.
    shown = mine + others
    tids = {it["tid"] for it in shown}
    first_stage = {t: min(stage_rank(it["stage"]) for it in shown if it["tid"] == t) for t in tids}
    order = sorted(tids, key=lambda t: (first_stage[t], str(lanes.get(t, t))))
    row = {t: i for i, t in enumerate(order)}

    extra = {}
    height = 0.7
    span_ms = (t1 - t0) / 1000.0
    # Items of a few microseconds (govern, a transfer on the CPU) would be invisible at an epoch's
    # scale: every box is drawn at least min_w wide; boxes wide enough get white separators.
    min_w = 0.002 * span_ms
    fig_h = 1.9 + 0.55 * len(order)
    fig, ax = plt.subplots(figsize=(12, fig_h))
    busy = {}
    widened = False
    for faded, group in ((True, others), (False, mine)):
        by_lane_stage = {}
        for it in group:
            by_lane_stage.setdefault((it["tid"], it["stage"]), []).append(it)
            if not faded:
                busy[it["stage"]] = busy.get(it["stage"], 0.0) + it["dur"]
        for (tid, stage), its in by_lane_stage.items():
            narrow, wide = [], []
            for it in its:  # clip neighbours to the window
                a = (max(it["ts"], t0) - t0) / 1000.0
                w = (min(it["ts"] + it["dur"], t1) - t0) / 1000.0 - a
                if w < min_w:
                    widened = True
                (wide if w >= 5 * min_w else narrow).append((a, max(w, min_w)))
            for spans, edge in ((narrow, "none"), (wide, "none" if faded else "white")):
                if spans:
                    ax.broken_barh(spans, (row[tid] - height / 2, height), facecolors=stage_color(stage, extra),
                                   edgecolor=edge, linewidth=0.5, alpha=0.25 if faded else 1.0,
                                   zorder=1 if faded else 2)

    # Batch numbers inside the boxes that are wide enough to hold them.
    if len(mine) <= 400 and len({it["batch"] for it in mine if it["stage"] == "train"}) > 1:
        for it in mine:
            w = it["dur"] / 1000.0
            b = it["batch"]
            if isinstance(b, (int, float)) and b >= 0 and w >= 0.035 * span_ms:
                ax.text((it["ts"] - t0) / 1000.0 + w / 2, row[it["tid"]], str(int(b)), ha="center",
                        va="center", fontsize=7, color="white", zorder=3)

    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([lanes.get(t, f"thread {t}") for t in order])
    ax.set_ylim(len(order) - 0.5, -0.5)
    ax.set_xlim(0, span_ms)
    ax.set_xlabel(f"ms from the first event of epoch {epoch}")
    ax.grid(axis="x", alpha=0.3)
    stages = sorted(set(busy) | {it["stage"] for it in others}, key=stage_rank)
    handles = [Patch(facecolor=stage_color(s, extra), label=f"{s} ({busy.get(s, 0.0) / 1000.0:.1f} ms busy)")
               for s in stages]
    if others:
        handles.append(Patch(facecolor="0.6", alpha=0.25, label="other epochs' items (faded)"))
    legend_title = "stage (busy this epoch)" + ("\nnarrow items drawn wider" if widened else "")
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False,
              title=legend_title, title_fontsize=8)
    title = run_title(run, f"epoch {epoch} timeline")
    epoch_time = epoch_value(run, epoch, "epoch_time_s")
    if finite(epoch_time):
        title += f"; epoch time {epoch_time * 1000.0:.1f} ms"
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    save(fig, os.path.join(run["dir"], "timeline.png"))


def epoch_value(run, epoch, column):
    m = run["metrics"]
    for e, v in zip(m["epoch"], m.get(column, [])):
        if int(e) == epoch:
            return v
    return math.nan


def per_batch_bytes(run):
    """[(epoch, batch, bytes)] from trace items that carry a byte count, largest per batch; [] if none."""
    if run["trace"] is None:
        return []
    best = {}
    for it in run["trace"][1]:
        for key in BYTES_ARGS:
            v = to_float(it["args"].get(key))
            b = it["batch"]
            if finite(v) and isinstance(b, (int, float)) and b >= 0:
                k = (it["epoch"], int(b))
                best[k] = max(best.get(k, 0.0), v)
                break
    return sorted((e, b, v) for (e, b), v in best.items())


def plot_memory(plt, run):
    m = run["metrics"]
    mem = run["summary"].get("memory") or {}
    budget = to_float(mem.get("budget_bytes"))
    limit = to_float(mem.get("limit_bytes"))
    has_budget = finite(budget) and 0 < budget < UNLIMITED_BYTES
    batches = per_batch_bytes(run)
    if batches:
        values = [v for _, _, v in batches]
        xs = list(range(1, len(values) + 1))
        what = "device bytes per batch (trace)"
    else:
        if not m["epoch"]:
            note(f"{run['dir']}/metrics.csv has no epochs yet: no memory plot")
            return
        if "peak_device_bytes" not in m:
            note(f"{run['dir']}/metrics.csv has no peak_device_bytes column: no memory plot")
            return
        xs = [int(e) for e, v in zip(m["epoch"], m["peak_device_bytes"]) if finite(v)]
        values = [v for v in m["peak_device_bytes"] if finite(v)]
        if not values:
            note(f"{run['dir']}/metrics.csv has no peak_device_bytes values: no memory plot")
            return
        what = "peak device bytes per epoch (no per-batch record)"
    peak = max(values)
    # The budget is drawn to scale only when it is near the peaks; else it would flatten the bars.
    budget_on_scale = has_budget and budget <= 3.0 * peak
    unit, scale = byte_unit(max(peak, budget) if budget_on_scale else peak)

    fig, ax = plt.subplots(figsize=(10, 4.2))
    if batches:
        ax.plot(xs, [v / scale for v in values], color="#4C72B0", linewidth=1, marker="." if len(xs) <= 300 else None,
                label="batch peak")
        first = {}
        for i, (e, _, _) in enumerate(batches):
            first.setdefault(e, i + 1)
        for e, i in first.items():
            if i > 1:
                ax.axvline(i - 0.5, color="0.8", linewidth=0.8, zorder=0)
        ax.set_xlabel("batch (in training order; grey lines start epochs)")
    else:
        if len(xs) <= 60:
            bars = ax.bar(xs, [v / scale for v in values], color="#4C72B0", width=0.7, label="peak of the epoch")
        else:  # too many epochs for bars
            bars = []
            ax.fill_between(xs, [v / scale for v in values], step="mid", color="#4C72B0", alpha=0.8,
                            label="peak of the epoch")
        ax.set_xlabel("epoch")
        ax.xaxis.get_major_locator().set_params(integer=True)
        # What the governor did to the epoch's batches, when it did anything.
        if len(xs) <= 30:
            for bar, e in zip(bars, xs):
                words = []
                for column, word in (("batches_split", "split"), ("batches_cut", "cut"),
                                     ("batches_resampled", "resampled"), ("batches_retried", "retried")):
                    v = epoch_value(run, e, column)
                    if finite(v) and v > 0:
                        words.append(f"{int(v)} {word}")
                        micro = epoch_value(run, e, "micro_batches")
                        if word == "split" and finite(micro) and micro > 0:
                            words[-1] += f"\ninto {int(micro)} micro"
                if words:
                    ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height() * 0.5, "\n".join(words),
                            ha="center", va="center", fontsize=7, color="white", rotation=90 if len(xs) > 12 else 0)
    if budget_on_scale:
        ax.axhline(budget / scale, color="#C44E52", linestyle="--", linewidth=1.5, label=f"budget {fmt_bytes(budget)}")
        if finite(limit) and limit != budget and limit <= 3.0 * peak:
            ax.axhline(limit / scale, color="0.3", linestyle=":", linewidth=1.2,
                       label=f"memory.limit {fmt_bytes(limit)}")
        ax.set_ylim(0, max(peak, budget) / scale * 1.3)
    else:
        ax.set_ylim(0, peak / scale * 1.25)
        if has_budget:
            text = (f"budget {fmt_bytes(budget)} (off scale): "
                    f"peak {fmt_bytes(peak)} = {100.0 * peak / budget:.2g}% of it")
        else:
            text = "no memory.limit: no budget"
        ax.text(0.99, 0.97, text, transform=ax.transAxes, ha="right", va="top", fontsize=9,
                bbox={"facecolor": "white", "edgecolor": "0.7", "boxstyle": "round"})
    ax.set_ylabel(f"device memory ({unit})")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", fontsize=9, ncol=3)
    policy = mem.get("policy")
    title = run_title(run, "memory") + (f"; policy {policy}" if policy else "")
    ax.set_title(f"{title}\n{what}", fontsize=10)
    fig.tight_layout()
    save(fig, os.path.join(run["dir"], "memory.png"))


def plot_run(plt, run):
    plot_curves(plt, run)
    plot_timeline(plt, run)
    plot_memory(plt, run)


# ---------------------------------------------------------------------------------------------
# Bench-directory picture

def plot_bench(plt, bench_dir, bench):
    path = os.path.join(bench_dir, "bench.json")
    # "stage_busy_s_per_epoch" (older bench.json files: "stages")
    stages = None
    if isinstance(bench, dict):
        stages = bench.get("stage_busy_s_per_epoch", bench.get("stages"))
    if not isinstance(stages, dict) or not isinstance(stages.get("sequential"), dict) \
            or not isinstance(stages.get("pipelined"), dict):
        raise InputError(f"{path}: no stage_busy_s_per_epoch.sequential and .pipelined")
    seq, pip = stages["sequential"], stages["pipelined"]
    names = sorted(set(seq) | set(pip), key=stage_rank)
    fig, (ax_s, ax_e) = plt.subplots(1, 2, figsize=(12, 4.6), gridspec_kw={"width_ratios": [2.2, 1]})
    width = 0.38
    ys = range(len(names))
    vs = [1000.0 * to_float(seq.get(n)) for n in names]
    vp = [1000.0 * to_float(pip.get(n)) for n in names]
    b1 = ax_s.barh([y - width / 2 for y in ys], vs, height=width, color="#8C8C8C", label="sequential")
    b2 = ax_s.barh([y + width / 2 for y in ys], vp, height=width, color="#4C72B0", label="pipelined")
    top = max([v for v in vs + vp if finite(v)] or [1.0])
    for bars in (b1, b2):
        for bar in bars:
            w = bar.get_width()
            if finite(w):
                ax_s.text(w + top * 0.01, bar.get_y() + bar.get_height() / 2, f"{w:.1f}", va="center", fontsize=8)
    ax_s.set_yticks(list(ys))
    ax_s.set_yticklabels(names)
    ax_s.set_ylim(len(names) - 0.5, -0.5)
    ax_s.set_xlim(0, top * 1.15)
    ax_s.set_xlabel("busy ms per epoch")
    ax_s.set_title("stage busy time per epoch", fontsize=10)
    ax_s.grid(axis="x", alpha=0.3)
    ax_s.legend(loc="lower right", fontsize=9)

    base = to_float(bench.get("baseline_epoch_s")) * 1000.0
    pipe = to_float(bench.get("pipelined_epoch_s")) * 1000.0
    bars = ax_e.bar([0, 1], [base, pipe], color=["#8C8C8C", "#4C72B0"], width=0.6)
    for bar in bars:
        h = bar.get_height()
        if finite(h):
            ax_e.text(bar.get_x() + bar.get_width() / 2, h, f"{h:.1f} ms", ha="center", va="bottom", fontsize=9)
    ideal = to_float(bench.get("bound_speedup"))
    if finite(ideal) and ideal > 0 and finite(base):
        ax_e.axhline(base / ideal, color="#C44E52", linestyle="--", linewidth=1.2,
                     label=f"ideal bound {base / ideal:.1f} ms ({ideal:.2f}x)")
        ax_e.legend(loc="upper right", fontsize=8)
    ax_e.set_xticks([0, 1])
    ax_e.set_xticklabels(["sequential", "pipelined"])
    ax_e.set_ylabel("ms per epoch (run span / epochs)")
    ax_e.set_ylim(0, max([v for v in (base, pipe) if finite(v)] or [1.0]) * 1.25)
    ax_e.grid(axis="y", alpha=0.3)
    words = []
    for key, fmt in (("speedup", "speedup {:.2f}x"), ("efficiency", "efficiency {:.2f}")):
        v = to_float(bench.get(key))
        if finite(v):
            words.append(fmt.format(v))
    ax_e.set_title("epoch time" + (": " + ", ".join(words) if words else ""), fontsize=10)

    head = [str(bench.get("name", os.path.basename(os.path.normpath(bench_dir))))]
    for key, fmt in (("device", "{}"), ("batches_per_epoch", "{:.0f} batches/epoch"),
                     ("sampler_threads", "{} sampler threads"), ("staging_slots", "{} staging slots")):
        if bench.get(key) is not None:
            try:
                head.append(fmt.format(bench[key]))
            except (TypeError, ValueError):
                pass
    if bench.get("bound_bottleneck"):
        head.append(f"bottleneck: {bench['bound_bottleneck']}")
    fig.suptitle("bench, sequential vs pipelined: " + ", ".join(head), fontsize=11)
    fig.tight_layout()
    save(fig, os.path.join(bench_dir, "stages.png"))


# ---------------------------------------------------------------------------------------------

def main(argv):
    parser = argparse.ArgumentParser(
        prog="plot.py", description="Draw a gnnpipe run or bench directory's PNG pictures into it.")
    parser.add_argument("dir", metavar="RUN_DIR|BENCH_DIR")
    parser.add_argument("--epoch", type=int, default=None,
                        help="the epoch of timeline.png (default: the last complete one)")
    args = parser.parse_args(argv)
    d = args.dir
    try:
        if not os.path.isdir(d):
            raise InputError(f"{d}: not a directory")
        bench_path = os.path.join(d, "bench.json")
        if os.path.exists(bench_path):
            bench = read_json(bench_path)
            runs = [os.path.join(d, sub) for sub in ("sequential", "pipelined")
                    if os.path.exists(os.path.join(d, sub, "metrics.csv"))]
            loaded = [load_run(r, args.epoch) for r in runs]  # every input read before anything is drawn
            plt = import_pyplot()
            plot_bench(plt, d, bench)
            for run in loaded:
                plot_run(plt, run)
        elif os.path.exists(os.path.join(d, "metrics.csv")):
            run = load_run(d, args.epoch)
            plot_run(import_pyplot(), run)
        else:
            raise InputError(f"{d}: not a run directory (no metrics.csv) or bench directory (no bench.json)")
    except InputError as e:
        print(f"plot.py: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. a read-only run directory
        print(f"plot.py: {e.filename or d}: {e.strerror}", file=sys.stderr)
        return 2
    return 0


def import_pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        # Another python3 first on PATH (as on the project's machines): go on under Debian's, which
        # has python3-matplotlib (issue #43 item 5). Once: the re-run is marked in its environment.
        debian = "/usr/bin/python3"
        if os.environ.get("GNNPIPE_PLOT_REEXEC") is None and os.path.exists(debian) and \
                os.path.realpath(sys.executable) != os.path.realpath(debian):
            os.environ["GNNPIPE_PLOT_REEXEC"] = "1"
            sys.stdout.flush()
            os.execv(debian, [debian, os.path.abspath(__file__)] + sys.argv[1:])
        print(f"plot.py: {sys.executable} cannot import matplotlib ({e}): install python3-matplotlib "
              f"(bash tools/setup.sh) and run /usr/bin/python3 tools/plot.py", file=sys.stderr)
        sys.exit(1)
    return plt


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
