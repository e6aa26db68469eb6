#pragma once
// The arrays a command hands to an in-process caller besides the files it writes (issue #43: the
// Python module gives them to numpy without a copy): `gnnpipe infer`'s predictions, logits and
// embeddings, by the names of their .npy files without the suffix, with the same shapes and values,
// in the order the files are written.
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace gnnpipe::experiments {

struct OutputArray {
  std::string name;
  std::vector<int64_t> shape;  // row-major
  std::variant<std::vector<int64_t>, std::vector<uint8_t>, std::vector<float>> values;
};

using CommandOutputs = std::vector<OutputArray>;

}  // namespace gnnpipe::experiments
