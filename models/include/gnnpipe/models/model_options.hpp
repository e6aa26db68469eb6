#pragma once
// The `model:` section of an experiment (docs/DESIGN.md §5) as plain options with in-class defaults;
// experiments/ fills it from YAML. Names (to_string) are the YAML spellings.
#include <cstddef>
#include <optional>
#include <string_view>
#include <vector>

namespace gnnpipe::models {

enum class ModelType { kGcn, kSage, kGat, kGgnn, kGaan };
enum class Activation { kRelu, kElu, kLeakyRelu };

struct ModelOptions {
  ModelType type = ModelType::kSage;
  int layers = 2;                        // message-passing layers, >= 1
  int hidden = 256;                      // hidden width, >= 1
  // model.hidden: [256, 32]: each hidden layer's width (layers - 1 entries, each >= 1); empty: every
  // hidden layer is `hidden` wide. (`hidden` then holds the first entry.)
  std::vector<int> hidden_widths;
  double dropout = 0.5;                  // on layer inputs, in [0, 1)
  // model.input_dropout: the first layer's input (the features) instead, in [0, 1); unset: dropout.
  // OGB's GCN drops hidden layers' inputs only (input_dropout: 0).
  std::optional<double> input_dropout;
  Activation activation = Activation::kRelu;
  // Attention models only (gat, gaan):
  int heads = 8;                         // >= 1
  bool concat_heads = true;              // hidden layers concatenate heads (width hidden * heads) or average
  double attention_dropout = 0.0;        // on attention coefficients, in [0, 1) (gat)
  // GaAN only (the seed's d_a, d_v, d_m):
  int key_dim = 8;                       // attention key width per head
  int value_dim = 8;                     // value width per head
  int gate_dim = 64;                     // max-pooled gate features
  // model.embedding: > 0: the input is a learned embedding of every node, this wide (a
  // [nodes x embedding] parameter trained with the model, as torch.nn.Embedding), in place of the
  // dataset's features; 0: the features.
  int embedding = 0;

  bool operator==(const ModelOptions&) const = default;

  // The dropout probability of layer l's input.
  double dropout_at(std::size_t l) const { return l == 0 && input_dropout ? *input_dropout : dropout; }

  // The width of hidden layer l's output (0 <= l < layers - 1; per head for attention models).
  int hidden_width(int l) const {
    return hidden_widths.empty() ? hidden : hidden_widths[static_cast<std::size_t>(l)];
  }
};

// True for the models that read heads (gat and gaan).
constexpr bool has_attention(ModelType type) { return type == ModelType::kGat || type == ModelType::kGaan; }

constexpr std::string_view to_string(ModelType type) {
  switch (type) {
    case ModelType::kGcn: return "gcn";
    case ModelType::kSage: return "sage";
    case ModelType::kGat: return "gat";
    case ModelType::kGgnn: return "ggnn";
    case ModelType::kGaan: return "gaan";
  }
  return "?";
}

constexpr std::string_view to_string(Activation activation) {
  switch (activation) {
    case Activation::kRelu: return "relu";
    case Activation::kElu: return "elu";
    case Activation::kLeakyRelu: return "leaky_relu";
  }
  return "?";
}

}  // namespace gnnpipe::models
