#include "gnnpipe/experiments/commands/data_commands.hpp"
#include "gnnpipe/experiments/records/run_dir.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <ostream>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/timer.hpp"
#include "gnnpipe/experiments/config/dataset_section.hpp"
#include "gnnpipe/graph/dataset_options.hpp"
#include "gnnpipe/graph/io/load.hpp"
#include "gnnpipe/graph/io/native.hpp"
#include "gnnpipe/graph/random_features.hpp"
#include "gnnpipe/graph/summary.hpp"
#include "gnnpipe/graph/synthetic.hpp"

namespace gnnpipe::experiments {

int data_info(const DataInfoArgs& args, std::ostream& out) {
  GNNPIPE_CHECK_CONFIG(args.path.empty() != args.config.empty(), "data info takes a dataset PATH or --config FILE");
  if (!args.config.empty()) {
    const graph::DatasetOptions options = config::read_dataset_options(args.config);
    core::Stopwatch watch;
    const graph::Dataset dataset = graph::load_dataset(options, graph::resolve_data_dir(args.data_dir));
    const double load_s = watch.seconds();
    fmt::print(out, "source:     dataset section of {}\n", args.config);
    fmt::print(out, "{}", graph::format_summary(graph::summarize(dataset)));
    fmt::print(out, "loaded in:  {:.3f} s\n", load_s);
    return 0;
  }
  const auto format = graph::io::parse_dataset_format(args.format, "--format");
  core::Stopwatch watch;
  const graph::io::DatasetSource source =
      format == graph::io::DatasetFormat::kAuto ? graph::io::detect_dataset(args.path) : graph::io::DatasetSource{format, args.path, {}};
  const graph::Dataset dataset = graph::io::load_dataset(args.path, format);
  const double load_s = watch.seconds();
  fmt::print(out, "source:     {} ({})\n", source.path.string(), graph::io::to_string(source.format));
  fmt::print(out, "{}", graph::format_summary(graph::summarize(dataset)));
  fmt::print(out, "loaded in:  {:.3f} s\n", load_s);
  return 0;
}

int data_convert(const DataConvertArgs& args, std::ostream& out) {
  const auto format = graph::io::parse_dataset_format(args.from, "--from");
  const auto dtype = graph::parse_feature_dtype(args.feature_dtype, "--feature-dtype");
  GNNPIPE_CHECK_CONFIG(args.random_features >= 0, "--random-features must be >= 0, got {}", args.random_features);
  check_output_dir(args.out, "--out", args.force, "pass --force to write into it");
  core::Stopwatch watch;
  graph::Dataset dataset = graph::io::load_dataset(args.src, format);
  const double load_s = watch.seconds();
  if (args.random_features > 0) graph::add_random_features(dataset, args.random_features, args.seed);
  if (!dataset.features.empty() && dataset.features.dtype() != dtype) {
    dataset.features = dataset.features.converted(dtype, args.src + ": --feature-dtype " + graph::to_string(dtype));
  }
  watch.restart();
  graph::io::write_native(dataset, args.out);
  const double write_s = watch.seconds();
  fmt::print(out, "converted {} ({} nodes, {} edges, {} features) to {} in {:.3f} s (read {:.3f} s, write {:.3f} s)\n",
             dataset.name, dataset.num_nodes(), dataset.graph.num_edges(), dataset.features.cols(), args.out,
             load_s + write_s, load_s, write_s);
  return 0;
}

int data_synth(const DataSynthArgs& args, std::ostream& out) {
  graph::SyntheticOptions options;
  options.nodes = args.nodes;
  options.avg_degree = args.avg_degree;
  options.features = args.features;
  options.classes = args.classes;
  options.seed = args.seed;
  graph::validate(options);
  check_output_dir(args.out, "--out", args.force, "pass --force to write into it");
  core::Stopwatch watch;
  const graph::Dataset dataset = graph::make_synthetic(options);
  const double gen_s = watch.seconds();
  watch.restart();
  graph::io::write_native(dataset, args.out);
  fmt::print(out, "generated {} ({} nodes, {} edges, {} features, {} classes) in {:.2f} s; wrote {} in {:.2f} s\n",
             dataset.name, dataset.num_nodes(), dataset.graph.num_edges(), dataset.features.cols(),
             dataset.labels.num_classes, gen_s, args.out, watch.seconds());
  return 0;
}

}  // namespace gnnpipe::experiments
