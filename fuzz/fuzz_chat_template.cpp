// Hugging Face chat templates (Jinja): the input is a template's source, parsed and rendered as
// `chat`, `serve` and SFT data render one (a conversation with tools, with and without the
// generation prompt), under tighter limits than the defaults so every input ends within the
// fuzzer's time and memory. Bad input must end in an nf::Error that names the chat template; a
// template that parses renders or refuses the same way twice (it is deterministic), and a
// rendered text is within the output limit.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "nanoformer/jinja/template.h"

using namespace nf;
using namespace nf::tokenizer;

namespace {

jinja::Value context(bool add_generation_prompt) {
  static const auto doc = nlohmann::ordered_json::parse(R"({
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": " Hi <think>\n"},
                 {"role": "assistant", "content": "<think>\nr\n</think>\n\nok \"q\" é"}, {"role": "user", "content": "again"}],
    "tools": [{"type": "function", "function": {"name": "get", "description": "x",
               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}],
    "documents": null, "bos_token": "<s>", "eos_token": "<|im_end|>"})");
  jinja::Value v = jinja::from_json(doc);
  jinja::Dict d = v.as_dict();
  d.set("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  return jinja::Value::dict(std::move(d));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source = fuzz::as_text(data, size);
  jinja::Limits limits;
  limits.max_steps = 5'000;  // the published templates need under 3'000 for this conversation
  limits.max_output = 256u << 10;
  limits.max_list = 2'000;
  fuzz::expect_nf_error_naming("chat template", [&] {
    const jinja::Template t(source, limits);
    for (const bool gen : {false, true}) {
      std::string first, second;
      const bool ok = fuzz::expect_nf_error_naming("chat template", [&] { first = t.render(context(gen)); });
      const bool again = fuzz::expect_nf_error_naming("chat template", [&] { second = t.render(context(gen)); });
      NF_FUZZ_CHECK(ok == again, "a template rendered once and refused once");
      NF_FUZZ_CHECK(first.size() <= limits.max_output, "output of ", first.size(), " bytes past the limit");
      if (source.find("strftime_now") == std::string_view::npos)
        NF_FUZZ_CHECK(first == second, "a template rendered two different texts");
    }
  });
  return 0;
}
