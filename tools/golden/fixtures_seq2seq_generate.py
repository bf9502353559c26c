"""Greedy and beam-search generation of the encoder-decoder Transformer (001/004), as PyTorch and
Hugging Face's generate compute them, for tests/infer/test_seq2seq.cpp. Regenerate with the other
fixtures:

    .venv/bin/python tools/golden/generate_all.py tests/golden

The model is fixtures_encoder_decoder.py's Reference (torch.nn.TransformerEncoderLayer /
TransformerDecoderLayer stacks, sinusoidal positions, post-norm, untied head), 2 + 2 layers, dim 16,
4 heads, FFN 32, source vocab 40, target vocab 48, max_seq_len 16, with the end-of-sequence row of
the head scaled so that hypotheses end at different lengths. Every step recomputes the decoder over
the whole target (no cache): an independent reference for nanoformer's cached decoder.

Greedy: the argmax of the last logits, from the decoder start id, until eos or max_new_tokens (as
transformers' greedy generate). Beam search: the loop of transformers' GenerationMixin._beam_search
(transformers 5), driven by its own step functions (_get_top_k_continuations,
_get_running_beams_for_next_iteration, _update_finished_beams, _check_early_stop_heuristic,
_beam_search_has_unfinished_sequences), so the semantics are Hugging Face's: 2 num_beams candidates
per step, a finished hypothesis scores sum_logprobs / generated_length^length_penalty (generated
tokens, eos included, the decoder start not), early_stopping True / False / "never".

Cases (one source each, decoder start 1, eos 2): "model.<name>" holds the parameters (nanoformer's
names) and the config JSON; each generation case stores src (1, S), tokens (R, L) int64 = the R best
hypotheses without the decoder start, padded with -1, lengths (R), scores (R) (beam search only) and
its options: greedy; beams3 (num_beams 3, length_penalty 1, early_stopping False, 3 returned);
beams3_lp0 (the same source with length_penalty 0, whose best differs from beams3's: the case made
to show the length penalty matters); beams4_early (early_stopping True); beams2_never
(early_stopping "never", length_penalty 1.5); beams3_maxlen (no hypothesis ends before
max_new_tokens).
"""
from __future__ import annotations

import json

import torch
import torch.nn.functional as F
from transformers.generation.utils import GenerationMixin

from fixtures_encoder_decoder import SMALL, Reference, ours, randomise
from golden_common import Fixture

CONFIG = {**SMALL, "max_seq_len": 16, "tie_output": False}
START, EOS, S = 1, 2, 7


class Helpers(GenerationMixin):
    """transformers' beam-search step functions, called on an object that has no model."""


def logits_of(model: Reference, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """The last position's logits (B, V) of tgt (B, T) given src (1, S), recomputed in full."""
    src = src.expand(tgt.size(0), -1)
    real = torch.ones_like(src, dtype=torch.bool)
    return model(src, tgt, real, torch.ones_like(tgt, dtype=torch.bool))[:, -1, :]


def greedy(model: Reference, src: torch.Tensor, max_new_tokens: int) -> tuple[list[int], float]:
    """Greedy tokens and the smallest best-minus-second logit gap over the steps."""
    tgt, margin = torch.tensor([[START]]), float("inf")
    for _ in range(max_new_tokens):
        logits = logits_of(model, src, tgt)[0]
        top2 = torch.topk(logits, 2).values
        margin = min(margin, float(top2[0] - top2[1]))
        tgt = torch.cat([tgt, logits.argmax().view(1, 1)], dim=1)
        if int(tgt[0, -1]) == EOS:
            break
    return tgt[0, 1:].tolist(), margin


def beam_search(model: Reference, src: torch.Tensor, num_beams: int, length_penalty: float, early_stopping,
                max_new_tokens: int, num_return: int) -> tuple[list[list[int]], list[float]]:
    """transformers' _beam_search for one source (batch 1), decoder prompt = [START], eos EOS."""
    h = Helpers()
    batch_size, cur_len = 1, 1
    max_length, decoder_prompt_len = 1 + max_new_tokens, 1
    beams_to_keep = 2 * num_beams
    top_num_beam_mask = torch.cat((torch.ones(num_beams, dtype=torch.bool),
                                   torch.zeros(beams_to_keep - num_beams, dtype=torch.bool)))
    running_sequences = torch.full((batch_size, num_beams, max_length), EOS, dtype=torch.int64)
    running_sequences[:, :, 0] = START
    sequences = running_sequences.clone()
    running_beam_scores = torch.zeros((batch_size, num_beams))
    running_beam_scores[:, 1:] = -1e9
    beam_scores = torch.full((batch_size, num_beams), -1e9)
    is_sent_finished = torch.zeros((batch_size, num_beams), dtype=torch.bool)
    is_early_stop_heuristic_unsatisfied = torch.ones((batch_size, 1), dtype=torch.bool)
    running_beam_indices = torch.full((batch_size, num_beams, max_length - cur_len), -1, dtype=torch.int32)
    beam_indices = running_beam_indices.clone()
    while True:
        flat = h._flatten_beam_dim(running_sequences[:, :, :cur_len])
        log_probs = F.log_softmax(logits_of(model, src, flat), dim=-1)
        log_probs = h._unflatten_beam_dim(log_probs, batch_size, num_beams) + running_beam_scores[:, :, None]
        log_probs = log_probs.reshape(batch_size, -1)
        topk_log_probs, topk_running_sequences, topk_running_beam_indices = h._get_top_k_continuations(
            accumulated_log_probs=log_probs, running_sequences=running_sequences,
            running_beam_indices=running_beam_indices, cur_len=cur_len, decoder_prompt_len=decoder_prompt_len,
            do_sample=False, beams_to_keep=beams_to_keep, num_beams=num_beams, batch_size=batch_size)
        # transformers' EosTokenCriteria and MaxLengthCriteria over the candidates
        hits = (topk_running_sequences[:, :, cur_len] == EOS) | (cur_len + 1 >= max_length)
        running_sequences, running_beam_scores, running_beam_indices = h._get_running_beams_for_next_iteration(
            topk_log_probs=topk_log_probs, topk_running_sequences=topk_running_sequences,
            topk_running_beam_indices=topk_running_beam_indices, next_token_hits_stopping_criteria=hits,
            num_beams=num_beams)
        sequences, beam_scores, beam_indices, is_sent_finished = h._update_finished_beams(
            sequences=sequences, topk_running_sequences=topk_running_sequences, beam_scores=beam_scores,
            topk_log_probs=topk_log_probs, beam_indices=beam_indices,
            topk_running_beam_indices=topk_running_beam_indices,
            is_early_stop_heuristic_unsatisfied=is_early_stop_heuristic_unsatisfied,
            is_sent_finished=is_sent_finished, next_token_hits_stopping_criteria=hits,
            top_num_beam_mask=top_num_beam_mask, num_beams=num_beams, cur_len=cur_len,
            decoder_prompt_len=decoder_prompt_len, length_penalty=length_penalty, early_stopping=early_stopping)
        cur_len += 1
        is_early_stop_heuristic_unsatisfied = h._check_early_stop_heuristic(
            is_early_stop_heuristic_unsatisfied=is_early_stop_heuristic_unsatisfied,
            running_beam_scores=running_beam_scores, beam_scores=beam_scores, is_sent_finished=is_sent_finished,
            cur_len=cur_len, max_length=max_length, decoder_prompt_len=decoder_prompt_len,
            early_stopping=early_stopping, length_penalty=length_penalty)
        if not h._beam_search_has_unfinished_sequences(is_early_stop_heuristic_unsatisfied, is_sent_finished, hits,
                                                       early_stopping):
            break
    tokens, scores = [], []
    for r in range(num_return):
        generated = int((beam_indices[0, r] + 1).bool().sum())  # as _beam_search crops
        tokens.append(sequences[0, r, 1:1 + generated].tolist())
        scores.append(float(beam_scores[0, r]))
    return tokens, scores


def padded(rows: list[list[int]]) -> torch.Tensor:
    width = max(len(r) for r in rows)
    return torch.tensor([r + [-1] * (width - len(r)) for r in rows], dtype=torch.int64)


def fixtures() -> list[Fixture]:
    fx = Fixture("seq2seq_generate", seed=97, description=__doc__.splitlines()[0])
    torch.set_num_threads(1)
    model = Reference(CONFIG).eval()
    randomise(model, CONFIG["dim"])
    with torch.no_grad():
        model.output.weight[EOS] *= 2.5  # eos competes: hypotheses end at different lengths
    for pname, p in model.named_parameters():
        for k, v in ours(pname, p.detach()).items():
            fx.tensors[f"model.{k}"] = v.contiguous().clone()
    fx.cases["model"] = {"config": json.dumps(CONFIG), "decoder_start": START, "eos": EOS}

    def source(accept) -> torch.Tensor:
        for _ in range(200):
            src = torch.randint(3, CONFIG["src_vocab_size"], (1, S))
            if accept(src):
                return src
        raise RuntimeError("no source satisfies the case")

    def add(name: str, src: torch.Tensor, tokens: list[list[int]], scores: list[float] | None, **options) -> None:
        fx.tensors[f"{name}.src"] = src.clone()
        fx.tensors[f"{name}.tokens"] = padded(tokens)
        fx.tensors[f"{name}.lengths"] = torch.tensor([len(t) for t in tokens], dtype=torch.int64)
        if scores is not None:
            fx.tensors[f"{name}.scores"] = torch.tensor(scores, dtype=torch.float32)
        fx.cases[name] = options

    with torch.no_grad():
        src = source(lambda s: greedy(model, s, 12)[1] > 1e-3)
        add("greedy", src, [greedy(model, src, 12)[0]], None, max_new_tokens=12)

        def search(s, beams, lp, early, max_new=10, ret=None):
            return beam_search(model, s, beams, lp, early, max_new, ret or beams)

        def differs_by_penalty(s):  # the best with length_penalty 1 is not the best with 0
            return search(s, 3, 1.0, False)[0][0] != search(s, 3, 0.0, False)[0][0]
        src = source(differs_by_penalty)
        for name, lp in (("beams3", 1.0), ("beams3_lp0", 0.0)):
            tokens, scores = search(src, 3, lp, False)
            add(name, src, tokens, scores, num_beams=3, length_penalty=lp, early_stopping="false", max_new_tokens=10)
        src = source(lambda s: True)
        tokens, scores = search(src, 4, 1.0, True, ret=2)
        add("beams4_early", src, tokens, scores, num_beams=4, length_penalty=1.0, early_stopping="true",
            max_new_tokens=10)
        tokens, scores = search(src, 2, 1.5, "never")
        add("beams2_never", src, tokens, scores, num_beams=2, length_penalty=1.5, early_stopping="never",
            max_new_tokens=10)
        src = source(lambda s: all(len(t) == 5 and t[-1] != EOS for t in search(s, 3, 1.0, False, max_new=5)[0]))
        tokens, scores = search(src, 3, 1.0, False, max_new=5)
        add("beams3_maxlen", src, tokens, scores, num_beams=3, length_penalty=1.0, early_stopping="false",
            max_new_tokens=5)
    return [fx]


if __name__ == "__main__":
    import sys
    from pathlib import Path
    for f in fixtures():
        print(f.write(Path(sys.argv[1])))
    print(json.dumps({k: v for k, v in f.cases.items() if k != "model"}))
