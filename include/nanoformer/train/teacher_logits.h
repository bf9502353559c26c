#pragma once
// Distillation's teacher logits read from a file instead of computed on the fly (--teacher-logits):
// a safetensors file (io/safetensors.h, no new parser) holding, for each training batch i of the
// run's data order (batch i = step i / grad_accum's micro-batch i % grad_accum),
//   "inputs.<i>"  (B, T) i64      the batch's input ids, checked against the batch the run draws
//   "logits.<i>"  (B, T, V) f32   the teacher's logits on them (eval mode, no gradient)
// and the metadata {"format": "nanoformer-teacher-logits", "vocab_size": "V", "batches": "N",
// "teacher": "<path>"}. Full logits: the loss equals the on-the-fly teacher's exactly.
#include <cstdint>
#include <string>

#include "nanoformer/data/batch.h"
#include "nanoformer/io/safetensors.h"
#include "nanoformer/models/decoder_lm.h"

namespace nf::train {

struct TrainConfig;

inline constexpr const char* kTeacherLogitsFormat = "nanoformer-teacher-logits";

// Writes the teacher's logits on `batches` batches [0, batches) of `source` to `path` (a temporary
// renamed into place). `teacher_name` goes into the metadata.
void write_teacher_logits(const std::string& path, models::DecoderLM& teacher, const data::BatchSource& source,
                          int64_t batches, const std::string& teacher_name);

// `nanoformer train --objective distill --teacher MODEL --write-teacher-logits FILE`: the teacher's
// logits on the batches the run `config` trains on (steps x grad_accum of them, its data order),
// written to `path` without training and without a run directory. Returns the batches written.
int64_t write_teacher_logits(const TrainConfig& config, const std::string& path);

// A teacher-logits file opened for a run (memory-mapped: a batch's logits are read when it is used).
class TeacherLogitsFile {
 public:
  // Checks the format, the vocabulary (`vocab_size`, the student's) and that the file holds at least
  // `batches` batches; each failure a one-line nf::Error naming the file (and `flag`).
  TeacherLogitsFile(const std::string& path, int64_t vocab_size, int64_t batches);
  // The teacher's logits on batch `index` (B, T, V) f32, after checking that the file's inputs of
  // that batch are `batch.inputs` (same shape and ids): else an error naming the file and the batch.
  Tensor logits(uint64_t index, const data::Batch& batch) const;
  const std::string& path() const { return file_.path(); }
  int64_t batches() const { return batches_; }

 private:
  io::SafetensorsFile file_;
  int64_t vocab_size_ = 0, batches_ = 0;
};

}  // namespace nf::train
