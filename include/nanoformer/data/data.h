#pragma once
// The training data of a run: what `nanoformer train --data ...` reads, as a train and a
// validation BatchSource (batch.h). Formats, told apart per file:
//   token file  a file that starts with the NFTOKENS magic (tokenizer/token_file.h), memory-mapped;
//   JSONL       a file named *.jsonl: {"text": ...} lines are pretraining documents (MiniMind's
//               pretrain_hq.jsonl), each followed by <|endoftext|> when the tokenizer has it;
//               {"conversations": [{"role": ..., "content": ...}, ...]} lines (detected from the
//               first line) are chat examples for supervised fine-tuning (MiniMind's sft_*.jsonl);
//               with preference_pairs, every file is {"chosen": [...], "rejected": [...]} lines,
//               conversation pairs for DPO (MiniMind's dpo.jsonl);
//   text        anything else, tokenised whole.
// Text and JSONL are tokenised at load, in parallel (`nanoformer tokenizer prepare` does it once
// into a token file instead). Pretraining data gives random windows of context + 1 tokens; chat
// data gives padded conversations with the loss on the assistant's tokens only (sft_data.h).
// docs/training.md ("Data") describes the split, the determinism and the masks.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nanoformer/data/batch.h"

namespace nf::data {

struct DataOptions {
  std::vector<std::string> train_paths;  // token files, text files, JSONL (see above); one kind of
                                         // data: pretraining or chat, not both
  std::vector<std::string> val_paths;    // optional; else val is the last val_fraction of train
  double val_fraction = 0.1;             // 0: no validation data
  std::string tokenizer;                 // tokenizer.json / char vocabulary; needed for text and JSONL
  int64_t batch_size = 8, context = 256;
  uint64_t seed = 1337;
  int64_t vocab_size = 0;                // the model's: every id must be below it (0: not checked)
  std::string chat_template;  // for chat data: chatml, nanochat, a file (chat_template.h); empty: the tokenizer's own
  int64_t pad_id = -1;                   // chat padding id (default: the template's end token)
  std::string jsonl_field = "text";      // the document field of pretraining JSONL
  bool pad_to_context = false;           // chat batches: pad to context (MiniMind) instead of to
                                         // the longest conversation in the batch (nanochat)
  bool preference_pairs = false;         // JSONL of chosen/rejected conversation pairs (DPO): batches
                                         // of batch_size pairs, 2 x batch_size rows (sft_data.h)
  bool show_progress = true;             // a progress bar while tokenising large inputs
};

struct TrainingData {
  std::unique_ptr<BatchSource> train, val;  // val is null when there is no validation data
  // Pretraining with a vocab_size: the scan that checked every id before step one, e.g.
  // "token ids checked: 4000 tokens, largest id 31 < vocabulary 32, in 0.00213 ms".
  std::string vocab_check;
};

// Reads, tokenises and checks the data; throws nf::Error naming the file (and line or position)
// at fault: an unreadable or empty file, a token id not below vocab_size (every id is checked
// before the first batch), a token file prepared for a larger vocabulary, malformed JSONL, a
// corpus shorter than context + 1, a conversation with an unknown role.
TrainingData load_training_data(const DataOptions& options);

}  // namespace nf::data
