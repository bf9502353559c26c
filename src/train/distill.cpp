// Distillation's forward on a batch (the frozen teacher's logits, the student's, then the loss), and
// the distill objective of training on them.
#include "nanoformer/train/distill.h"

#include <cstdio>

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/formats/model_io.h"
#include "nanoformer/ops/view.h"
#include "nanoformer/train/objective.h"
#include "nanoformer/train/teacher_logits.h"

namespace nf::train {

void DistillMetrics::add(const DistillationLoss& loss, double temperature, int64_t batch_tokens) {
  const double total = static_cast<double>(tokens + batch_tokens);
  const double w = total > 0 ? static_cast<double>(batch_tokens) / total : 0.0;
  ce += (loss.ce.item() - ce) * w;
  distill += (loss.kl.item() * temperature * temperature - distill) * w;
  tokens += batch_tokens;
}

DistillationLoss distill_batch_loss(models::DecoderLM& student, models::DecoderLM& teacher, const data::Batch& batch,
                                    const DistillOptions& options) {
  NF_CHECK(teacher.config().vocab_size == student.config().vocab_size, "distillation: the teacher's vocab_size ",
           teacher.config().vocab_size, " differs from the student's ", student.config().vocab_size);
  Tensor teacher_logits;
  {
    NoGradGuard no_grad;
    const bool was_training = teacher.is_training();
    teacher.eval();
    teacher_logits = teacher.forward(batch.inputs).logits;
    teacher.train(was_training);
  }
  return distill_batch_loss(student, teacher_logits, batch, options);
}

DistillationLoss distill_batch_loss(models::DecoderLM& student, const Tensor& teacher_logits, const data::Batch& batch,
                                    const DistillOptions& options) {
  const int64_t vocab = student.config().vocab_size;
  NF_CHECK(teacher_logits.dim() == 3 && teacher_logits.size(2) == vocab, "distillation: teacher logits ",
           shape_str(teacher_logits.shape()), " are not over the student's vocab_size ", vocab);
  const Tensor student_logits = student.forward(batch.inputs).logits;
  return distillation_loss(reshape(student_logits, {-1, vocab}),
                           reshape(teacher_logits, {-1, vocab}).to(student_logits.dtype()),
                           reshape(batch.targets, {-1}), options.temperature, options.alpha, data::kIgnoreIndex);
}

namespace {

// Each micro-batch's mean loss over its target tokens, weighted by its share of the step's targets;
// the teacher a model run on every batch, or its logits read from a file.
class DistillObjective final : public TrainingObjective {
 public:
  explicit DistillObjective(const TrainConfig& config) : TrainingObjective(config) {}

  void prepare(const models::DecoderLM& student) override {
    const int64_t vocab = student.config().vocab_size;
    if (!config_.distill.teacher_logits.empty()) {
      teacher_logits_ = std::make_unique<TeacherLogitsFile>(config_.distill.teacher_logits, vocab,
                                                            config_.schedule.total_steps * config_.grad_accum);
      return;
    }
    teacher_ = formats::load_decoder_lm(config_.distill.teacher);
    NF_CHECK(teacher_->config().vocab_size == vocab, "train: --teacher ", config_.distill.teacher, " has vocab_size ",
             teacher_->config().vocab_size, " but the student has ", vocab, ": distillation needs one vocabulary");
    teacher_->requires_grad_(false);
    teacher_->eval();
  }
  std::string describe() const override {
    const std::string teacher =
        teacher_ ? config_.distill.teacher
                 : "logits from " + teacher_logits_->path() + " (" + std::to_string(teacher_logits_->batches()) + " batches)";
    char rest[160];
    std::snprintf(rest, sizeof rest, ", temperature %g, alpha %g (loss = alpha CE + (1 - alpha) T^2 KL)",
                  config_.distill.temperature, config_.distill.alpha);
    return "distill, teacher " + teacher + rest;
  }

  std::vector<MicroBatchSize> begin_step(int64_t step) override {
    step_ = step;
    metrics_ = {};
    return TrainingObjective::begin_step(step);
  }
  MicroBatchLoss loss(size_t m) override {
    const data::Batch& b = batches_[m];
    const uint64_t index = static_cast<uint64_t>(step_ * config_.grad_accum) + m;
    const DistillationLoss d = teacher_logits_
                                   ? distill_batch_loss(policy(), teacher_logits_->logits(index, b), b, config_.distill)
                                   : distill_batch_loss(policy(), *teacher_, b, config_.distill);
    metrics_.add(d, config_.distill.temperature, b.target_tokens);
    return {d.loss, {}};
  }
  ObjectiveMetrics end_step() override {  // MiniMind's names: loss = alpha ce_loss + (1 - alpha) distill_loss
    char status[64];
    std::snprintf(status, sizeof status, "ce %.4f distill %.4f", metrics_.ce, metrics_.distill);
    return {{{"ce_loss", metrics_.ce}, {"distill_loss", metrics_.distill}}, status, ""};
  }

 private:
  std::shared_ptr<models::DecoderLM> teacher_;
  std::unique_ptr<TeacherLogitsFile> teacher_logits_;
  int64_t step_ = 0;
  DistillMetrics metrics_;
};

}  // namespace

std::unique_ptr<TrainingObjective> make_distill_objective(const TrainConfig& config) {
  return std::make_unique<DistillObjective>(config);
}

}  // namespace nf::train
