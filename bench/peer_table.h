#pragma once
// bench_inference's table of the files people download, ours beside the peers (bench/peers.h): per
// dense preset (GGUF's llama and gpt2 hold no experts here) and type, one GGUF file that every
// engine reads: our F32 GGUF of the preset (random weights, seed 1), and each other type made from
// it by mainline's llama-quantize with its default per-tensor mix (`Q4_K_M`: attn_v and half of
// ffn_down in Q6_K, the table in Q6_K, ...) where mainline is installed, else by our own
// quantize_weights (a plain type: every Linear weight and the table in the type, as llama-quantize
// --pure; a mix: llama-quantize's per-tensor types, nf::models::quantize_spec). Where ik_llama.cpp is
// installed its own type of about the same bits (peers.h's ik_own_type) is made from the same F32
// file by its llama-quantize and timed as a separate row, without -rtr.
//
// At each thread count, in each round, ours (the decode worker) and every peer run on the file
// one after another, the order rotating each round; all on an f16 KV cache (llama-bench's default).
// The limit is the read bandwidth at that thread count over the bytes a decode step reads (the
// file's weights a token uses, as ours counts them, plus the cache at the mean depth); peak is the
// process's RSS high-water mark (the larger of mainline's two processes), beside the file and the
// cache: the target is a peak no larger than their sum.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_series.h"
#include "peers.h"

namespace nf::bench {

// The KV cache of every side: llama-bench's default.
constexpr const char* kPeerCache = "f16";

struct PeerTableSettings {
  std::string self;             // this binary: our workers
  int64_t prompt = 512, gen = 128;  // prefill of `prompt` tokens; `gen` decode steps after them
  std::vector<int> threads;
  std::vector<Peer> peers;          // timed on every file
  std::optional<Peer> quantizer;    // mainline's, when installed: makes every file but f32
  std::optional<Peer> ik;           // ik_llama.cpp's, when installed and timed: its own types
};

// One type's file of a preset, and ik_llama.cpp's own-type file made from the same F32 file.
struct PeerFile {
  std::string preset, type, path, made_by, note;  // note: why there is no file
  std::string ik_type, ik_path, ik_note;
  double mib = 0, ik_mib = 0;  // the files' sizes (they are removed before the table prints)
};

// A file at one thread count: every engine's numbers, by label ("ours" and the peers').
struct PeerRow {
  const PeerFile* file;
  int threads;
  std::map<std::string, Results> sides;
  std::vector<std::string> labels;  // "ours", the peers', "ik <TYPE>"
};

inline std::string ik_label(const PeerFile& f) { return "ik_llama.cpp " + f.ik_type; }
inline bool is_own_type(const PeerFile& f, const std::string& label) { return !f.ik_type.empty() && label == ik_label(f); }

// Every (preset, type) file into `dir`; the F32 file of a preset first, the others from it.
inline std::vector<PeerFile> make_peer_files(const PeerTableSettings& s, const std::vector<std::string>& presets,
                                             const std::vector<std::string>& types, const std::filesystem::path& dir) {
  std::vector<PeerFile> files;
  for (const std::string& preset : presets) {
    const std::string f32 = (dir / (preset + "-f32.gguf")).string();
    const ProcessResult wrote = run_process({s.self, "--worker", "gguf", "--preset", preset, "--type", "f32", "--model", f32}, true);
    for (const std::string& type : types) {
      PeerFile f{preset, type, (dir / (preset + "-" + type + ".gguf")).string(), "", "", "", "", "", 0, 0};
      if (!wrote.ok()) {
        f.note = "our F32 GGUF: " + failure_line(wrote);
      } else if (type == "f32") {
        f.path = f32, f.made_by = "our writer";
      } else if (s.quantizer) {
        f.note = peer_quantize(*s.quantizer, f32, f.path, type);
        f.made_by = "llama-quantize " + upper(type);
      } else {  // ours: a plain type as --pure, a mix as llama-quantize's
        const ProcessResult r =
            run_process({s.self, "--worker", "gguf", "--preset", preset, "--type", type, "--model", f.path}, true);
        if (!r.ok()) f.note = "our quantize_weights " + type + ": " + failure_line(r);
        f.made_by = "our quantize_weights";
      }
      f.ik_type = s.ik && wrote.ok() ? ik_own_type(type) : "";
      if (!f.ik_type.empty()) {
        f.ik_path = (dir / (preset + "-ik-" + f.ik_type + ".gguf")).string();
        f.ik_note = peer_quantize(*s.ik, f32, f.ik_path, f.ik_type);
        f.ik_mib = file_mib(f.ik_path);
      }
      f.mib = file_mib(f.path);
      files.push_back(f);
    }
  }
  return files;
}

// One round of a row: every side once, in an order that rotates with the round; then the ratios of
// ours to each peer within the round, and each side's decode against the limit.
inline void measure_peer_row(const PeerTableSettings& s, PeerRow& row, const Series& bandwidth, int round,
                             std::map<std::string, std::string>& flash_attn) {
  const PeerFile& f = *row.file;
  std::vector<std::function<void()>> order;
  row.labels = {"ours"};
  Results& ours = row.sides["ours"];
  order.push_back([&] {
    run_into({s.self, "--worker", "decode", "--preset", f.preset, "--model", f.path, "--prompt", std::to_string(s.prompt),
              "--new", std::to_string(s.gen + 1), "--threads", std::to_string(row.threads), "--cache-type", kPeerCache},
             {{"prefill_tokens_per_s", &ours["prefill"]}, {"decode_tokens_per_s", &ours["decode"]},
              {"kv_read_bytes_per_token", &ours["kv read"]}, {"bytes_per_token", &ours["bytes per token"]},
              {"cache_mib", &ours["cache"]}},
             &ours["peak"]);
  });
  const auto peer_side = [&](const Peer& peer, const std::string& label, const std::string& path,
                             const std::vector<std::string>& flags) {
    row.labels.push_back(label);
    Results& r = row.sides[label];
    order.push_back([&s, &r, &row, &flash_attn, peer, label, path, flags] {
      r["prefill"].last_of_round.reset(), r["decode"].last_of_round.reset();
      const PeerRun run = run_peer(peer, path, row.threads, s.prompt, s.gen, flags);
      if (!run.error.empty()) r["decode"].note = "failed: " + run.error;
      if (run.prefill) r["prefill"].add(*run.prefill);
      if (run.decode) r["decode"].add(*run.decode);
      if (run.error.empty()) r["peak"].add(run.peak_mib);
      if (!run.flash_attn.empty()) flash_attn[peer.name] = run.flash_attn;
    });
  };
  for (const Peer& peer : s.peers) peer_side(peer, peer.label, f.path, peer.flags);
  if (s.ik && !f.ik_type.empty() && f.ik_note.empty()) peer_side(*s.ik, ik_label(f), f.ik_path, {});
  std::rotate(order.begin(), order.begin() + static_cast<long>(static_cast<size_t>(round) % order.size()), order.end());
  for (const auto& run : order) run();

  const double bytes = ours["bytes per token"].last_of_round.value_or(0);
  const double limit = bandwidth.last_of_round && bytes > 0
                           ? *bandwidth.last_of_round * 1e9 / (bytes + ours["kv read"].last_of_round.value_or(0))
                           : 0;
  if (limit > 0) ours["limit"].add(limit);
  std::printf("round %d %-16s %-7s %d thr:", round + 1, f.preset.c_str(), f.type.c_str(), row.threads);
  for (const std::string& label : row.labels) {
    Results& r = row.sides[label];
    for (const char* phase : {"prefill", "decode"}) {
      const Series &a = ours[phase], &b = r[phase];
      if (label != "ours" && a.last_of_round && b.last_of_round)
        ours[std::string(phase) + "/" + label].add(*a.last_of_round / *b.last_of_round);
    }
    // the limit counts this file's bytes: not those of ik_llama.cpp's own file
    if (limit > 0 && r["decode"].last_of_round && !is_own_type(f, label))
      r["decode/limit"].add(*r["decode"].last_of_round / limit);
    std::printf(" %s %s / %s;", label.c_str(), this_round(r["prefill"], "%.0f").c_str(), this_round(r["decode"], "%.1f").c_str());
  }
  std::printf(" (prefill / decode tok/s)\n");
  std::fflush(stdout);
}

inline void print_peer_table(const PeerTableSettings& s, const std::vector<PeerFile>& files, std::vector<PeerRow>& rows,
                             const std::map<std::string, std::string>& flash_attn) {
  std::printf("the files people download, ours beside the peers on the same GGUF: prefill of a %lld-token prompt, "
              "decode of %lld tokens after it; f16 KV cache on every side; each llama-bench with -r 1 per round "
              "(after its own warm-up), output read from -o json\n",
              static_cast<long long>(s.prompt), static_cast<long long>(s.gen));
  if (s.peers.empty()) std::printf("peers: none (--peers none, or none installed: tools/peers/build_llamacpp.sh, build_ik_llama.sh)\n");
  for (const Peer& p : s.peers) {
    const auto fa = flash_attn.find(p.name);
    std::printf("%s: %s; %s; flash attention its default (%s, its JSON's flash_attn: %s)%s\n", p.label.c_str(),
                p.origin.c_str(), p.depth ? "decode by -d (depth)" : "decode by -gp P,G",
                p.name == "ik_llama" ? "on" : "auto", fa == flash_attn.end() ? "n/a" : fa->second.c_str(),
                p.name == "ik_llama" ? "; -rtr 1: its weights repacked at load into row-interleaved layouts" : "");
  }
  if (s.ik) std::printf("ik_llama.cpp <TYPE>: a file of ik_llama.cpp's own type made by its llama-quantize from the same F32 GGUF, timed without -rtr\n");
  std::printf("files: f32 by our writer; the others by %s\n",
              s.quantizer ? "mainline's llama-quantize from it (its default mix)" : "our quantize_weights (plain types as --pure, mixes as llama-quantize's; no mainline llama-quantize)");
  std::printf("limit = read GB/s at that thread count / (the file's weight bytes a token reads + the f16 cache's at the "
              "mean depth); over = peak - (file + cache)\n");
  std::printf("%-16s %-7s %3s %-22s %8s | %8s %7s %6s | %8s %7s %6s | %8s %8s %7s\n", "preset", "type", "thr", "engine",
              "file", "prefill", "ours/", "ours/", "decode", "ours/", "of", "cache", "peak", "over");
  std::printf("%-16s %-7s %3s %-22s %8s | %8s %7s %6s | %8s %7s %6s | %8s %8s %7s\n", "", "", "", "", "MiB", "tok/s",
              "this", "f32", "tok/s", "this", "limit", "MiB", "MiB", "MiB");
  for (PeerRow& row : rows) {
    const PeerFile& f = *row.file;
    if (!f.note.empty()) {
      std::printf("%-16s %-7s %3d (no file: %s)\n", f.preset.c_str(), f.type.c_str(), row.threads, f.note.c_str());
      continue;
    }
    Results& ours = row.sides["ours"];
    std::string vs_f32 = "-";
    for (PeerRow& other : rows)
      if (other.file->preset == f.preset && other.file->type == "f32" && other.threads == row.threads &&
          !ours["prefill"].values.empty() && !other.sides["ours"]["prefill"].values.empty()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.2fx", median(ours["prefill"].values) / median(other.sides["ours"]["prefill"].values));
        vs_f32 = buf;
      }
    const double cache = ours["cache"].values.empty() ? 0.0 : median(ours["cache"].values);
    bool first = true;
    for (const std::string& label : row.labels) {
      Results& r = row.sides[label];
      const bool own = is_own_type(f, label);
      const double mib = own ? f.ik_mib : f.mib;
      std::string over = "n/a";
      if (!r["peak"].values.empty() && cache > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%+.0f", median(r["peak"].values) - mib - cache);
        over = buf;
      }
      const bool is_ours = label == "ours";
      std::printf("%-16s %-7s %3d %-22s %8.1f | %8s %7s %6s | %8s %7s %6s | %8s %8s %7s\n", first ? f.preset.c_str() : "",
                  first ? f.type.c_str() : "", row.threads, label.c_str(), mib, cell(r["prefill"], "%.0f").c_str(),
                  is_ours ? "-" : cell(ours["prefill/" + label], "%.2fx").c_str(), is_ours ? vs_f32.c_str() : "",
                  cell(r["decode"], "%.1f").c_str(), is_ours ? "-" : cell(ours["decode/" + label], "%.2fx").c_str(),
                  own ? "n/a" : cell(r["decode/limit"], "%.0f%%", 100).c_str(), is_ours ? cell(ours["cache"], "%.1f").c_str() : "",
                  cell(r["peak"], "%.0f").c_str(), over.c_str());
      first = false;
    }
    for (const std::string& label : row.labels) {  // each side's distinct notes once
      std::vector<std::string> notes;
      for (const auto& [name, series] : row.sides[label])
        if (!series.note.empty() && std::find(notes.begin(), notes.end(), series.note) == notes.end())
          notes.push_back(series.note);
      for (const std::string& note : notes) std::printf("  %s: %s\n", label.c_str(), note.c_str());
    }
    if (!f.ik_note.empty()) std::printf("  ik_llama.cpp %s: no file: %s\n", f.ik_type.c_str(), f.ik_note.c_str());
  }
  std::printf("(medians over rounds; ratios are medians of the ratios within each round; \"-\" or n/a: no number, "
              "the note below the row says why)\n\n");
}

}  // namespace nf::bench
