// `nanoformer viz`: on a fresh config it prints the stage table and writes stats.json, stats.png
// and one attention picture per selected layer; --compare adds compare.png, an MoE model
// moe_load.png; indices out of range and missing input are one clear error line each.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/cli_test.h"

namespace nf::testing {
namespace {

namespace fs = std::filesystem;

class VizCliTest : public CliTest {
 protected:
  std::string config(const std::string& name, const std::string& extra) {
    std::ofstream(path(name)) << R"({"vocab_size": 32, "dim": 16, "n_layers": 2,
                                     "n_heads": 4, "max_seq_len": 16)" << extra << "}";
    return path(name);
  }
};

TEST_F(VizCliTest, WritesTableJsonAndPictures) {
  const std::string pre = config("pre.json", ""), post = config("post.json", R"(, "norm_placement": "post")");
  const CliRun r = cli("viz '" + pre + "' --ids \"1 2 3 4 5\" --layer 1 --compare '" + post + "' --out '" + path("v") + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("attn_residual"), std::string::npos) << r.out;
  for (const char* f : {"stats.json", "stats.png", "attention_layer1.png", "compare.png"})
    EXPECT_TRUE(fs::exists(path("v/") + f)) << f;
  EXPECT_FALSE(fs::exists(path("v/attention_layer0.png")));
  EXPECT_FALSE(fs::exists(path("v/moe_load.png")));
  const auto j = nlohmann::json::parse(read_text(path("v/stats.json")));
  EXPECT_EQ(j.at("stages").size(), 16u);  // 8 stages x 2 layers
  EXPECT_EQ(j.at("ids"), nlohmann::json::array({1, 2, 3, 4, 5}));

  const std::string moe = config("moe.json", R"(, "moe": {"n_experts": 4, "top_k": 2})");
  const CliRun m = cli("viz '" + moe + "' --ids \"1 2 3\" --head 0 --out '" + path("m") + "'");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_NE(m.out.find("layer 1 expert load:"), std::string::npos) << m.out;
  EXPECT_TRUE(fs::exists(path("m/moe_load.png")));
}

TEST_F(VizCliTest, BadInputIsOneClearLine) {
  const std::string pre = config("pre.json", "");
  CliRun r = cli("viz '" + pre + "' --ids \"1 2\" --layer 2 --out '" + path("v") + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("--layer 2 is out of range: the model has 2 (indices 0 to 1)"), std::string::npos) << r.err;
  r = cli("viz '" + pre + "' --ids \"1 2\" --head -3 --out '" + path("v") + "'");
  EXPECT_NE(r.err.find("--head -3 is out of range: the model has 4 (indices 0 to 3)"), std::string::npos) << r.err;
  r = cli("viz '" + pre + "' --out '" + path("v") + "'");
  EXPECT_NE(r.err.find("give either --text (with --tokenizer) or --ids"), std::string::npos) << r.err;
  r = cli("viz '" + pre + "' --text hi --out '" + path("v") + "'");
  EXPECT_NE(r.err.find("--text needs --tokenizer"), std::string::npos) << r.err;
  r = cli("viz '" + pre + "' --ids \"1 40\" --out '" + path("v") + "'");
  EXPECT_NE(r.err.find("--ids"), std::string::npos) << r.err;
  r = cli("viz '" + pre + "' --ids \"1 2\" --compare '" + config("deep.json", R"(, "n_layers": 3)") + "' --out '" +
          path("v") + "'");
  EXPECT_NE(r.err.find("3 layers, the model has 2"), std::string::npos) << r.err;
  r = cli("viz '" + pre + "' --ids \"1 2\" --compare '" + path("missing.json") + "' --out '" + path("v") + "'");
  EXPECT_NE(r.err.find("missing.json: no such file"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("v")));  // nothing written before --compare was checked
}

}  // namespace
}  // namespace nf::testing
