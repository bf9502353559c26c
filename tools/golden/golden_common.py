"""Shared helpers for the golden-fixture generators.

A fixture is one safetensors file per op family. Every case in it stores its tensors under
"<case>.<role>": the inputs (e.g. "x", or "a" and "b"), the forward result "out", an upstream
gradient "grad_out" of out's shape, and "grad_<input>" = d(sum(out * grad_out)) / d(input) for every
differentiable input, as PyTorch's autograd computes them. The file's __metadata__ records the
torch version, the seed, a description and the parameters of every case (as JSON).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import torch
from safetensors.torch import load_file, save


class Fixture:
    """Collects the cases of one fixture file; `write` saves them."""

    def __init__(self, name: str, seed: int, description: str):
        self.name = name
        self.seed = seed
        self.description = description
        self.tensors: dict[str, torch.Tensor] = {}
        self.cases: dict[str, dict] = {}
        torch.manual_seed(seed)  # every fixture starts from its own seed, so adding one changes no other

    def case(self, case: str, fn: Callable[..., torch.Tensor], inputs: dict[str, torch.Tensor],
             differentiable: list[str] | None = None, **params) -> None:
        """Runs fn(**inputs) forward and backward (with a random upstream gradient) and stores
        inputs, out, grad_out and grad_<input> for each input named in `differentiable`
        (default: every floating input)."""
        if case in self.cases:
            raise ValueError(f"{self.name}: case {case!r} defined twice")
        if differentiable is None:
            differentiable = [k for k, v in inputs.items() if v.is_floating_point()]
        leaves = {k: v.detach().clone().requires_grad_(k in differentiable) for k, v in inputs.items()}
        out = fn(**leaves)
        grad_out = torch.randn(out.shape, dtype=out.dtype)
        out.backward(grad_out)
        stored = {k: v.detach() for k, v in inputs.items()}
        stored["out"] = out.detach()
        stored["grad_out"] = grad_out
        for k in differentiable:
            if leaves[k].grad is None:
                raise ValueError(f"{self.name}.{case}: no gradient reached input {k!r}")
            stored[f"grad_{k}"] = leaves[k].grad
        for role, t in stored.items():
            self.tensors[f"{case}.{role}"] = t.contiguous().clone()
        self.cases[case] = params

    def write(self, out_dir: Path) -> Path:
        path = out_dir / f"{self.name}.safetensors"
        metadata = {
            "torch_version": torch.__version__,
            "seed": str(self.seed),
            "description": self.description,
            "cases": json.dumps(self.cases, sort_keys=True),
            "generator": "tools/golden/generate_all.py",
        }
        path.write_bytes(with_sorted_metadata(save(self.tensors, metadata=metadata)))
        reloaded = load_file(str(path))
        if reloaded.keys() != self.tensors.keys() or any(not torch.equal(reloaded[k], t) for k, t in self.tensors.items()):
            raise RuntimeError(f"{path}: does not read back as written")
        return path


def with_sorted_metadata(blob: bytes) -> bytes:
    """The safetensors writer keeps __metadata__ in a hash map, so its key order (and the file's
    bytes) change from run to run. Re-emit the header with __metadata__ first and sorted, tensors
    in the writer's order, compact separators and space padding to 8 bytes, as the writer does:
    regenerating unchanged fixtures then gives byte-identical files."""
    n = int.from_bytes(blob[:8], "little")
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__")
    header = {"__metadata__": dict(sorted(metadata.items())), **header}
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + blob[8 + n:]


def randn(*shape: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64).mul(scale).to(dtype)


def uniform(*shape: int, low: float, high: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return (torch.rand(*shape, dtype=torch.float64) * (high - low) + low).to(dtype)
