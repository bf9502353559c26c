#include "nanoformer/util/progress_bar.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace nf::util {

std::string human_count(double v) {
  const char* suffix[] = {"", " k", " M", " G", " T"};
  int i = 0;
  while (std::fabs(v) >= 1000.0 && i < 4) {
    v /= 1000.0;
    ++i;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.1f%s" : "%.2f%s", v, suffix[i]);
  return buf;
}

std::string human_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "--:--";
  const long s = std::lround(seconds);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%02ld:%02ld", s / 60, s % 60);
  }
  return buf;
}

ProgressBar::ProgressBar(int64_t total, std::string label, std::string unit, int64_t first)
    : total_(total), first_(first), done_(first), label_(std::move(label)), unit_(std::move(unit)),
      tty_(isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), last_draw_(start_) {}

ProgressBar::~ProgressBar() {
  if (!finished_ && done_ > first_) finish();
}

namespace {
constexpr double kQuietSeconds = 0.5;  // jobs shorter than this show no bar
}

void ProgressBar::update(int64_t done, const std::string& status) {
  done_ = done;
  status_ = status;
  const auto now = std::chrono::steady_clock::now();
  if (!drawn_ && std::chrono::duration<double>(now - start_).count() < kQuietSeconds) return;
  const double since = std::chrono::duration<double>(now - last_draw_).count();
  if (!drawn_ || since >= (tty_ ? 0.1 : 5.0) || done_ >= total_) {
    last_draw_ = now;
    draw(false);
  }
}

void ProgressBar::finish(const std::string& status) {
  if (finished_) return;
  if (!status.empty()) status_ = status;
  finished_ = true;
  if (drawn_ && (tty_ || done_ != drawn_done_ || status_ != drawn_status_)) draw(true);
}

void ProgressBar::message(const std::string& line) {
  std::fprintf(stderr, "%s%s\n", tty_ && drawn_ ? "\r\033[K" : "", line.c_str());
  if (tty_ && drawn_ && !finished_) draw(false);
  std::fflush(stderr);
}

void ProgressBar::draw(bool final) {
  drawn_ = true;
  drawn_done_ = done_;
  drawn_status_ = status_;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(done_ - first_) / elapsed : 0.0;
  const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(done_) / static_cast<double>(total_)) : 0.0;
  const double eta = rate > 0 ? static_cast<double>(total_ - done_) / rate : NAN;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(kWidth, '.');
  std::fprintf(stderr, "%s%s [%s] %3.0f%% %lld/%lld %s %s/s elapsed %s eta %s%s%s", tty_ ? "\r\033[K" : "",
               label_.c_str(), bar.c_str(), frac * 100.0, static_cast<long long>(done_),
               static_cast<long long>(total_), unit_.c_str(), human_count(rate).c_str(),
               human_duration(elapsed).c_str(), human_duration(final ? 0.0 : eta).c_str(),
               status_.empty() ? "" : "  ", status_.c_str());
  if (final || !tty_) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace nf::util
