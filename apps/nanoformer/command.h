#pragma once
// A subcommand of the `nanoformer` CLI. Each subcommand lives in its own file and registers itself
// through a function listed in main.cpp, which keeps the CLI's entry point one screen long.
#include <CLI/CLI.hpp>

namespace nf::cli {

// Each subcommand file defines one of these: it adds its CLI11 subcommand (with options and help
// text) and sets the callback that runs it.
void add_demo_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);
void add_inspect_command(CLI::App& app);
void add_forward_command(CLI::App& app);
void add_convert_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_lora_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_plot_command(CLI::App& app);
void add_viz_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_allreduce_bench_command(CLI::App& app);

}  // namespace nf::cli
