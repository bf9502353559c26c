#pragma once
// The peers bench_inference runs beside ours on the same GGUF files: mainline llama.cpp's and
// ik_llama.cpp's own llama-bench, built by tools/peers/build_llamacpp.sh and build_ik_llama.sh
// into <peers dir>/<name>/bin (an ORIGIN file beside bin/ names the commit), and their
// llama-quantize, which makes the files people download from our F32 GGUF.
//
// One measurement of a peer = its llama-bench on one file with -r 1 (one timed repetition after its
// own warm-up), -o json, prefill of the prompt (-p P -n 0) and decode of G tokens after a cached
// prompt of P: mainline's -d P (a separate process: -d applies to every test of a run), or
// ik_llama.cpp's -gp P,G (which times the G tokens only). KV cache f16 and flash attention as
// each llama-bench defaults (f16; mainline "auto", ik_llama.cpp on), read back from its JSON.
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "bench_process.h"

namespace nf::bench {

struct Peer {
  std::string name;                // its folder under the peers dir: "llamacpp", "ik_llama"
  std::string label;               // in the tables
  std::string bin;                 // its programs
  std::string origin;              // ORIGIN's line: the commit and the build's options
  bool depth = false;              // its llama-bench has -d (decode after a cached prompt); else -gp P,G
  std::vector<std::string> flags;  // of every llama-bench run: ik_llama.cpp's load-time repacking, -rtr 1
  std::string bench() const { return bin + "/llama-bench"; }
  std::string quantize() const { return bin + "/llama-quantize"; }
};

// The peers bench_inference knows, in the tables' order.
inline const std::vector<std::string>& peer_names() {
  static const std::vector<std::string> names{"llamacpp", "ik_llama"};
  return names;
}

inline bool is_executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The peer `name` when it is installed under `dir` (its llama-bench and ORIGIN exist).
inline std::optional<Peer> installed_peer(const std::string& dir, const std::string& name) {
  Peer p{name, name == "ik_llama" ? "ik_llama.cpp -rtr" : "llama.cpp", dir + "/" + name + "/bin", "", false, {}};
  std::ifstream origin(dir + "/" + name + "/ORIGIN");
  if (!origin || !std::getline(origin, p.origin) || !is_executable(p.bench())) return std::nullopt;
  const ProcessResult help = run_process({p.bench(), "--help"}, true);
  p.depth = (help.out + help.err).find("--n-depth") != std::string::npos;
  if (name == "ik_llama") p.flags = {"-rtr", "1"};
  return p;
}

// The peers `wanted` names under `dir`: "none" none, empty every installed one; a named peer that is
// not installed is an error naming its build script.
inline std::vector<Peer> find_peers(const std::string& dir, const std::vector<std::string>& wanted) {
  std::vector<Peer> peers;
  if (wanted.size() == 1 && wanted[0] == "none") return peers;
  for (const std::string& name : wanted)
    NF_CHECK(std::find(peer_names().begin(), peer_names().end(), name) != peer_names().end(),
             "bench_inference: --peers: unknown peer '", name, "' (known: llamacpp, ik_llama, none)");
  for (const std::string& name : peer_names()) {
    const bool named = std::find(wanted.begin(), wanted.end(), name) != wanted.end();
    if (!wanted.empty() && !named) continue;
    std::optional<Peer> p = installed_peer(dir, name);
    NF_CHECK(p || !named, "bench_inference: --peers ", name, ": no ", dir, "/", name,
             "/bin/llama-bench with an ORIGIN (build it with tools/peers/build_", name == "ik_llama" ? "ik_llama" : "llamacpp",
             ".sh, or pass --peers-dir)");
    if (p) peers.push_back(*p);
  }
  return peers;
}

// ik_llama.cpp's own type of about the bits per weight of a type people download, as its
// llama-quantize names it (8337e4cd3, examples/quantize/quantize.cpp): the row-interleaved Q8_0_R8,
// Q4_0_R8 and Q6_K_R4, and its non-linear IQ4_KS (4.25 bpw) and IQ5_KS (5.25 bpw) for the 4- and
// 5-bit K mixes; "" where it has none (f32).
inline std::string ik_own_type(const std::string& type) {
  if (type == "q8_0") return "Q8_0_R8";
  if (type == "q4_0") return "Q4_0_R8";
  if (type == "q6_k") return "Q6_K_R4";
  if (type == "q4_k_m" || type == "q4_k_s" || type == "q4_k") return "IQ4_KS";
  if (type == "q5_k_m" || type == "q5_k_s" || type == "q5_k") return "IQ5_KS";
  return "";
}

inline std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// `in` (an F32 GGUF) quantised to `type` (llama-quantize's name, any case) by `peer`'s llama-quantize,
// with its default per-tensor mix (not --pure): "" or why not.
inline std::string peer_quantize(const Peer& peer, const std::string& in, const std::string& out, const std::string& type) {
  const ProcessResult r = run_process({peer.quantize(), in, out, upper(type)}, true);
  return r.ok() ? "" : peer.name + "'s llama-quantize " + upper(type) + ": " + failure_line(r);
}

inline double file_mib(const std::string& path) {
  struct stat st{};
  return stat(path.c_str(), &st) == 0 ? static_cast<double>(st.st_size) / (1 << 20) : 0.0;
}

// One llama-bench measurement: tokens/s of prefill and decode, the peak RSS of its processes, its
// flash attention setting as its JSON states it, or why it failed.
struct PeerRun {
  std::optional<double> prefill, decode;
  double peak_mib = 0;
  std::string flash_attn, error;
};

inline PeerRun run_peer(const Peer& peer, const std::string& model, int threads, int64_t prompt, int64_t gen,
                        const std::vector<std::string>& flags) {
  const std::string p = std::to_string(prompt), g = std::to_string(gen);
  std::vector<std::vector<std::string>> tests;
  if (peer.depth) tests = {{"-p", p, "-n", "0"}, {"-p", "0", "-n", g, "-d", p}};
  else tests = {{"-p", p, "-n", "0", "-gp", p + "," + g}};
  PeerRun run;
  for (const std::vector<std::string>& test : tests) {
    std::vector<std::string> args{peer.bench(), "-m", model, "-t", std::to_string(threads), "-r", "1", "-o", "json"};
    args.insert(args.end(), test.begin(), test.end());
    args.insert(args.end(), flags.begin(), flags.end());
    const ProcessResult r = run_process(args, true);
    run.peak_mib = std::max(run.peak_mib, r.peak_mib);
    const json j = r.ok() ? json::parse(r.out, nullptr, false) : json();
    if (!j.is_array() || j.empty()) {
      if (r.ok()) {
        run.error = "llama-bench printed no JSON array";
      } else {  // once more with -v: ik_llama.cpp's loader says why only then
        args.push_back("-v");
        run.error = failure_line(run_process(args, true));
      }
      return run;
    }
    for (const json& t : j) {
      if (t.contains("flash_attn")) run.flash_attn = t["flash_attn"].dump();
      (t.value("n_gen", 0) == 0 ? run.prefill : run.decode) = t.value("avg_ts", 0.0);
    }
  }
  return run;
}

}  // namespace nf::bench
