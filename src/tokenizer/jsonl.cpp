#include "nanoformer/tokenizer/jsonl.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <vector>

#include "nanoformer/core/error.h"
#include "nanoformer/core/parallel.h"
#include "util/json_input.h"

namespace nf::tokenizer {
namespace {

bool blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

}  // namespace

void read_jsonl_blocks(const std::string& path, size_t block_bytes,
                       const std::function<void(std::span<const JsonlLine>)>& on_block, const ByteProgress& progress) {
  std::error_code ec;
  NF_CHECK(!std::filesystem::is_directory(path, ec), path, ": is a directory, not a JSONL file");
  std::ifstream in(path, std::ios::binary);
  NF_CHECK(in, path, ": cannot open for reading: ", std::strerror(errno));
  const uint64_t total = std::filesystem::file_size(path, ec);
  std::string text, buffer(std::max<size_t>(block_bytes, 1), '\0');
  std::vector<JsonlLine> lines;
  uint64_t line_number = 0, done = 0;
  for (bool eof = false; !eof;) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    NF_CHECK(!in.bad(), path, ": read failed: ", std::strerror(errno));
    const auto got = static_cast<size_t>(in.gcount());
    eof = got < buffer.size();
    text.append(buffer.data(), got);
    done += got;
    // Whole lines only; the unfinished last one waits for the next block unless the file is done.
    const size_t last_newline = text.rfind('\n');
    const size_t usable = eof ? text.size() : (last_newline == std::string::npos ? 0 : last_newline + 1);
    lines.clear();
    for (size_t pos = 0; pos < usable;) {
      size_t end = text.find('\n', pos);
      if (end == std::string::npos || end > usable) end = usable;
      std::string_view line(text.data() + pos, end - pos);
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      ++line_number;
      if (!blank(line)) lines.push_back({line_number, line});
      pos = end + 1;
    }
    if (!lines.empty()) on_block(lines);
    text.erase(0, std::min(usable, text.size()));
    if (progress) progress(done, total);
  }
}

void parallel_for_first_error(size_t n, int threads, const std::function<void(size_t)>& fn) {
  std::vector<std::exception_ptr> errors(n);
  bool failed = false;
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads > 0 ? threads : num_threads())
  for (size_t i = 0; i < n; ++i) {
    try {
      fn(i);
    } catch (...) {
      errors[i] = std::current_exception();
#pragma omp atomic write
      failed = true;
    }
  }
  if (!failed) return;
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

std::optional<TokenId> end_of_text_id(const Tokenizer& tokenizer) {
  const std::optional<TokenId> id = tokenizer.token_id(kEndOfText);
  if (!id || tokenizer.encode(kEndOfText) != std::vector<TokenId>{*id}) return std::nullopt;
  return id;
}

void encode_jsonl_texts(const Tokenizer& tokenizer, const std::string& path, const JsonlTextOptions& options,
                        const std::function<void(std::span<const TokenId>)>& sink) {
  std::vector<std::vector<TokenId>> ids;
  read_jsonl_blocks(
      path, options.block_bytes,
      [&](std::span<const JsonlLine> lines) {
        ids.assign(lines.size(), {});
        parallel_for_first_error(lines.size(), options.threads, [&](size_t i) {
          const std::string where = path + ":" + std::to_string(lines[i].number) + ": ";
          const nlohmann::json doc = util::parse_json(lines[i].text, where);
          NF_CHECK(doc.is_object(), where, "expected a JSON object, got ", util::json_excerpt(doc));
          const auto field = doc.find(options.field);
          NF_CHECK(field != doc.end(), where, "no \"", options.field, "\" field");
          NF_CHECK(field->is_string(), where, "\"", options.field, "\" is not a string but ",
                   util::json_excerpt(*field));
          tokenizer.encode(field->get_ref<const std::string&>(), ids[i]);
          if (options.separator) ids[i].push_back(*options.separator);
        });
        for (const std::vector<TokenId>& doc_ids : ids) sink(doc_ids);
      },
      options.progress);
}

bool is_jsonl_path(std::string_view path) { return path.ends_with(".jsonl"); }

}  // namespace nf::tokenizer
