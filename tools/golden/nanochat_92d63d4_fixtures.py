#!/usr/bin/env python3
"""nanochat's current GPT as nanochat's own code at karpathy/nanochat@92d63d4 builds it, for
tests/formats/test_nanochat_current.cpp:

    /work/venv-eval/bin/python tools/golden/nanochat_92d63d4_fixtures.py NANOCHAT_GIT_DIR tests/fixtures

NANOCHAT_GIT_DIR is a clone of karpathy/nanochat (a bare one will do) holding commit 92d63d4; the
script reads nanochat/{gpt,common,optim,flash_attention}.py at that commit with `git show` into a
temporary package (nothing of nanochat is copied into this repository) and runs them unchanged on
the CPU. No stub is needed: on a machine without CUDA, flash_attention.py falls back to PyTorch's
SDPA by itself (its sliding-window mask included), and common.py / optim.py only import
torch.distributed and filelock, which torch brings. NANOCHAT_DTYPE=float32 is set so the
compute dtype is fp32 (nanochat's CPU default too).

The model: GPTConfig(sequence_len=512, vocab_size=50, n_layer=4, n_head=4, n_kv_head=2, n_embd=32,
window_pattern="SSSL"), so the vocabulary is padded to 64 rows, layers 0-2 use the short window
(128, 0) (129 keys) and layer 3 the full context, layers 1 and 3 have value embeddings, and the
backout is taken after layer 2. Its init_weights(), then every parameter redrawn with
torch.manual_seed(0) (matrices N(0, 0.3), resid_lambdas 1 + N(0, 0.1), x0_lambdas, smear_lambda,
backout_lambda N(0, 0.3), gates N(0, 0.5)) so that no part is zero. Written:
  nanochat/current_92d63d4/meta_000000.json   {"step": 0, "model_config": asdict(config)} as base_train
  nanochat/current_92d63d4/model_000000.pt    torch.save(model.state_dict()) as checkpoint_manager
  nanochat/current_92d63d4.golden.safetensors ids (2, 160), targets (2, 160), logits (2, 160, 50),
                                              loss, and grad.<name> for every parameter (mean
                                              cross-entropy of forward(ids, targets)), prompt (1, 150)
                                              = ids[:1, :150] and generated (1, 20): GPT.generate's
                                              greedy tokens (temperature 0) after it
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import save_file

COMMIT = "92d63d4"


def load_nanochat(git_dir: Path, work: Path):
    package = work / "nanochat"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    for name in ("gpt.py", "common.py", "optim.py", "flash_attention.py"):
        source = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:nanochat/{name}"], check=True,
                                capture_output=True).stdout
        (package / name).write_bytes(source)
    sys.path.insert(0, str(work))
    os.environ["NANOCHAT_DTYPE"] = "float32"
    return importlib.import_module("nanochat.gpt")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        gpt = load_nanochat(args.git_dir, Path(work))
        config = gpt.GPTConfig(sequence_len=512, vocab_size=50, n_layer=4, n_head=4, n_kv_head=2, n_embd=32,
                               window_pattern="SSSL")
        torch.manual_seed(0)
        model = gpt.GPT(config)
        model.init_weights()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name == "resid_lambdas":
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                elif "gate" in name:
                    p.copy_(0.5 * torch.randn_like(p))
                else:
                    p.copy_(0.3 * torch.randn_like(p))
        assert model.window_sizes == [(128, 0), (128, 0), (128, 0), (512, 0)], model.window_sizes
        ids = torch.randint(0, config.vocab_size, (2, 160))
        targets = torch.randint(0, config.vocab_size, (2, 160))
        model.eval()
        with torch.no_grad():
            logits = model(ids)
        prompt = ids[:1, :150]
        generated = torch.tensor([list(model.generate(prompt[0].tolist(), 20, temperature=0))])
        model.zero_grad()
        loss = model(ids, targets)
        loss.backward()

        folder = args.out / "nanochat" / "current_92d63d4"
        folder.mkdir(parents=True, exist_ok=True)
        meta = {"step": 0, "model_config": dataclasses.asdict(config)}
        (folder / "meta_000000.json").write_text(json.dumps(meta, indent=2))
        torch.save(model.state_dict(), folder / "model_000000.pt")
        golden = {"ids": ids.to(torch.int64), "targets": targets.to(torch.int64), "logits": logits.contiguous(),
                  "loss": loss.detach().reshape(()), "prompt": prompt.clone(), "generated": generated}
        for name, p in model.named_parameters():
            golden["grad." + name] = p.grad.detach().contiguous()
        save_file(golden, str(args.out / "nanochat" / "current_92d63d4.golden.safetensors"))
        print(f"loss {loss.item():.6f}, logits {tuple(logits.shape)}, {len(golden) - 6} gradients")


if __name__ == "__main__":
    main()
