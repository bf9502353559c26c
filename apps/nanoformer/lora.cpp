// `nanoformer lora merge`: fold an adapter-only LoRA file (what `nanoformer train --lora-rank ...`
// saves) into its base model and write a plain model in any format save_model writes.
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/lora_adapter.h"
#include "nanoformer/formats/model_io.h"

namespace nf::cli {

void add_lora_command(CLI::App& app) {
  auto* lora = app.add_subcommand("lora", "Work with LoRA adapters (adapter-only files of `nanoformer train --lora-rank`)");
  lora->require_subcommand(1);
  auto* merge = lora->add_subcommand(
      "merge",
      "Load the base model, put the adapter on it and fold every adapter into its weight\n"
      "(W += (alpha / r) B A), then save the plain model to OUT in the format --to names (default\n"
      "nanoformer; any format `nanoformer convert` writes). --base defaults to the base path the\n"
      "adapter file records. The adapter must fit the base: a tensor missing, or mis-shaped against\n"
      "it, is named along with the config keys in which the two bases differ.\n"
      "Example: nanoformer lora merge --base base.safetensors --adapter run/adapter.safetensors --out merged.safetensors\n"
      "Example: nanoformer lora merge --base minimind2-small --adapter a.safetensors --out mm2_hf --to minimind-hf");
  struct Args {
    std::string base, adapter, out, to = "nanoformer";
  };
  auto a = std::make_shared<Args>();
  merge->add_option("--base", a->base, "the base model: a checkpoint, a model folder, a config JSON or a preset");
  merge->add_option("--adapter", a->adapter, "the adapter-only .safetensors file")->required();
  merge->add_option("--out", a->out, "where to write the merged model")->required();
  merge->add_option("--to", a->to, "the output format (default nanoformer)")->check(CLI::IsMember(formats::model_formats()));
  merge->callback([a] {
    const formats::LoRAAdapterInfo info = formats::read_lora_adapter_info(a->adapter);
    const std::string base = a->base.empty() ? info.base_path : a->base;
    NF_CHECK(!base.empty(), a->adapter, ": the adapter records no base path; name the base with --base");
    auto model = formats::load_model(base);
    formats::load_lora_adapter(*model, a->adapter);
    models::merge_lora(*model);
    formats::save_model(*model, a->out, a->to);
    std::printf("merged %s (rank %lld, alpha %g) into %s: wrote %s (%s, %lld parameters)\n", a->adapter.c_str(),
                static_cast<long long>(info.options.rank), info.options.alpha, base.c_str(), a->out.c_str(),
                a->to.c_str(), static_cast<long long>(model->num_parameters()));
  });
}

}  // namespace nf::cli
