#!/usr/bin/env python3
"""MiniMind2-MoE as MiniMind's own code at jingyaogong/minimind@04b56ea builds it, for
tests/formats/test_name_map_formats.cpp:

    .venv/bin/python tools/golden/minimind_04b56ea_fixtures.py MINIMIND_GIT_DIR tests/fixtures

MINIMIND_GIT_DIR is a clone of jingyaogong/minimind (a bare one will do) holding commit 04b56ea; the
script reads model/LMConfig.py and model/model.py at that commit with `git show` into a temporary
directory (nothing of MiniMind is copied into this repository) and runs them unchanged. They import
three names from `transformers` (PretrainedConfig, PreTrainedModel, CausalLMOutputWithPast), which
only hold the config's attributes and the output's fields there; since .venv has no transformers
(scripts/install-python.sh), a minimal stand-in module providing exactly those is installed in
sys.modules first.

The model: LMConfig(dim=16, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=32, max_seq_len=16,
multiple_of=8, use_moe=True) and every other key at LMConfig's default (4 routed experts, top-2,
n_shared_experts=True: one shared FeedForward, `feed_forward.shared_experts.w1`), its parameters drawn
from N(0, 0.3) (the RMSNorm weights 1 + N(0, 0.1)) with torch.manual_seed(0). Written:
  minimind/moe_04b56ea/config.json      model_type "minimind" and every LMConfig key, as
                                        save_pretrained (transformers 4.48) writes them
  minimind/moe_04b56ea/model.safetensors  MiniMindLM.state_dict() (the tied output.weight too)
  minimind/moe_04b56ea.logits.safetensors ids (2, 8) and the eval-mode logits (2, 8, 32)
"""
from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import torch
from safetensors.torch import save_file

COMMIT = "04b56ea"


def install_transformers_stand_in() -> None:
    """The three transformers names model.py and LMConfig.py use, doing only what they do there."""

    class PretrainedConfig:
        def __init__(self, **kwargs):
            for key, value in kwargs.items():
                setattr(self, key, value)

    class PreTrainedModel(torch.nn.Module):
        def __init__(self, config, *args, **kwargs):
            super().__init__()
            self.config = config

    class CausalLMOutputWithPast(dict):
        def __getattr__(self, name):
            return self[name]

    transformers = types.ModuleType("transformers")
    transformers.PretrainedConfig = PretrainedConfig
    transformers.PreTrainedModel = PreTrainedModel
    outputs = types.ModuleType("transformers.modeling_outputs")
    outputs.CausalLMOutputWithPast = CausalLMOutputWithPast
    transformers.modeling_outputs = outputs
    sys.modules["transformers"] = transformers
    sys.modules["transformers.modeling_outputs"] = outputs


def load_minimind(git_dir: Path, work: Path):
    package = work / "minimind_04b56ea" / "model"
    package.mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    for name in ("LMConfig.py", "model.py"):
        source = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{COMMIT}:model/{name}"], check=True,
                                capture_output=True).stdout
        (package / name).write_bytes(source)
    sys.path.insert(0, str(work))
    install_transformers_stand_in()
    return importlib.import_module("minimind_04b56ea.model.LMConfig"), importlib.import_module("minimind_04b56ea.model.model")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("minimind_git_dir", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args()
    git_dir = args.minimind_git_dir / ".git" if (args.minimind_git_dir / ".git").exists() else args.minimind_git_dir
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as work:
        lmconfig, model_py = load_minimind(git_dir.resolve(), Path(work))
        config = lmconfig.LMConfig(dim=16, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=32, max_seq_len=16,
                                   multiple_of=8, use_moe=True)
        torch.manual_seed(0)
        model = model_py.MiniMindLM(config)
        with torch.no_grad():
            for name, p in model.named_parameters():
                if name.endswith("norm.weight"):
                    p.copy_(1 + 0.1 * torch.randn_like(p))
                else:
                    p.normal_(0.0, 0.3)
        model.eval()
        ids = torch.randint(0, config.vocab_size, (2, 8))
        with torch.no_grad():
            logits = model(ids).logits.float()
        # save_pretrained's config.json (transformers 4.48's to_diff_dict keeps every key PretrainedConfig
        # lacks): model_type and LMConfig's keys; FeedForward has filled in hidden_dim
        keys = ["dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "hidden_dim", "multiple_of", "norm_eps",
                "max_seq_len", "rope_theta", "dropout", "flash_attn", "use_moe", "num_experts_per_tok",
                "n_routed_experts", "n_shared_experts", "scoring_func", "aux_loss_alpha", "seq_aux", "norm_topk_prob"]
        config_json = {"model_type": "minimind", **{key: getattr(config, key) for key in keys}}
        state = {name: t.detach().clone().contiguous() for name, t in model.state_dict().items()}
    out = args.out_dir / "minimind" / "moe_04b56ea"
    out.mkdir(parents=True, exist_ok=True)
    save_file(state, str(out / "model.safetensors"), metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(config_json, indent=2) + "\n")
    save_file({"ids": ids.contiguous(), "logits": logits.contiguous()},
              str(args.out_dir / "minimind" / "moe_04b56ea.logits.safetensors"))
    for path in sorted(args.out_dir.glob("minimind/moe_04b56ea*")) + sorted(out.glob("*")):
        if path.is_file():
            print(path, path.stat().st_size)
    print("tensors:", ", ".join(name for name in state if name.startswith("layers.0.feed_forward.shared")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
