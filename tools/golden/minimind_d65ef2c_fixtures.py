#!/usr/bin/env python3
"""MiniMind's current model form as MiniMind's own code at jingyaogong/minimind@d65ef2c (HEAD of
2026-08-21: model/model_minimind.py) builds it, for tests/formats/test_minimind_current.cpp:

    /work/venv-eval/bin/python tools/golden/minimind_d65ef2c_fixtures.py MINIMIND_GIT_DIR tests/fixtures
    /work/venv-eval/bin/python tools/golden/minimind_d65ef2c_fixtures.py MINIMIND_GIT_DIR tests/fixtures --check DIR
        loads DIR/dense and DIR/moe (what `nanoformer convert tests/fixtures/minimind_d65ef2c/<case> DIR/<case>
        --to minimind-hf` wrote) with MiniMind's own code and compares their logits with the fixtures'.

MINIMIND_GIT_DIR is a clone of jingyaogong/minimind (a bare one will do) holding commit d65ef2c; the
script reads model/model_minimind.py at that commit with `git show` into a temporary directory (nothing
of MiniMind is copied into this repository) and runs it unchanged with transformers (5.24.0, torch
2.15.0). Its form: per-head q_norm / k_norm (RMSNorm over head_dim, before RoPE), an explicit head_dim,
MoE keys num_experts / num_experts_per_tok / moe_intermediate_size / router_aux_loss_coef (no shared
experts), tie_word_embeddings, and YaRN from inference_rope_scaling (fixed values: factor 16, original
2048, beta 32 / 1, attention factor 1, applied when max_position_embeddings > 2048).

Cases (vocab 64, hidden 32, 2 layers, 4 heads / 2 kv heads), parameters unit-scale and rounded to
float16 (norm weights 1 + N(0, 0.1)), torch.manual_seed(0):
  dense  head_dim 16 (hidden / heads is 8), intermediate_size 48, untied lm_head, inference_rope_scaling
         true with max_position_embeddings 4096 (YaRN active); saved by save_pretrained (safetensors)
  moe    use_moe, num_experts 4, num_experts_per_tok 2, moe_intermediate_size 24, router_aux_loss_coef
         0.01, tied head, max_position_embeddings 64; config.json by save_pretrained and the weights as
         MiniMind's training scripts save them: torch.save of the state dict in float16 (moe/moe_32.pth)
Each <dir>/minimind_d65ef2c/<case>.golden.safetensors holds ids (2, 12), targets (ids shifted left,
-100 last), logits (eval mode), loss = cross-entropy + aux_loss and aux_loss (training mode), and
grad.<name> = d loss / d parameter for every parameter by its MiniMind name; <case>.generate.safetensors
the 16 tokens MiniMind's own generate (do_sample=False, its KV cache) gives after a prompt of 4 ids.
"""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

COMMIT = "d65ef2c00ebc6082f9df11541e1b191655eddb00"
T = 12
COMMON = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=64)
CASES = {
    "dense": dict(head_dim=16, intermediate_size=48, tie_word_embeddings=False, inference_rope_scaling=True,
                  max_position_embeddings=4096),
    "moe": dict(use_moe=True, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=24,
                router_aux_loss_coef=0.01, max_position_embeddings=64),
}


def load_minimind(git_dir: Path, work: Path):
    source = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:model/model_minimind.py"],
                            check=True, capture_output=True).stdout
    (work / "model_minimind_d65ef2c.py").write_bytes(source)
    sys.path.insert(0, str(work))
    return importlib.import_module("model_minimind_d65ef2c")


def randomise(model: torch.nn.Module) -> None:
    with torch.no_grad():
        for name, p in model.named_parameters():
            value = 1 + 0.1 * torch.randn_like(p) if name.endswith("norm.weight") else 0.3 * torch.randn_like(p)
            p.copy_(value.half().float())


def write_case(mm, case: str, kwargs: dict, out_dir: Path) -> None:
    torch.manual_seed(0)
    config = mm.MiniMindConfig(**COMMON, **kwargs)
    model = mm.MiniMindForCausalLM(config)
    randomise(model)
    ids = torch.randint(0, config.vocab_size, (2, T))
    model.eval()
    with torch.no_grad():
        logits = model(ids).logits.float()
    model.train()
    targets = torch.cat([ids[:, 1:], torch.full((2, 1), -100)], dim=1)
    out = model(ids, labels=ids)
    loss = out.loss + out.aux_loss
    loss.backward()
    golden = {"ids": ids, "targets": targets, "logits": logits, "loss": loss.detach(), "aux_loss": out.aux_loss.detach()}
    golden.update({f"grad.{name}": p.grad for name, p in model.named_parameters()})
    folder = out_dir / case
    if case == "moe":  # config.json from save_pretrained, the weights as MiniMind's train scripts save them
        model.save_pretrained(folder)
        (folder / "model.safetensors").unlink()
        torch.save({k: v.half() for k, v in model.state_dict().items()}, folder / "moe_32.pth")
    else:
        model.save_pretrained(folder)
    save_file({k: v.contiguous() for k, v in golden.items()}, str(out_dir / f"{case}.golden.safetensors"))
    # MiniMind's own generate (its KV cache), greedy: the 16 tokens after a 4-token prompt
    model.eval()
    prompt = torch.randint(0, config.vocab_size, (1, 4), generator=torch.Generator().manual_seed(7))
    generated = model.generate(prompt, max_new_tokens=16, do_sample=False, eos_token_id=None)[:, 4:]
    save_file({"prompt": prompt, "generated": generated.contiguous()}, str(out_dir / f"{case}.generate.safetensors"))
    print(case, {k: json.loads((folder / "config.json").read_text()).get(k) for k in ("head_dim", "rope_scaling")},
          f"|logits| max {logits.abs().max():.3f}, aux {out.aux_loss.item():.5f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("minimind_git_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--check", type=Path, help="a folder of our minimind-hf exports to load with MiniMind's code")
    args = parser.parse_args()
    git_dir = args.minimind_git_dir / ".git" if (args.minimind_git_dir / ".git").exists() else args.minimind_git_dir
    torch.set_num_threads(1)
    out_dir = args.out_dir / "minimind_d65ef2c"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        mm = load_minimind(git_dir.resolve(), Path(work))
        if args.check:
            return check(mm, args.check, out_dir)
        for case, kwargs in CASES.items():
            write_case(mm, case, kwargs, out_dir)
    return 0


def check(mm, export_dir: Path, fixture_dir: Path) -> int:
    from safetensors.torch import load_file
    worst = 0.0
    for case in CASES:
        config = mm.MiniMindConfig(**json.loads((export_dir / case / "config.json").read_text()))
        model = mm.MiniMindForCausalLM(config)
        missing, unexpected = model.load_state_dict(load_file(str(export_dir / case / "model.safetensors")), strict=False)
        assert not unexpected and set(missing) <= {"lm_head.weight"} and (not missing or config.tie_word_embeddings), (missing, unexpected)
        golden = load_file(str(fixture_dir / f"{case}.golden.safetensors"))
        with torch.no_grad():
            error = (model.eval()(golden["ids"]).logits - golden["logits"]).abs().max().item()
        print(f"{case}: MiniMind's code loads our export; max abs logit difference {error:.3g}")
        worst = max(worst, error)
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
