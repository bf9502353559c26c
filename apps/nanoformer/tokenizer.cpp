// `nanoformer tokenizer ...`: placeholder until the tokenizer lands (issue 3).
#include "command.h"

namespace nf::cli {
void add_tokenizer_command(CLI::App& app) {
  app.add_subcommand("tokenizer", "Train, inspect and apply byte-level BPE tokenizers");
}
}  // namespace nf::cli
