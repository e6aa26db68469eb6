#include "gnnpipe/experiments/records/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "records/json_integer.hpp"
#include "gnnpipe/core/check.hpp"
#include "gnnpipe/graph/io/npy.hpp"

namespace gnnpipe::experiments {
namespace fs = std::filesystem;

fs::path epoch_checkpoint_dir(const fs::path& checkpoints, int epoch) {
  return checkpoints / fmt::format("epoch-{:06d}", epoch);
}

void keep_newest_epoch_checkpoints(const fs::path& checkpoints, int keep) {
  std::vector<std::pair<int, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(checkpoints, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory() || name.size() != 12 || !name.starts_with("epoch-")) continue;
    if (!std::all_of(name.begin() + 6, name.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) continue;
    found.emplace_back(std::stoi(name.substr(6)), entry.path());
  }
  GNNPIPE_CHECK(!ec, "cannot list '{}': {}", checkpoints.string(), ec.message());
  std::sort(found.begin(), found.end());
  const std::size_t kept = static_cast<std::size_t>(std::max(keep, 0));
  for (std::size_t i = 0; i + kept < found.size(); ++i) {
    fs::remove_all(found[i].second, ec);
    GNNPIPE_CHECK(!ec, "cannot remove '{}': {}", found[i].second.string(), ec.message());
  }
}

uint64_t fnv1a64(const void* bytes, std::size_t size) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = static_cast<const unsigned char*>(bytes);
  for (std::size_t i = 0; i < size; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

namespace {

constexpr const char* kFormat = "gnnpipe-checkpoint";

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Flushes a file's (or a directory's entries') data to the disk: without it a rename can reach
// the disk before the bytes it names, and a power cut leaves an empty file under the new name.
void sync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  GNNPIPE_CHECK(fd >= 0, "{}: cannot open to sync: {}", path.string(), std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  GNNPIPE_CHECK(rc == 0, "{}: fsync failed: {}", path.string(), std::strerror(err));
}

bool valid_name(const std::string& name) {
  if (name.empty() || name.front() == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

nlohmann::json write_arrays(const fs::path& root, const std::string& sub, const std::vector<CheckpointArray>& arrays) {
  nlohmann::json out = nlohmann::json::array();
  fs::create_directories(root / sub);
  for (const CheckpointArray& a : arrays) {
    GNNPIPE_CHECK(valid_name(a.name), "checkpoint array name '{}': use [A-Za-z0-9_.-], not starting with '.'", a.name);
    GNNPIPE_CHECK(!a.shape.empty(), "checkpoint array {}: needs a shape", a.name);
    const std::string file = sub + "/" + a.name + ".npy";
    graph::io::write_npy<float>(root / file, std::span<const float>(a.values), a.shape);
    sync_path(root / file);
    out.push_back({{"name", a.name},
                   {"file", file},
                   {"shape", a.shape},
                   {"dtype", "float32"},
                   {"fnv1a64", hex(fnv1a64(a.values.data(), a.values.size() * sizeof(float)))}});
  }
  sync_path(root / sub);
  return out;
}

// Replaces `dir` by `partial` in one step; afterwards `partial` holds the old checkpoint (or
// nothing), to be removed.
void swap_into_place(const fs::path& partial, const fs::path& dir) {
  if (!fs::exists(dir)) {
    GNNPIPE_CHECK(::rename(partial.c_str(), dir.c_str()) == 0, "{}: cannot rename into place: {}", dir.string(),
                  std::strerror(errno));
    return;
  }
  if (::renameat2(AT_FDCWD, partial.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) return;
  // A file system without RENAME_EXCHANGE: the old one aside, the new one in, in two renames
  // (a crash between them leaves `dir` missing and the old one as ".NAME.old").
  const fs::path old = dir.parent_path() / ("." + dir.filename().string() + ".old");
  fs::remove_all(old);
  GNNPIPE_CHECK(::rename(dir.c_str(), old.c_str()) == 0, "{}: cannot move aside: {}", dir.string(), std::strerror(errno));
  GNNPIPE_CHECK(::rename(partial.c_str(), dir.c_str()) == 0, "{}: cannot rename into place: {}", dir.string(),
                std::strerror(errno));
  fs::rename(old, partial);
}

// Where a .npy file's data starts: after the magic (6 bytes), the version (2), the header length
// (2 bytes in version 1, 4 in versions 2 and 3) and the header. read_npy has checked the prefix.
uint64_t npy_data_offset(const fs::path& file) {
  unsigned char prefix[12] = {};
  std::ifstream in(file, std::ios::binary);
  in.read(reinterpret_cast<char*>(prefix), sizeof prefix);
  GNNPIPE_CHECK_DATA(in.gcount() >= 10, "{}: too short for a .npy header", file.string());
  if (prefix[6] == 1) return 10 + (uint64_t{prefix[8]} | uint64_t{prefix[9]} << 8);
  GNNPIPE_CHECK_DATA(in.gcount() == 12, "{}: too short for a .npy header", file.string());
  return 12 + (uint64_t{prefix[8]} | uint64_t{prefix[9]} << 8 | uint64_t{prefix[10]} << 16 | uint64_t{prefix[11]} << 24);
}

std::vector<CheckpointArray> read_arrays(const fs::path& dir, const nlohmann::json& list, const std::string& key) {
  const std::string manifest = (dir / "manifest.json").string();
  GNNPIPE_CHECK_DATA(list.is_array(), "{}: {} is not a list of arrays", manifest, key);
  std::vector<CheckpointArray> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const JsonSection entry{list[i], manifest, fmt::format("{}[{}]", key, i)};
    CheckpointArray a;
    a.name = entry.string("name");
    GNNPIPE_CHECK_DATA(valid_name(a.name), "{}: name '{}' is not [A-Za-z0-9_.-] or starts with '.'", entry.what("name"),
                       a.name);
    const std::string rel = entry.string("file");
    GNNPIPE_CHECK_DATA(rel.find("..") == std::string::npos && !rel.empty() && rel.front() != '/',
                       "{}: array file '{}' is outside the checkpoint", manifest, rel);
    const fs::path file = dir / rel;
    a.shape = entry.integers<int64_t>("shape");
    const std::string dtype = entry.string("dtype");
    const std::string checksum = entry.string("fnv1a64");
    // (error_code: a name the system refuses, too long for one, reads as missing rather than throwing)
    std::error_code ec;
    GNNPIPE_CHECK_DATA(fs::is_regular_file(file, ec), "{}: missing (listed in {}){}", file.string(), manifest,
                       ec ? ": " + ec.message() : std::string());
    const graph::io::NpyArray npy = graph::io::read_npy(file);
    const std::string held = std::string(graph::io::dtype_label(npy.dtype));
    GNNPIPE_CHECK_DATA(dtype == held, "{}: the file holds {}, {} says dtype '{}'", file.string(), held, manifest, dtype);
    GNNPIPE_CHECK_DATA(npy.dtype == graph::io::DType::kFloat32, "{}: dtype {} (checkpoint arrays are float32)",
                       file.string(), held);
    GNNPIPE_CHECK_DATA(npy.shape == a.shape, "{}: shape differs from the manifest's", file.string());
    // read_npy ignores bytes after the data (as numpy does); a checkpoint's file is exactly its
    // header and data, so anything after them means the file is not the one written.
    const uint64_t size = fs::file_size(file, ec);
    const uint64_t expected = npy_data_offset(file) + npy.bytes;
    GNNPIPE_CHECK_DATA(!ec && size == expected, "{}: {} bytes after the array's data (the file has {}, its header and data {})",
                       file.string(), size - std::min(size, expected), size, expected);
    const auto* values = static_cast<const float*>(npy.data);
    a.values.resize(static_cast<std::size_t>(npy.count()));
    if (npy.bytes > 0) std::memcpy(a.values.data(), values, npy.bytes);
    const std::string sum = hex(fnv1a64(a.values.data(), a.values.size() * sizeof(float)));
    GNNPIPE_CHECK_DATA(sum == checksum, "{}: checksum {} differs from the manifest's {} (corrupted)", file.string(), sum,
                       checksum);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

static void write_checkpoint_unchecked(const fs::path& dir, const Checkpoint& c, const std::function<void()>& before_swap);
static void write_partial(const fs::path& partial, const Checkpoint& c);

void write_checkpoint(const fs::path& dir, const Checkpoint& c, const std::function<void()>& before_swap) {
  try {
    write_checkpoint_unchecked(dir, c, before_swap);
  } catch (const fs::filesystem_error& e) {
    GNNPIPE_THROW(Error, "{}: cannot write the checkpoint: {}", dir.string(), e.what());
  }
}

static void write_checkpoint_unchecked(const fs::path& dir, const Checkpoint& c, const std::function<void()>& before_swap) {
  GNNPIPE_CHECK(!dir.filename().empty() && dir.filename() != "." && dir.filename() != "..",
                "checkpoint directory '{}' needs a name", dir.string());
  const fs::path parent = dir.parent_path().empty() ? fs::path(".") : dir.parent_path();
  fs::create_directories(parent);
  const fs::path partial = parent / ("." + dir.filename().string() + ".partial");
  fs::remove_all(partial);  // a crashed write's leftovers
  fs::create_directory(partial);
  try {
    write_partial(partial, c);
  } catch (...) {
    // A failed write (a full disk, a quota) gives its space back and leaves the previous
    // checkpoint as it was.
    std::error_code ec;
    fs::remove_all(partial, ec);
    throw;
  }
  if (before_swap) before_swap();
  swap_into_place(partial, dir);
  sync_path(parent);
  fs::remove_all(partial);
}

static void write_partial(const fs::path& partial, const Checkpoint& c) {
  nlohmann::json m;
  m["format"] = kFormat;
  m["version"] = kCheckpointVersion;
  m["epoch"] = c.epoch;
  m["config_hash"] = c.config_hash;
  m["parameters"] = write_arrays(partial, "params", c.parameters);
  m["optimizer"] = {{"type", c.optimizer}, {"steps", c.optimizer_steps},
                    {"arrays", write_arrays(partial, "optimizer", c.optimizer_state)}};
  if (!c.augment.empty()) m["augment"] = write_arrays(partial, "augment", c.augment);
  m["run_state"] = c.run_state;
  {
    const fs::path file = partial / "manifest.json";
    std::ofstream out(file, std::ios::binary);
    out << m.dump(2) << '\n';
    out.close();
    GNNPIPE_CHECK(out.good(), "{}: write failed", file.string());
    sync_path(file);
  }
  sync_path(partial);
}

Checkpoint read_checkpoint(const fs::path& dir) {
  const fs::path manifest = dir / "manifest.json";
  std::error_code ec;
  GNNPIPE_CHECK_DATA(fs::is_directory(dir, ec), "{}: no checkpoint there (not a directory)", dir.string());
  GNNPIPE_CHECK_DATA(fs::is_regular_file(manifest, ec), "{}: missing", manifest.string());
  nlohmann::json m;
  {
    std::ifstream in(manifest, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    m = nlohmann::json::parse(text.str(), nullptr, false);
  }
  GNNPIPE_CHECK_DATA(!m.is_discarded() && m.is_object(), "{}: not a JSON object", manifest.string());
  const std::string file = manifest.string();
  const JsonSection top{m, file, ""};
  try {
    GNNPIPE_CHECK_DATA(top.string("format") == kFormat, "{}: format is not '{}'", file, kFormat);
    const auto version = top.integer<int64_t>("version");
    GNNPIPE_CHECK_DATA(version == kCheckpointVersion, "{}: version {} (this gnnpipe reads version {})", file, version,
                       kCheckpointVersion);
    Checkpoint c;
    c.epoch = top.integer<int>("epoch");
    GNNPIPE_CHECK_DATA(c.epoch >= 0, "{}: epoch {} is negative (the epochs a checkpoint completed)", file, c.epoch);
    c.config_hash = top.string("config_hash");
    c.parameters = read_arrays(dir, top.at("parameters"), "parameters");
    GNNPIPE_CHECK_DATA(!c.parameters.empty(), "{}: parameters lists no array", file);
    const JsonSection opt = top.section("optimizer");
    c.optimizer = opt.string("type");
    c.optimizer_steps = opt.integer<int64_t>("steps");
    GNNPIPE_CHECK_DATA(c.optimizer_steps >= 0, "{}: optimizer.steps {} is negative", file, c.optimizer_steps);
    c.optimizer_state = read_arrays(dir, opt.at("arrays"), "optimizer.arrays");
    if (m.contains("augment")) c.augment = read_arrays(dir, top.at("augment"), "augment");
    c.run_state = top.at("run_state");
    GNNPIPE_CHECK_DATA(c.run_state.is_object(), "{}: run_state is not an object", file);
    return c;
  } catch (const nlohmann::json::exception& e) {
    GNNPIPE_THROW(DataError, "{}: {}", file, e.what());
  }
}

}  // namespace gnnpipe::experiments
