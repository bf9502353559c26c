// The learning-rate schedules of schedule.h.
#include "nanoformer/optim/schedule.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numbers>
#include <utility>

#include "nanoformer/core/error.h"

namespace nf::optim {
namespace {

constexpr std::array<std::pair<ScheduleKind, const char*>, 4> kNames{
    {{ScheduleKind::constant, "constant"},
     {ScheduleKind::warmup_cosine, "warmup_cosine"},
     {ScheduleKind::wsd, "wsd"},
     {ScheduleKind::minimind_cosine, "minimind_cosine"}}};

}  // namespace

std::string schedule_kind_name(ScheduleKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  NF_FAIL("schedule_kind_name: unknown kind ", static_cast<int>(kind));
}

ScheduleKind schedule_kind_from_name(const std::string& name) {
  std::string known;
  for (const auto& [k, n] : kNames) {
    if (name == n) return k;
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  NF_FAIL("schedule '", name, "' is unknown (known: ", known, ")");
}

void validate_schedule(const ScheduleConfig& c) {
  NF_CHECK(c.lr > 0 && std::isfinite(c.lr), "schedule: lr ", c.lr, " (--lr) must be > 0: the peak learning rate");
  NF_CHECK(c.total_steps > 0, "schedule: total_steps ", c.total_steps, " must be > 0");
  NF_CHECK(c.warmup_steps >= 0 && c.warmup_steps < c.total_steps, "schedule: warmup_steps ", c.warmup_steps,
           " must be in [0, total_steps ", c.total_steps, ")");
  NF_CHECK(c.warmup_steps == 0 || c.kind == ScheduleKind::warmup_cosine || c.kind == ScheduleKind::wsd,
           "schedule ", schedule_kind_name(c.kind), " has no warmup, so warmup_steps ", c.warmup_steps,
           " (--warmup) would be ignored: leave --warmup out, or use --schedule warmup_cosine or wsd");
  NF_CHECK(c.min_lr >= 0 && c.min_lr <= c.lr, "schedule: min_lr ", c.min_lr, " must be in [0, lr ", c.lr, "]");
  NF_CHECK(c.warmdown_fraction >= 0 && c.warmdown_fraction <= 1, "schedule: warmdown_fraction ", c.warmdown_fraction,
           " must be in [0, 1]");
  NF_CHECK(c.final_lr_fraction >= 0 && c.final_lr_fraction <= 1, "schedule: final_lr_fraction ", c.final_lr_fraction,
           " must be in [0, 1]");
}

double learning_rate(const ScheduleConfig& c, int64_t step) {
  validate_schedule(c);
  NF_CHECK(step >= 0, "schedule: step ", step, " must be >= 0");
  const auto t = static_cast<double>(step), T = static_cast<double>(c.total_steps);
  const auto Tw = static_cast<double>(c.warmup_steps);
  constexpr double pi = std::numbers::pi;
  switch (c.kind) {
    case ScheduleKind::constant: return c.lr;
    case ScheduleKind::warmup_cosine: {
      if (step < c.warmup_steps) return c.lr * t / Tw;                                    // lr t / T_w
      const double progress = std::min(1.0, (t - Tw) / (T - Tw));
      return c.min_lr + (c.lr - c.min_lr) / 2 * (1 + std::cos(pi * progress));           // cosine to min_lr
    }
    case ScheduleKind::wsd: {
      const double warmdown = std::round(c.warmdown_fraction * T);
      if (step < c.warmup_steps) return c.lr * (t + 1) / Tw;                              // (t + 1) / T_w
      if (t <= T - warmdown) return c.lr;
      const double p = std::max(0.0, (T - t) / warmdown);                                  // 1 -> 0 over T_d
      return c.lr * (p + (1 - p) * c.final_lr_fraction);
    }
    case ScheduleKind::minimind_cosine: return c.lr / 10 + 0.5 * c.lr * (1 + std::cos(pi * t / T));
  }
  NF_FAIL("schedule: unknown kind");
}

}  // namespace nf::optim
