#include "gnnpipe/pipeline/memory_report.hpp"

#include <fmt/format.h>

#include "gnnpipe/core/units.hpp"

namespace gnnpipe::pipeline {

std::string_view to_string(MemoryAction action) {
  switch (action) {
    case MemoryAction::kFit: return "fit";
    case MemoryAction::kSplit: return "split";
    case MemoryAction::kResample: return "resample";
    case MemoryAction::kCut: return "cut";
    case MemoryAction::kLayerwise: return "layerwise";
  }
  return "?";
}

void MemoryCounters::add(const MemoryCounters& o) {
  fit += o.fit;
  split += o.split;
  micro_batches += o.micro_batches;
  resampled += o.resampled;
  cut += o.cut;
  edges_cut += o.edges_cut;
  retried += o.retried;
  layerwise += o.layerwise;
  chunks += o.chunks;
  augment_reforwarded += o.augment_reforwarded;
  peak_bytes = std::max(peak_bytes, o.peak_bytes);
  reserved_bytes = std::max(reserved_bytes, o.reserved_bytes);
  seeds += o.seeds;
  edges += o.edges;
  stage_retries += o.stage_retries;
}

std::vector<std::string> MemoryPlan::lines() const {
  using core::format_bytes;
  std::vector<std::string> out;
  out.push_back(fmt::format("memory plan on {}: budget {} (memory.limit {} - reserve {}{}), policy {}", device,
                            format_bytes(budget), format_bytes(limit), format_bytes(reserve),
                            clamped ? fmt::format(", clamped to the {} free at start", format_bytes(free_at_start)) : "",
                            policy));
  out.push_back(fmt::format("  resident: parameters and gradients {}, optimizer state {}, evaluation twin {}, "
                            "library workspaces {}, other {}",
                            format_bytes(parameters), format_bytes(optimizer), format_bytes(eval_twin),
                            format_bytes(library), format_bytes(other)));
  out.push_back(fmt::format("  per batch: {} device slot{} ({} in all), evaluation arrays at most {}{}", device_slot_count,
                            device_slot_count == 1 ? "" : "s", format_bytes(device_slots), format_bytes(evaluation),
                            eval_whole ? std::string(" (over the kept full batch, one layer at a time)")
                            : eval_graph == 0 && eval_chunk_nodes > 0
                                ? fmt::format(" (layer-wise in chunks of {} nodes)", eval_chunk_nodes)
                                : std::string()));
  std::string action;
  if (counters.split + counters.cut + counters.resampled + counters.layerwise == 0) {
    action = fmt::format("all {} batches fit", batches);
  } else {
    action = fmt::format("{} of {} batches fit", counters.fit, batches);
    if (counters.split > 0) {
      action += fmt::format(", {} split ({} micro-batches, at most {} per batch)", counters.split, counters.micro_batches,
                            largest_split);
    }
    if (counters.resampled > 0) action += fmt::format(", {} resampled", counters.resampled);
    if (counters.cut > 0) action += fmt::format(", {} cut ({} edges removed)", counters.cut, counters.edges_cut);
    if (counters.layerwise > 0) {
      action += fmt::format(", {} layer-wise (strategy layerwise: at most {} chunks of {} rows a step, {} moved between "
                            "host and device a step; {}; layer 0's rows {})",
                            counters.layerwise, layerwise_chunks, layerwise_chunk_rows, format_bytes(layerwise_moved),
                            layerwise_outputs == "device"  ? "every hidden layer's outputs on the device"
                            : layerwise_outputs == "layer" ? "one layer's input rows and gradient on the device at a "
                                                             "time, the hidden outputs on the host"
                                                           : "every hidden layer's outputs on the host",
                            layerwise_inputs == "features" ? "read from the features on the device"
                            : layerwise_inputs == "device" ? "loaded onto the device once a step"
                                                           : "gathered on the host per chunk");
    }
  }
  out.push_back(fmt::format("  host: dataset {} (read once), staging slots at most {} ({} x the largest packed batch)",
                            format_bytes(host_dataset), format_bytes(host_staging), staging_slots));
  if (features == "cache") {
    out.push_back(fmt::format("  features: a cache of the {} most sampled rows on the device ({}, copied once; ranked by {}); "
                              "batches carry the rows it misses",
                              cache_rows, format_bytes(device_features), cache_rank));
  } else out.push_back(features == "device"
                    ? fmt::format("  features: on the device ({}, copied once); batches carry node ids, rows are gathered there",
                                  format_bytes(device_features))
                    : std::string("  features: on the host; each batch's rows are gathered into it and copied with it"));
  out.push_back(resident_batch ? "  placement: the batch is built, packed and copied once and stays on the device (pipeline.resident)"
                               : "  placement: every batch is sampled, gathered and copied each epoch");
  if (eval_graph > 0) {
    out.push_back(fmt::format("  evaluation: over the whole graph's block on the device ({}, copied once; pipeline.eval_graph)",
                              format_bytes(eval_graph)));
  } else if (eval_outputs_on_device) {
    out.push_back(fmt::format("  evaluation: layer-wise, every layer's outputs on the device (within the {} of evaluation's "
                              "arrays; pipeline.eval_graph): chunks carry blocks and ids, hidden rows are gathered there",
                              format_bytes(evaluation)));
  }
  out.push_back(fmt::format("  epoch 1: {}; predicted peak of the largest batch {} ({:.0f}% of the budget)", action,
                            format_bytes(largest_batch_peak),
                            budget > 0 ? 100.0 * static_cast<double>(largest_batch_peak) / static_cast<double>(budget) : 0.0));
  return out;
}

}  // namespace gnnpipe::pipeline
