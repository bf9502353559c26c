// Reading metrics.jsonl back (train/metrics_log.h): the values the trainer wrote, in order, split
// into training steps and validations; a malformed line is an error naming the file and line.
#include <cmath>
#include <filesystem>
#include <fstream>

#include "nanoformer/train/metrics_log.h"
#include "support/temp_dir.h"
#include "support/testing.h"

namespace nf::train {
namespace {

const testing::TempDir& scratch() {
  static const testing::TempDir dir;  // this test process's own
  return dir;
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = scratch().file(name);
  std::ofstream(path) << text;
  return path;
}

TEST(MetricsLog, ReadsStepsAndValidations) {
  const std::string path = write_file("nf_metrics_ok.jsonl",
                                      "{\"step\":1,\"loss\":2.5,\"lr\":0.001,\"grad_norm\":1.0}\n"
                                      "{\"step\":2,\"loss\":null,\"lr\":0.002}\n"
                                      "\n"
                                      "{\"step\":2,\"val_loss\":2.25,\"val_ppl\":9.49}\n");
  const MetricsLog log = read_metrics_log(path);
  EXPECT_EQ(log.step, (std::vector<double>{1, 2}));
  ASSERT_EQ(log.loss.size(), 2u);
  EXPECT_EQ(log.loss[0], 2.5);
  EXPECT_TRUE(std::isnan(log.loss[1]));  // an overflowed loss, written as null
  EXPECT_EQ(log.lr, (std::vector<double>{0.001, 0.002}));
  EXPECT_EQ(log.val_step, (std::vector<double>{2}));
  EXPECT_EQ(log.val_loss, (std::vector<double>{2.25}));
  std::filesystem::remove(path);
}

TEST(MetricsLog, MalformedLinesNameFileAndLine) {
  const std::string ok = "{\"step\":1,\"loss\":2.5,\"lr\":0.001}\n";
  EXPECT_THROW_WITH(read_metrics_log(write_file("nf_m1.jsonl", ok + "{\"step\":2,\"loss\":2.\n")), "nf_m1.jsonl line 2",
                    "not valid JSON");
  EXPECT_THROW_WITH(read_metrics_log(write_file("nf_m2.jsonl", ok + ok + "[1,2]\n")), "nf_m2.jsonl line 3",
                    "expected a JSON object");
  EXPECT_THROW_WITH(read_metrics_log(write_file("nf_m3.jsonl", "{\"loss\":2.5,\"lr\":0.001}\n")), "nf_m3.jsonl line 1",
                    "no \"step\"");
  EXPECT_THROW_WITH(read_metrics_log(write_file("nf_m4.jsonl", "{\"step\":1,\"loss\":\"low\",\"lr\":1}\n")),
                    "nf_m4.jsonl line 1", "\"loss\" is \"low\"", "expected a number");
  EXPECT_THROW_WITH(read_metrics_log(write_file("nf_m5.jsonl", "{\"step\":1,\"loss\":2.5}\n")), "nf_m5.jsonl line 1",
                    "no \"lr\"");
  EXPECT_THROW_WITH(read_metrics_log("/nonexistent/metrics.jsonl"), "/nonexistent/metrics.jsonl", "cannot read");
}

}  // namespace
}  // namespace nf::train
