#pragma once
// Distillation on a batch of the lm objective's rows (the same targets: pretraining tokens, or
// SFT's assistant tokens; kIgnoreIndex elsewhere): the student's logits (with gradient) and the
// frozen teacher's (eval mode, no gradient), computed on the fly or read from a file, into
//   loss = alpha CE(student, target) + (1 - alpha) T^2 KL(softmax(teacher / T) || softmax(student / T))
// averaged over the batch's target tokens (ops/distillation_loss.h), as MiniMind's train_distillation.
// An MoE student's load-balancing loss is not added (MiniMind adds it to the CE, weighted by alpha).
#include <cstdint>

#include "nanoformer/data/batch.h"
#include "nanoformer/models/decoder_lm.h"
#include "nanoformer/ops/distillation_loss.h"
#include "nanoformer/train/train_config.h"

namespace nf::train {

// Per-step token-weighted means of what a distillation step logs (metrics.jsonl: ce_loss, distill_loss).
struct DistillMetrics {
  double ce = 0;       // the student's cross-entropy on the targets
  double distill = 0;  // T^2 KL(teacher || student): MiniMind's distill_loss
  int64_t tokens = 0;
  // Adds a batch's means, weighted by its target tokens.
  void add(const DistillationLoss& loss, double temperature, int64_t tokens);
};

// The distillation loss of `batch` (DistillationLoss: loss, ce, kl, each the mean over its target
// tokens). The teacher must share the student's vocabulary (the trainer checks it when it loads it).
DistillationLoss distill_batch_loss(models::DecoderLM& student, models::DecoderLM& teacher, const data::Batch& batch,
                                    const DistillOptions& options);
// The same with the teacher's logits on the batch given (B, T, V): read from a file (train/teacher_logits.h).
DistillationLoss distill_batch_loss(models::DecoderLM& student, const Tensor& teacher_logits, const data::Batch& batch,
                                    const DistillOptions& options);

}  // namespace nf::train
