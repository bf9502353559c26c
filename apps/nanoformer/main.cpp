// nanoformer: build, train and run transformer models. `nanoformer --help` lists the subcommands.
#include <iostream>

#include "command.h"
#include "openmp_defaults.h"
#include "nanoformer/core/error.h"

int main(int argc, char** argv) {
  nf::cli::reexec_with_openmp_defaults(argv);
  CLI::App app{"nanoformer: build, train and run transformer language models in native C++"};
  app.require_subcommand(1);
  nf::cli::add_demo_command(app);
  nf::cli::add_tokenizer_command(app);
  nf::cli::add_inspect_command(app);
  nf::cli::add_forward_command(app);
  nf::cli::add_convert_command(app);
  nf::cli::add_quantize_command(app);
  nf::cli::add_train_command(app);
  nf::cli::add_generate_command(app);
  nf::cli::add_chat_command(app);
  nf::cli::add_serve_command(app);
  nf::cli::add_eval_command(app);
  nf::cli::add_lora_command(app);
  nf::cli::add_plot_command(app);
  nf::cli::add_viz_command(app);
  nf::cli::add_allreduce_bench_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's own exit status (train stopped by Ctrl-C: 130)
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::cerr << "nanoformer: " << e.what() << " (see --help)\n";
    return e.get_exit_code();
  } catch (const std::exception& e) {
    std::cerr << "nanoformer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
