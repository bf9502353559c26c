#pragma once
// A terminal progress bar for long work: fraction done, rate, elapsed time and ETA, redrawn in
// place on stderr at most ~10 times a second; a plain line per update when stderr is not a
// terminal (logs, CI), throttled to one every few seconds. Quick jobs stay quiet: nothing is drawn
// in the first half second, and a job that ends within it prints nothing at all.
//
//   ProgressBar bar(total_steps, "train", "steps");
//   for (...) { ...; bar.update(step + 1, "loss 2.31"); }
//   bar.finish();
#include <chrono>
#include <cstdint>
#include <string>

namespace nf::util {

class ProgressBar {
 public:
  // `first` is where the work starts (a resumed run's step): rate and ETA count from there.
  ProgressBar(int64_t total, std::string label, std::string unit = "it", int64_t first = 0);
  ~ProgressBar();
  // Sets progress to `done` (of total); `status` is shown after the bar (e.g. "loss 2.31").
  void update(int64_t done, const std::string& status = "");
  void finish(const std::string& status = "");  // draws the final state and ends the line
  // Prints a line of its own on stderr (a validation result) above the bar, which is redrawn.
  void message(const std::string& line);

 private:
  void draw(bool final);

  int64_t total_;
  int64_t first_ = 0;
  int64_t done_ = 0;
  std::string label_, unit_, status_;
  bool tty_;
  bool finished_ = false;
  bool drawn_ = false;
  int64_t drawn_done_ = -1;     // what the last line showed: a log (not a terminal) that already
  std::string drawn_status_;    // holds the final state gets no second, identical final line
  std::chrono::steady_clock::time_point start_, last_draw_;
};

// "1.2 k", "3.4 M": a rate or count in engineering units.
std::string human_count(double value);
// "1:02:03" or "02:03"
std::string human_duration(double seconds);

}  // namespace nf::util
