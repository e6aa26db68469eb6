// The CPU dropout's forwards (dropout.hpp): feature dropout keyed by global node ids and GAT's
// edge dropout, both through RowDropper, which fuses the keep-bit draw with applying the mask.
#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>

#include "gnnpipe/models/ops/dropout.hpp"
#include "cpu/dropout_draw.hpp"
#include "cpu/dropout_simd.hpp"
#include "cpu/parallel.hpp"

namespace gnnpipe::models::cpu {
namespace {

using detail::apply;
using detail::draw;
using detail::Interleave;
using detail::iota;
using detail::nonzero_columns;
using detail::shift_bytes;
using detail::Streams;

// Draws and applies dropout row by row. Rows are queued (add) and their Philox blocks collected
// into one list of up to kCapacity blocks, drawn together so that short rows and edges use the
// vector path too; each row's mask bytes are then assembled from its blocks' bytes (a block gives
// draw.bytes_per_block() of them; consecutive rows of one stream share the block they meet in).
// The mask is applied to the elements one batch late: while batch k is drawn (arithmetic), batch
// k - 1's elements are applied in slices between groups of blocks (memory traffic), so the two
// overlap on one core; finish() draws and applies what is left. With `streaming`, outputs are
// written with streaming stores (large matrices: no read for ownership, no cache pollution). A
// long row is split into pieces of whole mask bytes. Without a mask (mask == nullptr: no backward
// will read it) a segment of a row that is mostly +0 (sparse features) draws only the blocks of
// its other elements, each applied on its own, and writes zeros elsewhere (the output is zero
// there, kept or not); denser segments go the usual way with their bits in a scratch buffer. One
// per task: it holds the lists (about 48 KiB, left uninitialised). Writes only the queued rows'
// outputs and mask bytes.
template <class T>
class RowDropper {
 public:
  // `one_stream`: the stream of every row (feature dropout), or nullopt when add() names each
  // row's (edge dropout).
  RowDropper(uint64_t seed, std::optional<uint64_t> one_stream, const DropoutDraw& draw, T scale, const T* x, T* y,
             uint8_t* mask, bool streaming)
      : seed_(seed),
        one_stream_(one_stream),
        draw_(draw),
        scale_(scale),
        x_(x),
        y_(y),
        mask_(mask),
        streaming_(streaming),
        every_(slice_every(draw)),
        slice_((kSlice << draw.byte_shift) / (8 / every_)) {}
  RowDropper(const RowDropper&) = delete;
  RowDropper& operator=(const RowDropper&) = delete;
  ~RowDropper() = default;

  // A row of `cols` elements at positions [first, first + cols) of its stream (`stream`, ignored
  // with one_stream): input x + offset, output y + offset, mask bytes from mask + mask_offset.
  void add(uint64_t stream, uint64_t first, int64_t cols, int64_t offset, int64_t mask_offset) {
    const int64_t row_bytes = dropout_mask_row_bytes(cols);
    if (mask_ != nullptr) {
      queue(stream, first, cols, offset, mask_offset, 0, row_bytes);
      return;
    }
    // Segments of whole mask bytes; sparse when at most a quarter of the elements are not +0.
    for (int64_t begin = 0; begin < cols; begin += kSegment) {
      const int64_t n = std::min(kSegment, cols - begin);
      const int64_t nonzero = nonzero_columns(x_ + offset + begin, n, n / 4, columns_.data());
      if (nonzero > n / 4) {
        queue(stream, first, cols, offset, 0, begin / 8, (begin + n + 7) / 8);
        continue;
      }
      if (y_ != x_) std::fill_n(y_ + offset + begin, n, T{0});  // in place, those elements are +0 already
      for (int64_t k = 0; k < nonzero; ++k) {
        const int64_t c = begin + columns_[static_cast<std::size_t>(k)];
        const uint64_t position = first + static_cast<uint64_t>(c);
        // Consecutive elements of one block share its draw.
        if (!last_block_is(stream, position >> (3 + draw_.byte_shift)) || singles_ == kCapacity) {
          if (blocks_ == kCapacity || singles_ == kCapacity) draw_batch();
          append_blocks(stream, position >> (3 + draw_.byte_shift), 1);
        }
        const auto lane = static_cast<uint32_t>(position & ((uint64_t{8} << draw_.byte_shift) - 1u));
        single_[static_cast<std::size_t>(singles_++)] = Single{offset + c, static_cast<int32_t>(blocks_ - 1), lane};
      }
    }
  }

  // Draws the queued rows and applies everything still pending.
  void finish() {
    draw_batch();
    apply_pending(std::numeric_limits<int64_t>::max());
#if GNNPIPE_DROPOUT_AVX2
    if (streaming_) _mm_sfence();  // order the streaming stores before the task ends
#endif
  }

 private:
  static constexpr int64_t kCapacity = 256;  // blocks per batch: 4,096 to 32,768 decisions
  static constexpr int64_t kBytes = kCapacity * 16;  // their mask bytes at most (one bit a decision)
  static constexpr int64_t kSlice = 512;  // elements applied per 64 blocks drawn, times bytes_per_block()
  static constexpr int64_t kMinSlice = 512;  // elements applied per step at least

  // Philox rounds between the apply's steps: eight steps per 64 blocks drawn, fewer where a step
  // would apply under kMinSlice elements (one or two bits a decision: eight steps of 1,024 or 512;
  // four bits: four of 512; eight bits: two of 512). Each step has a fixed cost (the pending pieces
  // walked, a call per piece), which at a step per 128 elements (the eight-bit draw's) took about a
  // tenth of the pass and bought no overlap (Cora's 2,708 x 1,433 at p = 0.3: 3.3-3.7 ms with
  // eight steps, 3.0-3.3 ms with two).
  static int slice_every(const DropoutDraw& draw) {
    const int64_t steps = std::clamp<int64_t>((kSlice << draw.byte_shift) / kMinSlice, 1, 8);  // a power of 2
    return static_cast<int>(8 / steps);
  }
  static constexpr int64_t kSegment = 2048;  // columns scanned at once without a mask (a multiple of 8)

  // An element of a sparse segment: its own bit of a drawn block's mask bytes.
  struct Single {
    int64_t offset;  // element (x, y)
    int32_t block;   // slot in index_
    uint32_t lane;   // bit of the block's mask bytes, < 8 * bytes_per_block()
  };

  struct Piece {
    int64_t offset;      // first element (x, y)
    uint8_t* mask;       // first mask byte (in the mask, or in scratch_ without one)
    int64_t elements;    // elements in the piece (8 * bytes, less at a row's end)
    int64_t first_byte;  // into bits_: the stream byte holding the piece's first element
    int64_t bytes;       // mask bytes
    unsigned shift;      // position of the piece's first element in that byte
  };

  // Whether the batch's last block is block `block` of `stream`.
  bool last_block_is(uint64_t stream, uint64_t block) const {
    const auto last = static_cast<std::size_t>(blocks_ - 1);
    return blocks_ > 0 && index_[last] == block && (one_stream_ || stream_[last] == stream);
  }

  void append_blocks(uint64_t stream, uint64_t first_block, int64_t n) {
    iota(index_.data() + blocks_, first_block, n);
    if (!one_stream_) std::fill_n(stream_.data() + blocks_, n, stream);
    blocks_ += n;
  }

  // Queues mask bytes [j_begin, j_end) of a row (see add), in pieces that fit the batches.
  void queue(uint64_t stream, uint64_t first, int64_t cols, int64_t offset, int64_t mask_offset, int64_t j_begin,
             int64_t j_end) {
    const auto shift = static_cast<unsigned>(first & 7u);
    const int64_t extra = shift != 0 ? 1 : 0;  // an unaligned mask byte straddles two stream bytes
    const uint64_t byte0 = first >> 3;          // mask byte j's elements start in stream byte byte0 + j
    const unsigned s = draw_.byte_shift;
    const uint64_t in_block = (uint64_t{1} << s) - 1u;
    for (int64_t j = j_begin; j < j_end;) {
      const uint64_t byte = byte0 + static_cast<uint64_t>(j);
      const uint64_t block = byte >> s;
      const bool reuse = last_block_is(stream, block);
      // Stream bytes the batch holds from `byte` on: to the end of its last free block.
      const int64_t room = ((kCapacity - blocks_ + (reuse ? 1 : 0)) << s) - static_cast<int64_t>(byte & in_block) - extra;
      const int64_t scratch_room = mask_ != nullptr ? kBytes : kBytes - scratch_used_;
      if (room < 1 || scratch_room < 1 || count_[current_] == kCapacity) {
        draw_batch();
        continue;
      }
      const int64_t bytes = std::min({j_end - j, room, scratch_room});
      const int64_t slot = reuse ? blocks_ - 1 : blocks_;
      const uint64_t last_block = (byte + static_cast<uint64_t>(bytes + extra) - 1u) >> s;
      uint8_t* m = mask_ != nullptr ? mask_ + mask_offset + j : scratch_[current_].data() + scratch_used_;
      pieces_[current_][static_cast<std::size_t>(count_[current_]++)] =
          Piece{offset + 8 * j, m, std::min(8 * bytes, cols - 8 * j),
                (slot << s) + static_cast<int64_t>(byte & in_block), bytes, shift};
      append_blocks(stream, reuse ? block + 1 : block, static_cast<int64_t>(last_block - block) + (reuse ? 0 : 1));
      if (mask_ == nullptr) scratch_used_ += bytes;
      j += bytes;
    }
  }

  // Draws the queued batch (applying the pending one in slices meanwhile), writes its mask bytes
  // and makes it the pending batch.
  void draw_batch() {
    const std::size_t now = current_;
    const Piece* pieces = pieces_[now].data();
    const Interleave interleave{[](void* self) {
                                  auto* d = static_cast<RowDropper*>(self);
                                  d->apply_pending(d->slice_);
                                },
                                this, every_};
    const Streams streams = one_stream_ ? Streams{&*one_stream_, true} : Streams{stream_.data(), false};
    draw(DrawPath::kFastest, seed_, streams, index_.data(), blocks_, draw_, bits_.data(), interleave);
    for (int64_t p = 0; p < count_[now]; ++p) {
      const Piece& piece = pieces[p];
      const uint8_t* b = bits_.data() + piece.first_byte;
      uint8_t* m = piece.mask;
      if (piece.shift == 0) {
        std::memcpy(m, b, static_cast<std::size_t>(piece.bytes));
      } else {
        shift_bytes(b, piece.bytes, piece.shift, m);
      }
      if (const int64_t tail = piece.elements & 7; tail != 0) m[piece.bytes - 1] &= static_cast<uint8_t>((1u << tail) - 1u);
    }
    for (int64_t k = 0; k < singles_; ++k) {
      const Single& e = single_[static_cast<std::size_t>(k)];
      const uint8_t byte = bits_[(static_cast<std::size_t>(e.block) << draw_.byte_shift) + (e.lane >> 3)];
      y_[e.offset] = (byte >> (e.lane & 7u)) & 1u ? x_[e.offset] * scale_ : T{0};
    }
    singles_ = 0;
    apply_pending(std::numeric_limits<int64_t>::max());  // what the draw left of the previous batch
    current_ ^= 1;                                         // the drawn batch becomes the pending one
    count_[current_] = 0;
    next_piece_ = 0;
    next_element_ = 0;
    blocks_ = 0;
    scratch_used_ = 0;
  }

  // Applies up to `budget` elements of the pending batch, in order, splitting a piece only at whole
  // mask bytes.
  void apply_pending(int64_t budget) {
    const std::size_t pending = current_ ^ 1;
    while (next_piece_ < count_[pending]) {
      const Piece& piece = pieces_[pending][static_cast<std::size_t>(next_piece_)];
      const int64_t left = piece.elements - next_element_;
      const int64_t n = budget >= left ? left : budget / 8 * 8;
      if (n == 0) return;
      apply(piece.mask + next_element_ / 8, x_ + piece.offset + next_element_,
            y_ + piece.offset + next_element_, n, scale_, streaming_);
      budget -= n;
      next_element_ += n;
      if (next_element_ == piece.elements) {
        ++next_piece_;
        next_element_ = 0;
      }
    }
  }

  uint64_t seed_;
  std::optional<uint64_t> one_stream_;
  DropoutDraw draw_;
  T scale_;
  const T* x_;
  T* y_;
  uint8_t* mask_;
  bool streaming_;
  int every_;       // Interleave::every of the batches' draws
  int64_t slice_;  // elements applied per Interleave step (8 / every_ steps per 64 blocks)
  std::array<uint64_t, kCapacity> index_;
  std::array<uint64_t, kCapacity> stream_;
  std::array<uint8_t, kBytes> bits_;
  std::array<std::array<Piece, kCapacity>, 2> pieces_;  // [current_]: being queued; the other: pending
  std::array<std::array<uint8_t, kBytes>, 2> scratch_;  // mask bytes of the batches without a mask
  std::array<int64_t, 2> count_{0, 0};
  int64_t scratch_used_ = 0;
  std::array<Single, kCapacity> single_;
  int64_t singles_ = 0;
  std::array<int32_t, kSegment / 4 + 1> columns_;  // a sparse segment's non-zero columns
  std::size_t current_ = 0;
  int64_t next_piece_ = 0;    // of the pending batch
  int64_t next_element_ = 0;  // within that piece
  int64_t blocks_ = 0;
};

// Streaming stores for outputs of at least this many bytes: above the caches (the dev machine's L3
// is 32 MiB), where the consumer reads y back from memory anyway, they save the read for
// ownership; below it, y stays in cache for the op that consumes it. Never in place (x's lines are
// in cache already).
constexpr int64_t kStreamingBytes = int64_t{64} << 20;

bool use_streaming_stores(const void* x, const void* y, int64_t bytes) {
  return x != y && bytes >= kStreamingBytes;
}

// p == 0: y = x and every mask bit of the row set (the padding bits stay 0).
void set_row_bits(uint8_t* mask_row, int64_t cols) {
  const int64_t full = cols / 8;
  std::memset(mask_row, 0xff, static_cast<std::size_t>(full));
  if (cols % 8 != 0) mask_row[full] = static_cast<uint8_t>((1u << (cols % 8)) - 1u);
}

// The global id of local row r (the identity numbering when `ids` is empty).
inline uint64_t global_id(std::span<const graph::NodeId> ids, int64_t r) {
  return ids.empty() ? static_cast<uint64_t>(r) : static_cast<uint64_t>(ids[static_cast<std::size_t>(r)]);
}

void check_row_ids(std::span<const graph::NodeId> ids, int64_t rows, const char* what) {
  GNNPIPE_CHECK(ids.empty() || static_cast<int64_t>(ids.size()) == rows, "{}: {} row ids for {} rows", what, ids.size(),
                rows);
  GNNPIPE_CHECK(std::none_of(ids.begin(), ids.end(), [](graph::NodeId id) { return id < 0; }), "{}: negative row id",
                what);
}

}  // namespace

template <class T>
void dropout_forward(core::RngKey key, std::type_identity_t<T> p, ConstView<T> x,
                     std::span<const graph::NodeId> row_ids, MatrixView<T> y, std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "dropout: p must be in [0, 1), got {}", p);
  GNNPIPE_CHECK(x.rows == y.rows && x.cols == y.cols, "dropout: input {} and output {} differ in shape",
                shape_str(x), shape_str(y));
  GNNPIPE_CHECK(mask.empty() || mask.size() == dropout_mask_bytes(x.rows, x.cols),
                "dropout: mask of {} bytes for x {} (needs {}, or none)", mask.size(), shape_str(x),
                dropout_mask_bytes(x.rows, x.cols));
  check_row_ids(row_ids, x.rows, "dropout");
  const int64_t cols = x.cols;
  const int64_t row_bytes = dropout_mask_row_bytes(cols);
  uint8_t* const mask_data = mask.empty() ? nullptr : mask.data();
  if (p == T{0}) {
    detail::parallel_rows(x.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
      if (mask_data != nullptr) {
        for (int64_t r = begin; r < end; ++r) set_row_bits(mask_data + r * row_bytes, cols);
      }
      if (y.data != x.data) std::copy(x.data + begin * cols, x.data + end * cols, y.data + begin * cols);
    });
    return;
  }
  const T scale = T{1} / (T{1} - p);
  const DropoutDraw draw = DropoutDraw::for_p(static_cast<double>(p));
  const bool streaming = use_streaming_stores(x.data, y.data, x.size() * static_cast<int64_t>(sizeof(T)));
  detail::parallel_rows(x.rows, detail::grain_for(cols), [&](int64_t begin, int64_t end) {
    RowDropper<T> dropper(key.seed, key.stream, draw, scale, x.data, y.data, mask_data, streaming);
    for (int64_t r = begin; r < end; ++r) {
      dropper.add(key.stream, global_id(row_ids, r) * static_cast<uint64_t>(cols), cols, r * cols, r * row_bytes);
    }
    dropper.finish();
  });
}

template <class T>
void edge_dropout_forward(core::RngKey key, std::type_identity_t<T> p, const graph::Block& block,
                          std::span<const graph::NodeId> row_ids, ConstView<T> alpha, MatrixView<T> y,
                          std::span<uint8_t> mask) {
  GNNPIPE_CHECK(p >= T{0} && p < T{1}, "edge_dropout: p must be in [0, 1), got {}", p);
  const int64_t heads = alpha.cols;
  check_shape(alpha, block.num_edges(), heads, "edge_dropout: alpha (E x H)");
  check_shape(y, block.num_edges(), heads, "edge_dropout: y (E x H)");
  GNNPIPE_CHECK(mask.size() == dropout_mask_bytes(alpha.rows, heads),
                "edge_dropout: mask of {} bytes for alpha {} (needs {})", mask.size(), shape_str(alpha),
                dropout_mask_bytes(alpha.rows, heads));
  check_row_ids(row_ids, block.num_src, "edge_dropout");
  const int64_t row_bytes = dropout_mask_row_bytes(heads);
  const int64_t avg = detail::edges_per_row(block.num_edges(), block.num_dst);
  if (p == T{0}) {
    detail::parallel_rows(block.num_dst, detail::grain_for(avg * heads), [&](int64_t begin, int64_t end) {
      const int64_t first = block.offsets[begin], last = block.offsets[end];
      for (int64_t e = first; e < last; ++e) set_row_bits(mask.data() + e * row_bytes, heads);
      if (y.data != alpha.data) std::copy(alpha.data + first * heads, alpha.data + last * heads, y.data + first * heads);
    });
    return;
  }
  const T scale = T{1} / (T{1} - p);
  const DropoutDraw draw = DropoutDraw::for_p(static_cast<double>(p));
  const bool streaming = use_streaming_stores(alpha.data, y.data, alpha.size() * static_cast<int64_t>(sizeof(T)));
  detail::parallel_rows(block.num_dst, detail::grain_for(4 * avg * heads), [&](int64_t begin, int64_t end) {
    RowDropper<T> dropper(key.seed, std::nullopt, draw, scale, alpha.data, y.data, mask.data(), streaming);
    for (int64_t v = begin; v < end; ++v) {
      const uint64_t stream = key.with(global_id(row_ids, v)).stream;
      for (int64_t e = block.offsets[v]; e < block.offsets[v + 1]; ++e) {
        dropper.add(stream, global_id(row_ids, block.indices[e]) * static_cast<uint64_t>(heads), heads, e * heads,
                    e * row_bytes);
      }
    }
    dropper.finish();
  });
}

template void dropout_forward<float>(core::RngKey, float, ConstView<float>, std::span<const graph::NodeId>,
                                     MatrixView<float>, std::span<uint8_t>);
template void dropout_forward<double>(core::RngKey, double, ConstView<double>, std::span<const graph::NodeId>,
                                      MatrixView<double>, std::span<uint8_t>);
template void edge_dropout_forward<float>(core::RngKey, float, const graph::Block&, std::span<const graph::NodeId>,
                                          ConstView<float>, MatrixView<float>, std::span<uint8_t>);
template void edge_dropout_forward<double>(core::RngKey, double, const graph::Block&, std::span<const graph::NodeId>,
                                           ConstView<double>, MatrixView<double>, std::span<uint8_t>);

}  // namespace gnnpipe::models::cpu
