#pragma once
// Learning-rate schedules: the lr of step t (0-based) as a pure function, so that a resumed run
// recomputes it from the step alone.
//   constant         lr
//   warmup_cosine    003's warmup + cosine annealing:
//                      t < T_w:  lr t / T_w
//                      else:     min_lr + (lr - min_lr) / 2 (1 + cos(pi (t - T_w) / (T - T_w)))
//                    (torch's SequentialLR of LambdaLR(t / T_w) and CosineAnnealingLR(T - T_w, min_lr))
//   wsd              nanochat's warmup-stable-decay, as a multiplier of lr:
//                      t < T_w:  (t + 1) / T_w;  t <= T - T_d: 1;
//                      else:     p + (1 - p) final_fraction with p = (T - t) / T_d, T_d = round(warmdown_fraction T)
//   minimind_cosine  MiniMind's get_lr: lr / 10 + lr / 2 (1 + cos(pi t / T)) (1.1 lr down to 0.1 lr)
// T = total_steps, T_w = warmup_steps.
#include <cstdint>
#include <string>

namespace nf::optim {

enum class ScheduleKind { constant, warmup_cosine, wsd, minimind_cosine };

// "constant", "warmup_cosine", "wsd", "minimind_cosine"; parsing an unknown name throws listing them.
std::string schedule_kind_name(ScheduleKind kind);
ScheduleKind schedule_kind_from_name(const std::string& name);

struct ScheduleConfig {
  ScheduleKind kind = ScheduleKind::constant;
  double lr = 1e-3;                 // the peak learning rate, > 0
  int64_t total_steps = 1;          // T > 0
  int64_t warmup_steps = 0;         // T_w in [0, T); 0 unless warmup_cosine or wsd (the others have none)
  double min_lr = 0.0;              // warmup_cosine's floor
  double warmdown_fraction = 0.2;   // wsd: the final fraction of the steps that decays
  double final_lr_fraction = 0.0;   // wsd: the multiplier reached at the end
};

// Throws nf::Error naming the first bad option.
void validate_schedule(const ScheduleConfig& config);
// The learning rate of step t (0-based; steps past T keep the last value of the formula's range).
double learning_rate(const ScheduleConfig& config, int64_t step);

}  // namespace nf::optim
