// nanoformer: build, train and run transformer models. `nanoformer --help` lists the subcommands.
#include <iostream>

#include "command.h"
#include "nanoformer/core/error.h"

int main(int argc, char** argv) {
  CLI::App app{"nanoformer: build, train and run transformer language models in native C++"};
  app.require_subcommand(1);
  nf::cli::add_demo_command(app);
  nf::cli::add_tokenizer_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "nanoformer: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
