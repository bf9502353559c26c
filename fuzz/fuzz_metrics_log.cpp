// Training metrics (metrics.jsonl, read by `nanoformer plot`): the input is the file. Bad input
// must end in nf::Error naming the file; a log that reads has one loss and one learning rate per
// training step and one validation loss per validation step.
#include "fuzz_support.h"
#include "nanoformer/train/metrics_log.h"

using namespace nf;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = fuzz::scratch_file(data, size);
  fuzz::expect_nf_error_naming(path, [&] {
    const train::MetricsLog log = train::read_metrics_log(path);
    NF_FUZZ_CHECK(log.loss.size() == log.step.size() && log.lr.size() == log.step.size(), log.step.size(), " steps, ",
                  log.loss.size(), " losses, ", log.lr.size(), " learning rates");
    NF_FUZZ_CHECK(log.val_loss.size() == log.val_step.size(), log.val_step.size(), " validation steps, ",
                  log.val_loss.size(), " losses");
  });
  return 0;
}
