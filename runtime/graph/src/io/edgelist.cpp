#include "gnnpipe/graph/io/edgelist.hpp"

#include <array>
#include <limits>
#include <vector>

#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/sniff.hpp"
#include "gnnpipe/graph/io/text_lines.hpp"

namespace gnnpipe::graph::io {

Dataset read_edgelist(const std::filesystem::path& path) {
  std::vector<NodeId> src, dst;
  NodeId max_id = -1;
  for_each_line(path, [&](std::string_view line, int64_t line_number) {
    std::size_t pos = line.find_first_not_of(" \t");
    if (pos == std::string_view::npos || line[pos] == '#' || line[pos] == '%') return;
    std::array<std::string_view, 2> ids;
    std::size_t found = 0;
    while (pos != std::string_view::npos && pos < line.size()) {
      const std::size_t end = line.find_first_of(" \t,", pos);
      GNNPIPE_CHECK_DATA(found < 2, "{}:{}: expected two node ids, found more fields in '{}'", path.string(),
                         line_number, printable(line));
      ids[found++] = line.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
      pos = end == std::string_view::npos ? end : line.find_first_not_of(" \t,", end);
    }
    GNNPIPE_CHECK_DATA(found == 2, "{}:{}: expected two node ids, got '{}'", path.string(), line_number,
                       printable(line));
    NodeId pair[2];
    for (int i = 0; i < 2; ++i) {
      const int64_t id = parse_int_field(ids[static_cast<std::size_t>(i)], path, line_number, "node id");
      GNNPIPE_CHECK_DATA(id >= 0 && id < std::numeric_limits<NodeId>::max(), "{}:{}: node id {} is outside [0, 2^31-1)",
                         path.string(), line_number, id);
      pair[i] = static_cast<NodeId>(id);
      max_id = std::max(max_id, pair[i]);
    }
    src.push_back(pair[0]);
    dst.push_back(pair[1]);
  });
  Dataset d;
  d.name = path.stem().string();
  d.graph = CsrGraph::from_coo(max_id + 1, src, dst);
  return d;
}

}  // namespace gnnpipe::graph::io
