#pragma once
// NumpySource: numpy arrays by name as a graph::io::ArraySource (the module's datasets from memory).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <map>
#include <string>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/named_npz.hpp"

namespace gnnpipe::python {

namespace py = pybind11;

// numpy arrays by name as a graph::io::ArraySource: each array's buffer read in place (C order;
// the dataset copies what it keeps). Lives while the caller holds the arrays and the GIL.
class NumpySource final : public graph::io::ArraySource {
 public:
  explicit NumpySource(const py::dict& arrays) {
    for (const auto& [key, value] : arrays) {
      const auto name = py::cast<std::string>(key);
      const auto array = py::array::ensure(value);
      if (!array) throw py::type_error("dataset array '" + name + "' is not an array");
      GNNPIPE_CHECK_DATA((array.flags() & py::array::c_style) != 0, "arrays:{}: not C-contiguous", name);
      graph::io::NpyArray a;
      a.dtype = graph::io::parse_descr("arrays:" + name, py::cast<std::string>(array.dtype().attr("str")));
      for (py::ssize_t d = 0; d < array.ndim(); ++d) a.shape.push_back(static_cast<int64_t>(array.shape(d)));
      a.data = array.data();
      a.bytes = static_cast<std::size_t>(array.nbytes());
      arrays_.emplace(name, std::move(a));
      held_.push_back(array);  // the buffer stays valid while read
    }
  }
  std::string origin() const override { return "arrays"; }
  std::vector<std::string> names() const override {
    std::vector<std::string> out;
    for (const auto& [name, a] : arrays_) out.push_back(name);
    return out;
  }
  bool contains(const std::string& name) const override { return arrays_.contains(name); }
  graph::io::NpyArray read(const std::string& name) const override {
    const auto it = arrays_.find(name);
    GNNPIPE_CHECK_DATA(it != arrays_.end(), "arrays: no array '{}'", name);
    return it->second;
  }

 private:
  std::map<std::string, graph::io::NpyArray> arrays_;
  std::vector<py::array> held_;
};

}  // namespace gnnpipe::python
