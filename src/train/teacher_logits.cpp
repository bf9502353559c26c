// Distillation's teacher logits in a safetensors file: written from the teacher on the run's data
// order, read back batch by batch, each batch's input ids checked against the run's.
#include "nanoformer/train/teacher_logits.h"

#include <cstring>
#include <utility>
#include <vector>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/data/data.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {
namespace {

std::string inputs_name(uint64_t i) { return "inputs." + std::to_string(i); }
std::string logits_name(uint64_t i) { return "logits." + std::to_string(i); }

// A metadata value that must be a non-negative integer.
int64_t metadata_count(const io::SafetensorsFile& file, const std::string& key) {
  const auto it = file.metadata().find(key);
  NF_CHECK(it != file.metadata().end(), "--teacher-logits ", file.path(), ": no '", key,
           "' in the metadata (not written by --write-teacher-logits)");
  size_t used = 0;
  int64_t value = -1;
  try {
    value = std::stoll(it->second, &used);
  } catch (const std::exception&) {
  }
  NF_CHECK(used == it->second.size() && value >= 0, "--teacher-logits ", file.path(), ": metadata '", key,
           "' is not a count but \"", it->second, "\"");
  return value;
}

}  // namespace

void write_teacher_logits(const std::string& path, models::DecoderLM& teacher, const data::BatchSource& source,
                          int64_t batches, const std::string& teacher_name) {
  NF_CHECK(batches >= 1, "--write-teacher-logits ", path, ": no batch to write (", batches, ")");
  NoGradGuard no_grad;
  const bool was_training = teacher.is_training();
  teacher.eval();
  std::vector<std::pair<std::string, Tensor>> logits, inputs;  // f32 logits first: views stay aligned
  for (int64_t i = 0; i < batches; ++i) {
    const data::Batch b = source.batch(static_cast<uint64_t>(i));
    logits.emplace_back(logits_name(static_cast<uint64_t>(i)), teacher.forward(b.inputs).logits.to(DType::f32));
    inputs.emplace_back(inputs_name(static_cast<uint64_t>(i)), b.inputs);
  }
  teacher.train(was_training);
  for (auto& entry : inputs) logits.push_back(std::move(entry));
  io::save_safetensors(path, logits,
                       {{"format", kTeacherLogitsFormat},
                        {"vocab_size", std::to_string(teacher.config().vocab_size)},
                        {"batches", std::to_string(batches)},
                        {"teacher", teacher_name}});
}

int64_t write_teacher_logits(const TrainConfig& config, const std::string& path) {
  NF_CHECK(config.objective == Objective::distill && !config.distill.teacher.empty(),
           "train: --write-teacher-logits needs --objective distill and --teacher MODEL (the teacher it runs)");
  NF_CHECK(!path.empty(), "train: --write-teacher-logits must name a file");
  validate_train_config(config);
  const std::shared_ptr<models::DecoderLM> teacher = formats::load_decoder_lm(config.distill.teacher);
  NF_CHECK(config.data.context <= teacher->config().max_seq_len, "train: --context ", config.data.context,
           " exceeds the teacher's max_seq_len ", teacher->config().max_seq_len);
  data::DataOptions data = config.data;  // the trainer's: the same batches, in the same order
  data.vocab_size = teacher->config().vocab_size;
  data.preference_pairs = false;
  data.show_progress = !config.quiet;
  const data::TrainingData loaded = load_training_data(data);
  const int64_t batches = config.schedule.total_steps * config.grad_accum;
  write_teacher_logits(path, *teacher, *loaded.train, batches, config.distill.teacher);
  return batches;
}

TeacherLogitsFile::TeacherLogitsFile(const std::string& path, int64_t vocab_size, int64_t batches)
    : file_([&] {
        try {
          return io::SafetensorsFile::open(path);
        } catch (const Error& e) {
          NF_FAIL("--teacher-logits ", path, ": ", e.what());
        }
      }()),
      vocab_size_(vocab_size) {
  const auto format = file_.metadata().find("format");
  NF_CHECK(format != file_.metadata().end() && format->second == kTeacherLogitsFormat, "--teacher-logits ", path,
           ": not a teacher-logits file (its metadata has no \"format\": \"", kTeacherLogitsFormat,
           "\"; write one with --write-teacher-logits)");
  const int64_t file_vocab = metadata_count(file_, "vocab_size");
  NF_CHECK(file_vocab == vocab_size, "--teacher-logits ", path, ": logits over a vocabulary of ", file_vocab,
           " but the student has vocab_size ", vocab_size, ": distillation needs one vocabulary");
  batches_ = metadata_count(file_, "batches");
  NF_CHECK(batches_ >= batches, "--teacher-logits ", path, ": holds ", batches_, " batches but the run trains on ",
           batches, " (--steps x --grad-accum): write it for at least as many steps");
  for (int64_t i = 0; i < batches_; ++i)
    for (const std::string& name : {inputs_name(static_cast<uint64_t>(i)), logits_name(static_cast<uint64_t>(i))})
      NF_CHECK(file_.contains(name), "--teacher-logits ", path, ": no tensor '", name, "' (metadata says ", batches_,
               " batches)");
}

Tensor TeacherLogitsFile::logits(uint64_t index, const data::Batch& batch) const {
  NF_CHECK(static_cast<int64_t>(index) < batches_, "--teacher-logits ", path(), ": no batch ", index, " (it holds ",
           batches_, ")");
  const Tensor inputs = file_.view(inputs_name(index));
  const Tensor logits = file_.view(logits_name(index));
  const Shape& shape = batch.inputs.shape();
  NF_CHECK(inputs.dtype() == DType::i64 && inputs.shape() == shape, "--teacher-logits ", path(), ": batch ", index,
           "'s inputs are ", dtype_name(inputs.dtype()), " ", shape_str(inputs.shape()), " but the run's batch is i64 ",
           shape_str(shape), " (written for another --batch-size, --context or data?)");
  NF_CHECK(logits.dtype() == DType::f32 && logits.shape() == Shape({shape[0], shape[1], vocab_size_}), "--teacher-logits ",
           path(), ": batch ", index, "'s logits are ", dtype_name(logits.dtype()), " ", shape_str(logits.shape()),
           ", not f32 ", shape_str({shape[0], shape[1], vocab_size_}));
  const Tensor run_inputs = batch.inputs.contiguous();
  NF_CHECK(std::memcmp(inputs.raw_data(), run_inputs.raw_data(), static_cast<size_t>(run_inputs.numel()) * sizeof(int64_t)) == 0,
           "--teacher-logits ", path(), ": batch ", index, " holds other input ids than the run's batch ", index,
           " (written for another --data, --seed, --data-seed or --grad-accum?)");
  return logits;
}

}  // namespace nf::train
