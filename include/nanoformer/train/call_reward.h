#pragma once
// MiniMind's reward terms for a rollout's tool calls (jingyaogong/minimind@d65ef2c,
// trainer/train_agent.py, calculate_rewards, the branch for completions with tool calls), on its
// transcript (infer/tool_transcript.h), each MiniMind's 0.5 as `weight` w:
//   - w * sum over turns of |count("<tool_call>") - count("</tool_call>")|   tags left open or unopened
//   + w                     when it called and every call was valid,
//   - w * invalid calls     when some were not (MiniMind's tool gap without its expected-call count,
//                           which its data carries and a task file does not)
//   - w                     when unfinished (a call past the turn limit)
// A call is valid when it names a tool of the registry and the tool answered without an error.
// MiniMind's GT score becomes the verifier's reward on the final answer (train/reward_verifier.h);
// its repetition penalty, its length score and reward model for answers without calls, and its clip
// to [-3, 3] are not taken.
#include "nanoformer/infer/tool_transcript.h"

namespace nf::train {

double call_reward(const infer::ToolTranscript& transcript, double weight);

}  // namespace nf::train
