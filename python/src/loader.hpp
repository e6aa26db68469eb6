#pragma once
// The loader's core (issue #43 item 4, docs/PYTHON.md): _gnnpipe.LoaderCore, which the package's
// gnnpipe.loader wraps with PyG's argument names and turns into torch tensors.
#include <pybind11/pybind11.h>

namespace gnnpipe::python {

void bind_loader(pybind11::module_& m);

}  // namespace gnnpipe::python
