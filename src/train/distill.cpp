// Distillation's forward on a batch: the frozen teacher's logits, the student's, then the loss.
#include "nanoformer/train/distill.h"

#include "nanoformer/autograd/grad_mode.h"
#include "nanoformer/core/error.h"
#include "nanoformer/ops/view.h"

namespace nf::train {

void DistillMetrics::add(const DistillationLoss& loss, double temperature, int64_t batch_tokens) {
  const double total = static_cast<double>(tokens + batch_tokens);
  const double w = total > 0 ? static_cast<double>(batch_tokens) / total : 0.0;
  ce += (loss.ce.item() - ce) * w;
  distill += (loss.kl.item() * temperature * temperature - distill) * w;
  tokens += batch_tokens;
}

DistillationLoss distill_batch_loss(models::DecoderLM& student, models::DecoderLM& teacher, const Batch& batch,
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

DistillationLoss distill_batch_loss(models::DecoderLM& student, const Tensor& teacher_logits, const Batch& batch,
                                    const DistillOptions& options) {
  const int64_t vocab = student.config().vocab_size;
  NF_CHECK(teacher_logits.dim() == 3 && teacher_logits.size(2) == vocab, "distillation: teacher logits ",
           shape_str(teacher_logits.shape()), " are not over the student's vocab_size ", vocab);
  const Tensor student_logits = student.forward(batch.inputs).logits;
  return distillation_loss(reshape(student_logits, {-1, vocab}),
                           reshape(teacher_logits, {-1, vocab}).to(student_logits.dtype()),
                           reshape(batch.targets, {-1}), options.temperature, options.alpha, kIgnoreIndex);
}

}  // namespace nf::train
