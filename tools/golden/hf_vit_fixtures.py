#!/usr/bin/env python3
"""Hugging Face ViT fixtures for tests/models/test_vit.cpp, with `transformers` as the oracle.

    .venv/bin/python tools/golden/hf_vit_fixtures.py write tests/fixtures/hf
        builds a small random ViTForImageClassification (image 16, patch 4, 3 channels, dim 32,
        2 layers, 4 heads, intermediate 64, 10 classes; unit-scale weights as hf_fixtures.py's
        randomise()), saves it with save_pretrained into tests/fixtures/hf/vit/, and into
        tests/fixtures/hf/vit.logits.safetensors: `pixel_values` (2, 3, 16, 16) f32, `labels` (2) int64,
        `logits` (2, 10), `loss` () (transformers' cross-entropy with those labels) and
        `hidden.N` (2, 17, 32), the output of every layer (before the final norm); into
        tests/fixtures/hf/vit.grads.safetensors: d loss / d parameter for every parameter, under the
        tensor names of the saved folder (written by save_pretrained itself from a copy of the model
        holding the gradients, so the names are exactly the checkpoint's).
    .venv/bin/python tools/golden/hf_vit_fixtures.py check DIR
        for every DIR/<case>/ folder that nanoformer exported (NF_HF_EXPORT_DIR=DIR build/test_vit),
        loads it with transformers and compares its logits with ours in DIR/<case>.pixels.safetensors.
"""
from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForImageClassification, ViTConfig, ViTForImageClassification

import hf_fixtures

CONFIG = dict(image_size=16, patch_size=4, num_channels=3, hidden_size=32, num_hidden_layers=2,
              num_attention_heads=4, intermediate_size=64, num_labels=10)


def gradients_by_checkpoint_name(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The gradients under the names save_pretrained gives their parameters."""
    holder = copy.deepcopy(model)
    with torch.no_grad():
        for p, g in zip(holder.parameters(), (p.grad for p in model.parameters())):
            p.copy_(g)
    with tempfile.TemporaryDirectory() as tmp:
        holder.save_pretrained(tmp)
        return load_file(str(Path(tmp) / "model.safetensors"))


def write(out_dir: Path) -> None:
    gen = torch.Generator().manual_seed(23)
    torch.manual_seed(0)
    model = ViTForImageClassification(ViTConfig(**CONFIG)).eval()
    hf_fixtures.randomise(model, gen)
    model.save_pretrained(out_dir / "vit")
    pixel_values = torch.randn(2, 3, 16, 16, generator=gen)
    labels = torch.tensor([3, 7])
    out = model(pixel_values, labels=labels, output_hidden_states=True)
    out.loss.backward()
    hidden = {f"hidden.{i}": h.detach().contiguous() for i, h in enumerate(out.hidden_states[1:])}
    # transformers' last hidden state is taken before the final norm, as ours
    save_file({"pixel_values": pixel_values, "labels": labels, "logits": out.logits.detach().contiguous(),
               "loss": out.loss.detach(), **hidden}, str(out_dir / "vit.logits.safetensors"))
    save_file(gradients_by_checkpoint_name(model), str(out_dir / "vit.grads.safetensors"))
    size = sum(f.stat().st_size for f in (out_dir / "vit").iterdir())
    print(f"vit: {size} bytes, |logits| max {out.logits.abs().max():.3f}, loss {out.loss.item():.4f}")


def check(folder: Path) -> int:
    return hf_fixtures.check(folder, lambda path: hf_fixtures.transformers_model(path, AutoModelForImageClassification),
                             ".pixels.safetensors", "pixel_values")


if __name__ == "__main__":
    raise SystemExit(hf_fixtures.run(__doc__, write, check))
