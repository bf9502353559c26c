// `nanoformer forward --model MODEL --ids "1 2 3" --out FILE.safetensors [--hidden]`: one sequence
// through a language model, its logits (and every block's hidden state) written for comparison with
// another implementation.
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "command.h"
#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/model_io.h"
#include "nanoformer/ops/view.h"

namespace nf::cli {
namespace {

// "1 2 3" or "1,2,3" -> {1, 2, 3}; every id must lie in [0, vocab_size).
std::vector<int64_t> parse_ids(const std::string& text, int64_t vocab_size) {
  std::string spaced = text;
  for (char& ch : spaced)
    if (ch == ',') ch = ' ';
  std::istringstream in(spaced);
  std::vector<int64_t> ids;
  std::string word;
  while (in >> word) {
    size_t used = 0;
    int64_t id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    NF_CHECK(used == word.size(), "--ids: '", word, "' is not an integer token id");
    NF_CHECK(id >= 0 && id < vocab_size, "--ids: id ", id, " is out of range for vocab_size ", vocab_size,
             " (ids are 0 .. ", vocab_size - 1, ")");
    ids.push_back(id);
  }
  NF_CHECK(!ids.empty(), "--ids: no token ids given (example: --ids \"1 2 3\")");
  return ids;
}

}  // namespace

void add_forward_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "forward",
      "Run one token sequence (batch 1) through a language model in eval mode and write the fp32\n"
      "tensor 'logits' (T, vocab) to a safetensors file, to compare with another implementation.\n"
      "--hidden also writes 'hidden.0' .. 'hidden.{L-1}', each (T, dim): the output of every block,\n"
      "before the final norm (Hugging Face's output_hidden_states[1..L], except that its last entry\n"
      "is taken after the final norm).\n"
      "Example: nanoformer forward --model gpt-mini --ids \"464 2068 7586\" --out logits.safetensors");
  struct Args {
    std::string model, ids, out;
    bool hidden = false;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("--model", a->model, "a preset name, a config JSON file (seed-0 weights), or a checkpoint")->required();
  cmd->add_option("--ids", a->ids, "the token ids, separated by spaces or commas: \"1 2 3\"")->required();
  cmd->add_option("--out", a->out, "the safetensors file to write")->required();
  cmd->add_flag("--hidden", a->hidden, "also write every block's output as hidden.N");
  cmd->callback([a] {
    auto model = models::load_model(a->model);
    const std::vector<int64_t> ids = parse_ids(a->ids, model->config().vocab_size);
    const int64_t T = static_cast<int64_t>(ids.size());
    model->eval();
    NoGradGuard no_grad;
    const models::LMOutput out = model->forward(Tensor::from_vector(ids, {1, T}), {}, a->hidden);
    std::vector<std::pair<std::string, Tensor>> tensors = {
        {"logits", reshape(out.logits, {T, model->config().vocab_size}).contiguous()}};
    for (size_t i = 0; i < out.hidden.size(); ++i)
      tensors.emplace_back("hidden." + std::to_string(i), reshape(out.hidden[i], {T, model->config().dim}).contiguous());
    io::save_safetensors(a->out, tensors);
    std::printf("wrote %s: logits (%lld, %lld)%s\n", a->out.c_str(), static_cast<long long>(T),
                static_cast<long long>(model->config().vocab_size),
                a->hidden ? (" and hidden.0 .. hidden." + std::to_string(out.hidden.size() - 1)).c_str() : "");
  });
}

}  // namespace nf::cli
