// gnnpipe's Python module (_gnnpipe; issue #43, docs/PYTHON.md): the program's commands as
// functions. A call runs the command line in-process (experiments::run_cli_throwing) with the GIL
// released, so training threads run freely and Ctrl-C reaches the run's own SIGINT handler (the
// stop checkpoint); gnnpipe's errors become Python exceptions of the same names carrying the same
// one-line messages, and its log lines go to Python's `logging` (logger "gnnpipe") for the length
// of the call. The package (python/gnnpipe/__init__.py) builds the command lines from dicts.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include <spdlog/sinks/base_sink.h>

#include "gnnpipe/core/error.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/core/log.hpp"
#include "gnnpipe/graph/io/named_npz.hpp"
#include "gnnpipe/experiments/commands/cli.hpp"
#include "loader.hpp"
#include "numpy_source.hpp"

namespace py = pybind11;
using namespace gnnpipe;

using python::NumpySource;

namespace {

// Forwards each log line to logging.getLogger("gnnpipe") (taking the GIL: lines come from the
// run's threads while the calling thread waits without it).
// Made and destroyed with the GIL held (ForwardedLog, on the calling thread).
class PythonSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  PythonSink() : log_(py::module_::import("logging").attr("getLogger")("gnnpipe").attr("log")) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const std::string text(msg.payload.data(), msg.payload.size());
    const int level = msg.level >= spdlog::level::err ? 40 : msg.level == spdlog::level::warn ? 30
                      : msg.level == spdlog::level::info ? 20 : 10;
    py::gil_scoped_acquire gil;
    try {
      log_(level, text);
    } catch (const py::error_already_set&) {
      // A logging failure must not end the run; Python's own handler reports it.
    }
  }
  void flush_() override {}

 private:
  py::object log_;  // logging.getLogger("gnnpipe").log
};

// Forwards the log to Python for the length of one call (core::add_record_sink: every line at
// info and above, whatever the console's level, which the call sets to off: Python's logger
// replaces the console).
class ForwardedLog {
 public:
  ForwardedLog() : sink_(std::make_shared<PythonSink>()) { core::add_record_sink(sink_); }
  ~ForwardedLog() { core::remove_record_sink(sink_); }
  ForwardedLog(const ForwardedLog&) = delete;
  ForwardedLog& operator=(const ForwardedLog&) = delete;

 private:
  spdlog::sink_ptr sink_;
};

// A numpy array over `values`' memory, which the array then owns (a capsule holds the vector):
// the command's output reaches Python without a copy.
template <class T>
py::array owned_array(std::vector<T> values, const std::vector<int64_t>& shape) {
  auto* held = new std::vector<T>(std::move(values));
  const py::capsule owner(held, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  return py::array_t<T>(dims, held->data(), owner);
}

py::dict to_numpy(experiments::CommandOutputs outputs) {
  py::dict arrays;
  for (experiments::OutputArray& array : outputs) {
    arrays[py::str(array.name)] =
        std::visit([&](auto& values) { return owned_array(std::move(values), array.shape); }, array.values);
  }
  return arrays;
}

// Runs `gnnpipe ARGS...`; returns what it printed on standard output. `arrays` (not None): `run`'s
// dataset, from these named arrays (read as a named .npz is, graph/io/named_npz.hpp), called `name`,
// the masks' split `split`. `outputs` (not null): also given the arrays the command wrote.
std::string run_command(const std::vector<std::string>& args, const py::object& arrays, const std::string& name,
                        int64_t split, experiments::CommandOutputs* outputs) {
  std::vector<const char*> argv{"gnnpipe", "--log-level", "off"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  std::ostringstream out;
  experiments::DatasetSource dataset;
  if (!arrays.is_none()) {
    // Read now, with the GIL: the run calls the source on its own time, without it.
    graph::io::ArrayKeys keys;
    keys.split = split;
    auto read = std::make_shared<graph::Dataset>(
        graph::io::read_named_arrays(NumpySource(py::cast<py::dict>(arrays)), keys, name));
    dataset = [read] { return std::move(*read); };
  }
  const ForwardedLog log;
  {
    py::gil_scoped_release release;
    experiments::run_cli_throwing(static_cast<int>(argv.size()), argv.data(), out, dataset, outputs);
  }
  return out.str();
}

std::string cli(const std::vector<std::string>& args, const py::object& arrays, const std::string& name, int64_t split) {
  return run_command(args, arrays, name, split, nullptr);
}

// cli, returning (standard output, {name: numpy array}) with the arrays the command wrote as
// files (infer's predictions, logits, embeddings): the module's own memory, not the files.
py::tuple cli_with_outputs(const std::vector<std::string>& args) {
  experiments::CommandOutputs outputs;
  std::string printed = run_command(args, py::none(), "arrays", 0, &outputs);
  return py::make_tuple(std::move(printed), to_numpy(std::move(outputs)));
}

}  // namespace

PYBIND11_MODULE(_gnnpipe, m) {
  m.doc() = "gnnpipe's commands in-process (use the gnnpipe package, not this module)";
  python::bind_loader(m);
  m.def("cli", &cli, py::arg("args"), py::arg("arrays") = py::none(), py::arg("name") = "arrays",
        py::arg("split") = 0,
        "Runs `gnnpipe ARGS...` in this process and returns its standard output; raises gnnpipe's errors. "
        "arrays: a dict of named numpy arrays that `run` trains on instead of dataset.path.");
  m.def("cli_with_outputs", &cli_with_outputs, py::arg("args"),
        "As cli, returning (standard output, dict of numpy arrays): the arrays the command wrote as .npy files "
        "(infer), by name, in the module's memory.");
  // Base first: pybind11 tries the translators registered last first.
  static py::exception<core::Error> error(m, "Error");
  static py::exception<core::ConfigError> config_error(m, "ConfigError", error.ptr());
  static py::exception<core::DataError> data_error(m, "DataError", error.ptr());
  static py::exception<core::OutOfBudget> out_of_budget(m, "OutOfBudget", error.ptr());
  static py::exception<core::Interrupted> interrupted(m, "Interrupted", error.ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const core::ConfigError& e) {
      config_error(core::user_message(e).c_str());
    } catch (const core::DataError& e) {
      data_error(core::user_message(e).c_str());
    } catch (const core::OutOfBudget& e) {
      out_of_budget(core::user_message(e).c_str());
    } catch (const core::Interrupted& e) {
      interrupted(core::user_message(e).c_str());
    } catch (const core::Error& e) {
      error(core::user_message(e).c_str());
    }
  });
}
