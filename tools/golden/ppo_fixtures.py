"""PPO's rewards, GAE advantages and returns, clipped policy and value losses and their gradients,
from TRL's PPO trainer and MiniMind's train_ppo.py, for tests/train/test_ppo.cpp.

Writes tests/golden/ppo.json. Re-run (needs torch and TRL 0.29.1, the last TRL with a PPO trainer:
TRL 1.x removed trl.experimental.ppo; not needed by `make test`):
    python3 -m venv /tmp/venv-ppo && /tmp/venv-ppo/bin/pip install torch
    /tmp/venv-ppo/bin/pip install --no-deps --target /tmp/trl-0.29.1 trl==0.29.1
    PYTHONPATH=/tmp/trl-0.29.1 /tmp/venv-ppo/bin/python tools/golden/ppo_fixtures.py

Five sampled responses of up to W = 6 tokens (eos 2, TRL's pad 0), some with tokens after their
first eos, one without eos, one whose eos is its last token; float64 log-probs under the policy
(the leaf), when sampled and under the reference; the critic's values when sampled and now (the
leaf); a score per response.

TRL (huggingface/trl v0.29.1, trl/experimental/ppo/ppo_trainer.py): its own truncate_response,
first_true_indices, masked_mean and masked_whiten are called; trl_case copies PPOTrainer.train's
lines from "be very careful with padding_mask_p1" to "loss = pg_loss + args.vf_coef * vf_loss"
(kl_estimator k1, TRL's default; whiten_rewards off), with the per-token log-probs and values given instead
of computed by the models.

MiniMind (jingyaogong/minimind at d65ef2c00ebc6082f9df11541e1b191655eddb00, trainer/train_ppo.py):
minimind_case copies ppo_train_epoch's lines from the response masks ("resp_idx = ...") to
"value_loss = ...", one minibatch holding every response, with the rollout engine's completion mask
(all ones) and args.* as arguments.

Gradients are torch.autograd's of the total loss (TRL: pg_loss + vf_coef vf_loss; MiniMind:
policy_loss + vf_coef value_loss) w.r.t. the log-probs and the values.
"""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import torch
import trl
from trl.experimental.ppo.ppo_trainer import INVALID_LOGPROB, masked_mean, masked_whiten, truncate_response
from trl.experimental.utils import first_true_indices

OUT = Path(__file__).resolve().parents[2] / "tests" / "golden" / "ppo.json"
EOS, PAD = 2, 0


def trl_case(responses, logps, old_logps, ref_logps, old_values, new_values, scores, args):
    new_logps_leaf = logps.clone().requires_grad_(True)
    vpred_leaf = new_values.clone().requires_grad_(True)
    postprocessed_responses = truncate_response(EOS, PAD, responses)
    sequence_lengths = first_true_indices(postprocessed_responses == PAD) - 1
    logprobs, ref_logprobs, values = old_logps.clone(), ref_logps.clone(), old_values.clone()
    # trl v0.29.1 trl/experimental/ppo/ppo_trainer.py, PPOTrainer.train, unchanged but for the inputs
    response_idxs = torch.arange(responses.shape[1], device=responses.device).repeat(responses.shape[0], 1)
    padding_mask = response_idxs > sequence_lengths.unsqueeze(1)
    logprobs = torch.masked_fill(logprobs, padding_mask, INVALID_LOGPROB)
    ref_logprobs = torch.masked_fill(ref_logprobs, padding_mask, INVALID_LOGPROB)
    sequence_lengths_p1 = sequence_lengths + 1
    padding_mask_p1 = response_idxs > (sequence_lengths_p1.unsqueeze(1))
    values = torch.masked_fill(values, padding_mask_p1, 0)

    logr = ref_logprobs - logprobs
    kl = -logr if args.kl_estimator == "k1" else (logr.exp() - 1) - logr  # Else statement is k3
    non_score_reward = -args.kl_coef * kl
    rewards = non_score_reward.clone()
    actual_start = torch.arange(rewards.size(0), device=rewards.device)
    actual_end = torch.where(sequence_lengths_p1 < rewards.size(1), sequence_lengths_p1, sequence_lengths)
    rewards[actual_start, actual_end] += scores

    lastgaelam = 0
    advantages_reversed = []
    gen_length = responses.shape[1]
    for t in reversed(range(gen_length)):
        nextvalues = values[:, t + 1] if t < gen_length - 1 else 0.0
        delta = rewards[:, t] + args.gamma * nextvalues - values[:, t]
        lastgaelam = delta + args.gamma * args.lam * lastgaelam
        advantages_reversed.append(lastgaelam)
    advantages = torch.stack(advantages_reversed[::-1], axis=1)
    returns = advantages + values
    advantages = masked_whiten(advantages, ~padding_mask)
    advantages = torch.masked_fill(advantages, padding_mask, 0)

    mb_advantage, mb_logprobs, mb_return, mb_values = advantages, logprobs, returns, values
    new_logprobs = torch.masked_fill(new_logps_leaf, padding_mask, INVALID_LOGPROB)
    vpred = torch.masked_fill(vpred_leaf, padding_mask_p1, 0)
    vpredclipped = torch.clamp(vpred, mb_values - args.cliprange_value, mb_values + args.cliprange_value)
    vf_losses1 = torch.square(vpred - mb_return)
    vf_losses2 = torch.square(vpredclipped - mb_return)
    vf_loss_max = torch.max(vf_losses1, vf_losses2)
    vf_loss = 0.5 * masked_mean(vf_loss_max, ~padding_mask_p1)
    vf_clipfrac = masked_mean((vf_losses2 > vf_losses1).float(), ~padding_mask_p1)
    logprobs_diff = new_logprobs - mb_logprobs
    ratio = torch.exp(logprobs_diff)
    pg_losses = -mb_advantage * ratio
    pg_losses2 = -mb_advantage * torch.clamp(ratio, 1.0 - args.cliprange, 1.0 + args.cliprange)
    pg_loss_max = torch.max(pg_losses, pg_losses2)
    pg_loss = masked_mean(pg_loss_max, ~padding_mask)
    loss = pg_loss + args.vf_coef * vf_loss
    # end of TRL's lines
    pg_clipfrac = masked_mean((pg_losses2 > pg_losses).float(), ~padding_mask)
    loss.backward()
    return {"source": "trl", "style": "trl", "kl_estimator": args.kl_estimator, "kl_coef": args.kl_coef,
            "gamma": args.gamma, "lam": args.lam, "cliprange": args.cliprange,
            "cliprange_value": args.cliprange_value, "vf_coef": args.vf_coef,
            "policy_mask": (~padding_mask).double().tolist(), "value_mask": (~padding_mask_p1).double().tolist(),
            "rewards": rewards.tolist(), "advantages": advantages.tolist(), "returns": returns.tolist(),
            "policy_loss": pg_loss.item(), "value_loss": vf_loss.item(), "loss": loss.item(),
            "clip_fraction": pg_clipfrac.item(), "value_clip_fraction": vf_clipfrac.item(),
            "grad_logps": new_logps_leaf.grad.tolist(), "grad_values": vpred_leaf.grad.tolist()}


def minimind_case(completion_ids, logps, old_resp_logp, ref_resp_logp, old_values, new_values, rewards, args):
    mb_resp_logp = logps.clone().requires_grad_(True)
    mb_resp_values = new_values.clone().requires_grad_(True)
    resp_labels = completion_ids
    B = resp_labels.size(0)
    completion_mask = torch.ones_like(resp_labels)  # the torch rollout engine's completion_mask
    inds = torch.arange(B)
    # jingyaogong/minimind d65ef2c trainer/train_ppo.py, ppo_train_epoch, unchanged but for `args`,
    # the device and the rollout's values (given)
    resp_idx = torch.arange(resp_labels.size(1)).unsqueeze(0)
    resp_pad_mask = completion_mask.bool()
    resp_lengths = resp_pad_mask.sum(dim=1); valid_resp = resp_lengths > 0; eos_mask = resp_labels.eq(EOS) & resp_pad_mask
    has_eos = eos_mask.any(dim=1); eos_pos = torch.argmax(eos_mask.int(), dim=1)
    resp_lengths = torch.where(has_eos, eos_pos + 1, resp_lengths).long().clamp(min=1)
    resp_policy_mask = ((resp_idx < resp_lengths.unsqueeze(1)) & resp_pad_mask).float()
    resp_value_mask = resp_policy_mask.clone()

    old_resp_values = old_values * resp_value_mask
    token_rewards = torch.zeros_like(old_resp_logp)
    last_idx = resp_lengths - 1  # [B]
    token_rewards[torch.arange(B)[valid_resp], last_idx[valid_resp]] += rewards[valid_resp]  # 末尾加外部奖励

    gen_len = old_resp_values.size(1); lastgaelam = torch.zeros(B, dtype=old_values.dtype); advs_rev = []
    for t in reversed(range(gen_len)):
        nv = old_resp_values[:, t + 1] if t < gen_len - 1 else 0.0
        delta = token_rewards[:, t] + args.gamma * nv - old_resp_values[:, t]
        lastgaelam = delta + args.gamma * args.lam * lastgaelam
        advs_rev.append(lastgaelam)
    advantages = torch.stack(advs_rev[::-1], dim=1)  # [B, R]
    returns = advantages + old_resp_values  # [B, R]

    adv_mean = (advantages * resp_policy_mask).sum() / resp_policy_mask.sum().clamp(min=1)
    adv_var = ((advantages - adv_mean) ** 2 * resp_policy_mask).sum() / resp_policy_mask.sum().clamp(min=1)
    advantages = (advantages - adv_mean) * torch.rsqrt(adv_var + 1e-8) * resp_policy_mask

    log_ratio = mb_resp_logp - old_resp_logp[inds]
    approx_kl = (0.5 * (log_ratio ** 2) * resp_policy_mask[inds]).sum() / resp_policy_mask[inds].sum().clamp(min=1)
    ratio = torch.exp(log_ratio)
    clipfrac = ((((ratio - 1.0).abs() > args.clip_epsilon).float() * resp_policy_mask[inds]).sum()
                / resp_policy_mask[inds].sum().clamp(min=1))
    kl_ref_penalty = ((torch.exp(ref_resp_logp[inds] - mb_resp_logp) - (ref_resp_logp[inds] - mb_resp_logp) - 1.0)
                      * resp_policy_mask[inds]).sum() / resp_policy_mask[inds].sum().clamp(min=1)
    policy_loss = ((torch.max(-advantages[inds] * ratio,
                              -advantages[inds] * torch.clamp(ratio, 1.0 - args.clip_epsilon, 1.0 + args.clip_epsilon))
                   * resp_policy_mask[inds]).sum() / resp_policy_mask[inds].sum().clamp(min=1)
                   + args.kl_coef * kl_ref_penalty)
    value_loss = 0.5 * (torch.max((mb_resp_values - returns[inds]) ** 2,
                                  (torch.clamp(mb_resp_values, old_resp_values[inds] - args.cliprange_value,
                                               old_resp_values[inds] + args.cliprange_value) - returns[inds]) ** 2)
                        * resp_value_mask[inds]).sum() / resp_value_mask[inds].sum().clamp(min=1)
    loss = (policy_loss + args.vf_coef * value_loss) / args.accumulation_steps
    # end of MiniMind's lines
    loss.backward()
    return {"source": "minimind", "style": "minimind", "kl_estimator": "k3", "kl_coef": args.kl_coef,
            "gamma": args.gamma, "lam": args.lam, "cliprange": args.clip_epsilon,
            "cliprange_value": args.cliprange_value, "vf_coef": args.vf_coef,
            "policy_mask": resp_policy_mask.tolist(), "value_mask": resp_value_mask.tolist(),
            "rewards": token_rewards.tolist(), "advantages": advantages.tolist(), "returns": returns.tolist(),
            "policy_loss": policy_loss.item(), "value_loss": value_loss.item(), "loss": loss.item(),
            "approx_kl": approx_kl.item(), "kl_ref": kl_ref_penalty.item(),
            "grad_logps": mb_resp_logp.grad.tolist(), "grad_values": mb_resp_values.grad.tolist()}


def main():
    torch.manual_seed(45)
    # after the first eos: junk (TRL's truncate_response pads it; MiniMind's masks drop it)
    responses = torch.tensor([[5, 6, EOS, 7, EOS, 8],    # 3 tokens
                              [5, 6, 7, 8, 9, 5],        # no eos: 6 (the width)
                              [EOS, 9, 9, 9, 9, 9],      # 1
                              [7, 7, 8, 9, EOS, 6],      # 5
                              [9, 8, 7, 6, 5, EOS]])     # 6, eos last
    B, W = responses.shape
    logps = -torch.rand(B, W, dtype=torch.float64) * 3 - 0.05
    old = logps + torch.randn(B, W, dtype=torch.float64) * 0.3  # some ratios leave [0.8, 1.2]
    ref = logps + torch.randn(B, W, dtype=torch.float64) * 0.5
    old_values = torch.randn(B, W, dtype=torch.float64)
    new_values = old_values + torch.randn(B, W, dtype=torch.float64) * 0.3  # some leave old +- 0.2
    scores = torch.tensor([1.0, -0.5, 0.25, 2.0, 0.0], dtype=torch.float64)
    minimind_tokens = torch.where(truncate_response(EOS, PAD, responses) == PAD, PAD, responses)
    cases = []
    for gamma, lam, kl_coef, kl_estimator in ((1.0, 0.95, 0.05, "k1"), (0.9, 0.8, 0.2, "k1"), (1.0, 0.95, 0.0, "k1")):
        cases.append(trl_case(responses, logps, old, ref, old_values, new_values, scores, SimpleNamespace(
            gamma=gamma, lam=lam, kl_coef=kl_coef, kl_estimator=kl_estimator, cliprange=0.2, cliprange_value=0.2,
            vf_coef=0.1)))
    for gamma, lam, kl_coef in ((1.0, 0.95, 0.02), (0.9, 0.8, 0.1)):
        cases.append(minimind_case(minimind_tokens, logps, old, ref, old_values, new_values, scores, SimpleNamespace(
            gamma=gamma, lam=lam, kl_coef=kl_coef, clip_epsilon=0.2, cliprange_value=0.2, vf_coef=0.5,
            accumulation_steps=1)))
    doc = {"source": "trl 0.29.1 trl/experimental/ppo/ppo_trainer.py PPOTrainer.train; minimind d65ef2c0 "
                     f"trainer/train_ppo.py ppo_train_epoch; torch {torch.__version__}, float64; trl {trl.__version__}",
           "eos": EOS, "responses": responses.tolist(), "minimind_responses": minimind_tokens.tolist(),
           "logps": logps.tolist(), "old_logps": old.tolist(), "ref_logps": ref.tolist(),
           "old_values": old_values.tolist(), "values": new_values.tolist(), "scores": scores.tolist(),
           "max_new_tokens": W, "cases": cases}
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1) + "\n")
    tmp.replace(OUT)
    print(f"wrote {OUT}: {len(cases)} cases of {B} responses")


if __name__ == "__main__":
    main()
