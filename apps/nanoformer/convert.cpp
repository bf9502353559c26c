// `nanoformer convert MODEL OUT --to FORMAT`: load a model from whatever it is stored as and save it
// in another format (model_io.h says which formats this build reads and writes).
#include <cstdio>
#include <memory>
#include <string>

#include "command.h"
#include "nanoformer/models/model_io.h"

namespace nf::cli {

void add_convert_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "convert",
      "Load MODEL (a preset name or config JSON, giving seed-0 weights, or a checkpoint) and save it\n"
      "to OUT in the format --to names:\n"
      "  nanoformer  one .safetensors file with the config in its header (every architecture)\n"
      "  hf          a Hugging Face folder: config.json + model.safetensors (GPT-2 / LLaMA; BertModel\n"
      "              for an encoder)\n"
      "  minimind    a MiniMind2 folder (002's names), nanochat a nanochat folder (meta + model)\n"
      "  llama2c     a llama2.c .bin file\n"
      "Example: nanoformer convert minimind2-small mm2.safetensors --to nanoformer");
  struct Args {
    std::string model, out, to;
  };
  auto a = std::make_shared<Args>();
  cmd->add_option("MODEL", a->model, "a preset name, a config JSON file, or a checkpoint")->required();
  cmd->add_option("OUT", a->out, "where to write the converted model")->required();
  cmd->add_option("--to", a->to, "the output format")->required()->check(CLI::IsMember(models::model_formats()));
  cmd->callback([a] {
    auto model = models::load_model(a->model);
    models::save_model(*model, a->out, a->to);
    std::printf("wrote %s (%s, %lld parameters)\n", a->out.c_str(), a->to.c_str(),
                static_cast<long long>(model->num_parameters()));
  });
}

}  // namespace nf::cli
