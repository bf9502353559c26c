"""Hugging Face's logits processors on random logits, for nanoformer's sampler
(tests/infer/test_sampler.cpp):
  repetition_penalty  RepetitionPenaltyLogitsProcessor(penalty)(input_ids, logits)
  temperature         TemperatureLogitsWarper(temperature)
  top_k               TopKLogitsWarper(top_k)
  top_p               TopPLogitsWarper(top_p)
  min_p               MinPLogitsWarper(min_p)
  chain               the list GenerationMixin._get_logits_processor builds for a GenerationConfig
                      with do_sample=True (so the order is generate's own), on a tiny GPT-2
Roles "logits" (rows, vocab) f32, "input_ids" (rows, n) i64 and "out" (the processed logits,
-inf where a token is removed); the case parameters name the processor and its arguments
("processors" lists the chain's classes in order). The "_ties" cases round the logits (to
halves; to integers for top-p), so that ties sit at the top-k / top-p / min-p boundaries; the
top-p one has 16 tokens, since torch.sort (unstable by default) orders equal values as a stable
sort only up to 16 elements: beyond, which of two equal logits HF's top-p keeps at the boundary
is unspecified.

Re-run with everything else: `make golden`, or
    .venv/bin/python tools/golden/generate_all.py tests/golden
"""
from __future__ import annotations

import torch
from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel
from transformers.generation.logits_process import (MinPLogitsWarper, RepetitionPenaltyLogitsProcessor,
                                                    TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper)

from golden_common import Fixture, randn

ROWS, VOCAB, HISTORY = 4, 64, 12
TIE_VOCAB = 16  # torch.sort's order of equal values is stable up to 16 elements, arbitrary beyond

SINGLE = [
    ("penalty_1_3", "repetition_penalty", {"penalty": 1.3}, False),
    ("penalty_0_7", "repetition_penalty", {"penalty": 0.7}, False),
    ("temperature_0_7", "temperature", {"temperature": 0.7}, False),
    ("temperature_1_5", "temperature", {"temperature": 1.5}, False),
    ("top_k_1", "top_k", {"top_k": 1}, False),
    ("top_k_5", "top_k", {"top_k": 5}, False),
    ("top_k_5_ties", "top_k", {"top_k": 5}, True),
    ("top_k_vocab", "top_k", {"top_k": VOCAB}, False),
    ("top_p_0_9", "top_p", {"top_p": 0.9}, False),
    ("top_p_0_5", "top_p", {"top_p": 0.5}, False),
    ("top_p_0_01", "top_p", {"top_p": 0.01}, False),
    ("top_p_0_6_ties", "top_p", {"top_p": 0.6}, True),
    ("min_p_0_1", "min_p", {"min_p": 0.1}, False),
    ("min_p_0_5", "min_p", {"min_p": 0.5}, False),
    ("min_p_1_ties", "min_p", {"min_p": 1.0}, True),
]

CHAINS = [
    ("chain_all", {"repetition_penalty": 1.2, "temperature": 0.8, "top_k": 20, "top_p": 0.9, "min_p": 0.05}),
    ("chain_hot", {"repetition_penalty": 1.1, "temperature": 1.7, "top_k": 0, "top_p": 0.7, "min_p": 0.0}),
    ("chain_top_k_p", {"repetition_penalty": 1.0, "temperature": 1.0, "top_k": 8, "top_p": 0.6, "min_p": 0.0}),
]


def single(kind: str, args: dict):
    if kind == "repetition_penalty":
        return RepetitionPenaltyLogitsProcessor(penalty=args["penalty"])
    if kind == "temperature":
        return TemperatureLogitsWarper(args["temperature"])
    if kind == "top_k":
        return TopKLogitsWarper(top_k=args["top_k"])
    if kind == "top_p":
        return TopPLogitsWarper(top_p=args["top_p"])
    return MinPLogitsWarper(min_p=args["min_p"])


def chain(args: dict):
    """The processors generate() itself builds for this sampling config."""
    model = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_positions=32, n_embd=8, n_layer=1, n_head=1,
                                       bos_token_id=0, eos_token_id=0))
    config = GenerationConfig(do_sample=True, **{k: v for k, v in args.items() if not (k == "min_p" and v == 0.0)})
    return model._get_logits_processor(generation_config=config, input_ids_seq_length=HISTORY)


def cut_in_a_tie(logits: torch.Tensor, out: torch.Tensor) -> bool:
    """Whether a removed token has the same logit as a kept one."""
    removed = logits[out == -float("inf")]
    return len(removed) > 0 and removed.max() == logits[out != -float("inf")].min()


def store(fx: Fixture, case: str, logits: torch.Tensor, input_ids: torch.Tensor, out: torch.Tensor, params: dict):
    fx.tensors[f"{case}.logits"] = logits.contiguous().clone()
    fx.tensors[f"{case}.input_ids"] = input_ids.contiguous().clone()
    fx.tensors[f"{case}.out"] = out.contiguous().clone()
    fx.cases[case] = params


def fixtures() -> list[Fixture]:
    fx = Fixture("sampling", seed=9, description="HF logits processors on random logits: roles logits, "
                 "input_ids, out; cases name the processor and its arguments")
    for case, kind, args, ties in SINGLE:
        logits = randn(ROWS, VOCAB, scale=2.0)
        if ties and kind == "top_p":  # 16 tokens, where torch.sort is stable (its tie order is HF's rule)
            logits = logits[:, :TIE_VOCAB].round()
        elif ties:
            logits = logits.mul(2).round() / 2
        input_ids = torch.randint(0, VOCAB, (ROWS, HISTORY))
        out = single(kind, args)(input_ids, logits.clone())
        if ties and kind == "top_p" and not any(cut_in_a_tie(logits[r], out[r]) for r in range(ROWS)):
            raise ValueError(f"{case}: no row cuts inside a tie; pick another top_p")
        store(fx, case, logits, input_ids, out, {"kind": kind, **args})
    for case, args in CHAINS:
        logits = randn(ROWS, VOCAB, scale=2.0)
        input_ids = torch.randint(0, VOCAB, (ROWS, HISTORY))
        processors = chain(args)
        out = processors(input_ids, logits.clone())
        store(fx, case, logits, input_ids, out,
              {"kind": "chain", **args, "processors": [type(p).__name__ for p in processors]})
    return [fx]
