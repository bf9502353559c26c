#!/usr/bin/env python3
"""Writes every golden fixture (see README.md) into the directory given as the only argument:

    .venv/bin/python tools/golden/generate_all.py tests/golden      (what `make golden` runs)

Each fixture is a small safetensors file written by safetensors.torch.save_file from fixed seeds,
holding PyTorch's inputs, outputs and gradients for one op family.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixtures_attention  # noqa: E402
import fixtures_autocast  # noqa: E402
import fixtures_blocks  # noqa: E402
import fixtures_elementwise  # noqa: E402
import fixtures_encoder_decoder  # noqa: E402
import fixtures_grad_clip  # noqa: E402
import fixtures_lora  # noqa: E402
import fixtures_loss  # noqa: E402
import fixtures_loss_scaler  # noqa: E402
import fixtures_matmul  # noqa: E402
import fixtures_models  # noqa: E402
import fixtures_norms  # noqa: E402
import fixtures_optimizers  # noqa: E402
import fixtures_positional  # noqa: E402
import fixtures_moe  # noqa: E402
import fixtures_muon  # noqa: E402
import fixtures_nanochat_training  # noqa: E402
import fixtures_reduce  # noqa: E402
import fixtures_sampling  # noqa: E402
import fixtures_schedules  # noqa: E402
import fixtures_seq2seq_generate  # noqa: E402
import fixtures_softmax  # noqa: E402
import fixtures_vision  # noqa: E402
import torch  # noqa: E402

FAMILIES = [
    fixtures_softmax, fixtures_loss, fixtures_elementwise, fixtures_matmul, fixtures_reduce,
    fixtures_attention,
    fixtures_blocks,
    fixtures_lora,
    fixtures_norms,
    fixtures_positional,
    fixtures_moe,
    fixtures_vision,
    fixtures_models,
    fixtures_encoder_decoder,
    fixtures_seq2seq_generate,
    fixtures_optimizers,
    fixtures_muon,
    fixtures_grad_clip,
    fixtures_loss_scaler,
    fixtures_nanochat_training,
    fixtures_schedules,
    fixtures_autocast,
    fixtures_sampling,
]
SIZE_BUDGET = 4 << 20  # all fixtures together stay under 4 MB: they are committed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir", type=Path, help="where to write <fixture>.safetensors")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # the same summation order on every machine
    total = 0
    names = set()
    for family in FAMILIES:
        for fixture in family.fixtures():
            if fixture.name in names:
                raise SystemExit(f"fixture {fixture.name!r} generated twice")
            names.add(fixture.name)
            path = fixture.write(args.out_dir)
            size = path.stat().st_size
            total += size
            print(f"{path}: {len(fixture.cases)} cases, {len(fixture.tensors)} tensors, {size} bytes")
    print(f"{len(names)} fixtures, {total} bytes, torch {torch.__version__}")
    if total > SIZE_BUDGET:
        raise SystemExit(f"fixtures take {total} bytes, over the {SIZE_BUDGET}-byte budget: shrink them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
