#pragma once
// bench_inference --plot FILE.png: the peers' table (peer_table.h) as a picture: for each preset a
// row of two panels, prefill and decode tokens/s, one group of bars per file type and one bar per
// engine (ours, each peer on the same file, ik_llama.cpp on its own type of the same bits), the
// medians over rounds, at one thread count. A missing bar is a file that engine could not read.
#include <map>
#include <string>
#include <vector>

#include "nanoformer/util/plot.h"
#include "peer_table.h"

namespace nf::bench {

inline void write_peer_chart(const std::string& path, const PeerTableSettings& s, std::vector<PeerRow>& rows, int threads,
                             int rounds) {
  std::vector<std::string> presets, types, engines{"nanoformer"};
  const auto add = [](std::vector<std::string>& list, const std::string& v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
  };
  for (const Peer& p : s.peers) add(engines, p.label);
  const std::string own = "ik_llama.cpp, its own type";
  for (const PeerRow& row : rows)
    if (row.threads == threads) add(presets, row.file->preset), add(types, row.file->type);
  for (const PeerRow& row : rows)
    if (row.threads == threads && !row.file->ik_type.empty()) add(engines, own);
  std::vector<plot::LineChart> panels;
  for (const std::string& preset : presets)
    for (const char* phase : {"prefill", "decode"}) {
      plot::LineChart chart;
      chart.title = preset + (std::string(phase) == "prefill" ? ": prefill of " + std::to_string(s.prompt) + " tokens"
                                                              : ": decode of " + std::to_string(s.gen) + " after " +
                                                                    std::to_string(s.prompt));
      chart.y_label = "tokens/s (higher is better)";
      chart.x_categories = types;
      chart.legend_above = true;
      for (size_t e = 0; e < engines.size(); ++e) {
        plot::Series series{engines[e], {}, {}, plot::LineStyle::bars, static_cast<int>(e), 0};
        for (size_t t = 0; t < types.size(); ++t)
          for (PeerRow& row : rows) {
            if (row.threads != threads || row.file->preset != preset || row.file->type != types[t]) continue;
            std::string label = e == 0 ? "ours" : engines[e];
            if (engines[e] == own) label = row.file->ik_type.empty() ? "" : ik_label(*row.file);
            const auto side = row.sides.find(label);
            if (side == row.sides.end()) continue;
            const auto values = side->second.find(phase);
            if (values == side->second.end() || values->second.values.empty()) continue;
            series.x.push_back(static_cast<double>(t));
            series.y.push_back(median(values->second.values));
          }
        if (!series.x.empty()) chart.series.push_back(series);
      }
      panels.push_back(chart);
    }
  plot::Layout layout;
  layout.title = "tokens/s by GGUF type and engine, the same file for each: " + cpu_model() + ", " +
                 std::to_string(threads) + (threads == 1 ? " thread" : " threads") + ", medians of " +
                 std::to_string(rounds) + " rounds";
  layout.columns = 2;
  layout.panel_width = 820;
  layout.panel_height = 460;
  plot::write_line_charts(path, panels, layout);
  std::printf("chart: %s\n", path.c_str());
}

}  // namespace nf::bench
