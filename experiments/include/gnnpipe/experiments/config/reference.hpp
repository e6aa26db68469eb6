#pragma once
// The config reference (issue #16 item 8): every key of the schema (the tree that config.yaml and
// --set use) with its type, its default as the parser fills it in, what it means and which types
// read it, as Markdown. `gnnpipe config --reference` prints it; docs/CONFIG.md is that output,
// checked by a test. The descriptions are the rows of the key tables (src/config/key_table.hpp)
// and, for `name`, `sweep` and the sections, unread_key_docs; a key of the schema without one
// fails that test.
#include <string>
#include <vector>

namespace gnnpipe::experiments::config {

struct KeyDoc {
  std::string key;      // dotted path
  std::string type;     // "integer", "number", "string", "boolean", "list of integers", "bytes", ...
  std::string read_by;  // which types read it ("all", "sampler.type neighbor", ...)
  std::string meaning;
};

// The documented keys, in schema order (from the key tables).
const std::vector<KeyDoc>& key_docs();

// Every leaf and section key path of the schema, in its order.
std::vector<std::string> schema_keys();

// The Markdown reference: a table per section, defaults from the schema.
std::string config_reference();

}  // namespace gnnpipe::experiments::config
