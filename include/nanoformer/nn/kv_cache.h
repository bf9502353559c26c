#pragma once
// The key/value cache of a decoder: for every layer, the keys and values of the tokens seen so far,
// so that a new token attends to them without recomputing them.
//
// Storage: per layer, keys and values (max_batch, n_kv_heads, columns, head_dim), preallocated
// (zeros): only the KV heads (GQA/MQA keep H / Hkv times less than H heads would), keys stored
// after rotation (RoPE) and QK-norm, so a step rotates only its new tokens. Every row of a cache
// sits at the same position (one sequence, or beams of one sequence). Every layer's keys and values
// are a KVStorage (ops/kv_storage.h) of one row type, which the cache type (--cache-type, llama.cpp's
// -ctk / -ctv) says: f32 as computed (rows of the model's dtype: f32, or bf16, f16, f64 for a model
// computing in that), f16, bf16, q8_0 or q4_0 converted row by row as they are written (q8_0 is 34
// bytes per 32 values, 3.8 times less than f32; q4_0 18, 7.1 times less); attention reads the rows
// in place.
//
// A full-attention layer has max_len columns: column t holds position t. A sliding-window layer
// (window W: a query sees its W most recent keys, itself included) needs only its last W - 1 keys
// before a step, so when 2 W < max_len it holds 2 W columns and, when a step would not fit, first
// moves its last W - 1 columns to the front: a ring buffer unrolled once every W + 1 tokens, so its
// memory is O(W) and attention always reads its keys in order. Column t then holds position
// first_position + t.
//
// A forward of T new tokens (`begin`) writes them in place after each layer's filled columns and
// attends over them as a view (no reallocation, no copy of old entries); `commit` then advances.
// truncate(n) rolls back to the first n positions; reset() empties the cache; shift() drops tokens
// in the middle to continue past max_len (the model re-positions the kept keys: DecoderLM::shift_context).
//
// Paged (a shape with block_len > 0): the full-attention layers keep their keys and values in blocks
// of block_len positions (nn/kv_block.h), a list per batch row, instead of one array per layer;
// ring-buffered windowed layers stay contiguous and private. Blocks are shared by reference count:
// select_rows (beams) and copy_from (n choices) share their rows' blocks instead of copying them, and
// adopt() starts a sequence from blocks another computed (a shared prefix, serve/prefix_cache.h). A
// block that another holds is never written: begin() copies the block it writes into when it is
// shared (copy on write), truncate drops the blocks past the kept positions, and shift() copies the
// shared blocks it moves keys into. Attention reads a paged layer through its block table in the
// same order as a contiguous one (ops/kv_storage.h), so both give the same bits.
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "nanoformer/core/quant_type.h"
#include "nanoformer/core/tensor.h"
#include "nanoformer/nn/kv_block.h"
#include "nanoformer/ops/kv_storage.h"

namespace nf::nn {

struct KVCacheShape {
  int64_t n_layers = 0;
  int64_t max_batch = 1;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_len = 0;           // positions: the longest context the cache holds
  DType dtype = DType::f32;      // of the keys and values the model computes
  // How they are stored: f32 (as computed, rows of dtype), f16, bf16, q8_0 or q4_0 (those two: head_dim a
  // multiple of 32)
  QuantType cache_type = QuantType::f32;
  std::vector<int64_t> windows{};  // per layer: the sliding window W, 0 = full attention; empty = all full
  int64_t block_len = 0;           // positions per block of a paged cache; 0: every layer contiguous
};

// A cache type by its name, as --cache-type takes it: f32, f16, bf16, q8_0 or q4_0 (an nf::Error naming
// the flag and the names otherwise).
QuantType kv_cache_type_from_name(std::string_view name);

// One layer's storage: keys and values (max_batch, n_kv_heads, columns, head_dim), rows of one type.
struct LayerKV {
  KVStorage keys, values;
};

// What every layer of one cached forward shares: T new tokens for the cache's first `batch` rows,
// the first of them at `position`.
struct KVCacheStep {
  int64_t batch = 0, new_tokens = 0;
  int64_t position = 0;
  std::vector<int64_t> columns;  // per layer: the new tokens go to columns columns[i] .. + new_tokens - 1
};

// A layer's part of a cached forward: its storage, where the step's tokens go, and the step.
// Column 0 sits at position step->position - column.
struct CachedAttention {
  LayerKV kv;
  int64_t column = 0;
  const KVCacheStep* step = nullptr;
};

class KVCache {
 public:
  explicit KVCache(const KVCacheShape& shape);

  const KVCacheShape& shape() const { return shape_; }
  int64_t length() const { return position_; }  // positions filled: the next token's position
  int64_t batch() const { return batch_; }       // rows in use (0 when empty)
  // The most new tokens one forward may take: max_len, or less with ring-buffered windowed layers.
  int64_t max_step() const;
  // Layer i's storage (of a paged layer: its block table as of the last forward's begin()).
  const LayerKV& layer(int64_t i) const;
  int64_t bytes() const;  // of the storage, in its type (it grows with the positions filled); each block once

  // Paging. Whether adopt() and full_blocks() apply: paged, and every layer in blocks (no ring).
  bool shares_prefixes() const;
  // Row r's blocks (paged): position t of the row is in block t / block_len.
  const std::vector<KVBlockRef>& blocks(int64_t row) const;
  // The bytes of the contiguous layers' storage (all of it unless paged).
  int64_t contiguous_bytes() const;
  // The blocks that row 0's filled positions fill whole: positions 0 .. n block_len - 1 (shares_prefixes).
  std::vector<KVBlockRef> full_blocks() const;
  // Forgets what it holds and becomes one row holding `blocks`' positions (shares_prefixes; blocks of
  // this cache's layout): blocks.size() x block_len positions another cache computed for these
  // tokens, now shared. The next forward writes into a block of its own.
  void adopt(const std::vector<KVBlockRef>& blocks);

  // Checks that `new_tokens` more tokens for `batch` rows fit (naming the numbers when not), makes
  // room in the ring-buffered layers, and describes that forward; `commit` records it once every
  // layer has written its columns. `at(i, step)` is layer i's part of it.
  KVCacheStep begin(int64_t batch, int64_t new_tokens);
  // The checks of begin() but the step size: that batch rows can take new_tokens more positions.
  void check_room(int64_t batch, int64_t new_tokens) const;
  CachedAttention at(int64_t layer, const KVCacheStep& step) const;
  void commit(const KVCacheStep& step);

  // Whether truncate(n) can keep n positions: a windowed layer must still hold the keys that the
  // next token's window reaches.
  bool can_truncate(int64_t n) const;
  void truncate(int64_t n);
  void reset();
  // Drops positions keep .. keep + discard - 1 from every layer: the later columns move down by
  // `discard` (their keys still rotated for their old positions: the caller re-positions them, see
  // rotate_fn) and the cache holds length() - discard positions. False, changing nothing, when a
  // windowed layer would then lack keys its window needs (the caller re-encodes instead).
  // reposition(keys, delta) returns the moved keys (B, Hkv, n, D) re-positioned by delta (RoPE
  // rotates them; schemes whose keys carry no position return them as they are).
  using Reposition = std::function<Tensor(const Tensor& keys, int64_t delta)>;
  bool shift(int64_t keep, int64_t discard, const Reposition& reposition);
  // Row r becomes what row rows[r] held, for every layer (beam search: each beam continues from
  // its parent): the cache then holds rows.size() rows. A gather of the filled columns.
  void select_rows(const std::vector<int64_t>& rows);
  // Becomes what `other` holds (a cache of the same shape): its filled columns copied, its length
  // and rows (n choices of one prompt start from the cache of the first one's prefill).
  void copy_from(const KVCache& other);

  // What a model carries from one step to the next besides keys and values, per row (nanochat's
  // smear: the last token's embedding, (batch, 1, dim)); undefined until a model sets it. reset()
  // clears it, can_truncate() refuses to drop positions while it is set (the caller re-encodes),
  // select_rows() gathers it, shift() keeps it (the last token stays).
  const Tensor& carried() const { return carried_; }
  void set_carried(Tensor value) { carried_ = std::move(value); }

 private:
  struct Layer {
    LayerKV kv;
    int64_t slot = -1;     // paged: its place in a block (-1: contiguous)
    int64_t window = 0;    // 0 = full
    int64_t capacity = 0;  // the columns it may grow to: max_len, or 2 W for a ring-buffered window
    int64_t columns = 0;   // of the storage now (grown by doubling as positions are filled)
    int64_t length = 0;    // columns filled; column 0 holds position position_ - length
  };
  // Layer l's storage made at least `needed` columns wide (doubling, at most its capacity), its
  // filled columns kept.
  void grow(Layer& l, int64_t needed) const;
  // Whether layer l, holding positions up to `position` (exclusive) from `first` on, still has
  // every key the window of the token at `position` reaches.
  static bool reaches(const Layer& l, int64_t first, int64_t position);
  bool paged() const { return shape_.block_len > 0; }
  KVBlockRef new_block() const;
  // Row b's blocks from block `from` on: each that another holds replaced by a copy of its own;
  // whether any was.
  bool make_private(int64_t b, int64_t from);
  // Row b's blocks made to cover `positions` positions: later ones dropped, new ones appended;
  // whether the list changed.
  bool cover(int64_t b, int64_t positions);
  // The paged layers' storage: the block tables of rows b < rows (0: none until the next begin).
  void refresh(int64_t rows);

  KVCacheShape shape_;
  QuantType storage_type_;  // of every layer's rows: the cache type, f32 as the model's dtype
  std::vector<Layer> layers_;
  int64_t paged_layers_ = 0;
  std::vector<std::vector<KVBlockRef>> blocks_;  // paged: per row (max_batch of them), in position order
  int64_t table_rows_ = 0;                        // the rows the paged layers' storage has tables of
  int64_t position_ = 0, batch_ = 0;
  Tensor carried_;
};

}  // namespace nf::nn
