// `nanoformer demo`: the end-to-end proof until training lands (see README).
#include "command.h"

namespace nf::cli {
void add_demo_command(CLI::App& app) {
  app.add_subcommand("demo", "Train a small MLP with SGD on a synthetic task (end-to-end proof of the engine)");
}
}  // namespace nf::cli
