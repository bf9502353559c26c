#!/usr/bin/env python3
"""Sentence-embedding fixtures for tests/models/test_sentence_embedding.cpp, with sentence-transformers'
own Pooling and Normalize modules (and transformers' base models) as the oracle.

    /work/venv-eval/bin/python tools/golden/sentence_embedding_fixtures.py write tests/fixtures/hf
        writes tests/fixtures/hf/sentence_bert/: the files sentence-transformers keeps beside a BERT
        folder's weights (modules.json: Transformer, Pooling, Normalize; 1_Pooling/config.json written by
        sentence-transformers' Pooling.save, mean pooling; sentence_bert_config.json with max_seq_length 12);
        the test copies tests/fixtures/hf/bert's config.json and model.safetensors beside them.
        And tests/fixtures/hf/sentence_embedding.safetensors, for ids (3, T) int64 and mask (3, T) int64
        (rows of 9, 5 and 2 real tokens, right-padded with pad id 0):
          encoder.<mode> (3, 32) for mode in mean, cls, max, lasttoken: BertModel's (tests/fixtures/hf/bert)
            last_hidden_state through sentence-transformers' Pooling(mode); encoder.mean_normalized: then
            Normalize;
          decoder.<mode>_normalized (3, 32) for mode in lasttoken, mean: LlamaModel's (tests/fixtures/hf/
            llama_gqa, the base model without the head) last_hidden_state, each row run alone over its real
            tokens, through Pooling(mode) and Normalize.
"""
from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers import AutoModel

warnings.filterwarnings("ignore")
from sentence_transformers.base.modules.normalize import Normalize  # noqa: E402
from sentence_transformers.sentence_transformer.modules.pooling import Pooling  # noqa: E402

LENGTHS = [9, 5, 2]
T = max(LENGTHS)


def pooled(hidden: torch.Tensor, mask: torch.Tensor, mode: str, normalize: bool) -> torch.Tensor:
    features = {"token_embeddings": hidden, "attention_mask": mask}
    out = Pooling(hidden.shape[-1], pooling_mode=mode)(features)
    if normalize:
        out = Normalize()(out)
    return out["sentence_embedding"].detach().contiguous()


def write(out_dir: Path) -> None:
    gen = torch.Generator().manual_seed(31)
    ids = torch.randint(1, 64, (len(LENGTHS), T), generator=gen)
    mask = torch.zeros(len(LENGTHS), T, dtype=torch.long)
    for row, n in enumerate(LENGTHS):
        mask[row, :n] = 1
        ids[row, n:] = 0
    tensors = {"ids": ids, "mask": mask}

    bert = AutoModel.from_pretrained(out_dir / "bert").eval()
    with torch.no_grad():
        hidden = bert(input_ids=ids, attention_mask=mask).last_hidden_state
    for mode in ["mean", "cls", "max", "lasttoken"]:
        tensors[f"encoder.{mode}"] = pooled(hidden, mask, mode, normalize=False)
    tensors["encoder.mean_normalized"] = pooled(hidden, mask, "mean", normalize=True)

    llama = AutoModel.from_pretrained(out_dir / "llama_gqa").eval()  # LlamaModel: no head
    rows = {"lasttoken": [], "mean": []}
    for row, n in enumerate(LENGTHS):
        with torch.no_grad():
            h = llama(input_ids=ids[row:row + 1, :n]).last_hidden_state
        one = torch.ones(1, n, dtype=torch.long)
        for mode in rows:
            rows[mode].append(pooled(h, one, mode, normalize=True))
    for mode, vectors in rows.items():
        tensors[f"decoder.{mode}_normalized"] = torch.cat(vectors)
    save_file(tensors, str(out_dir / "sentence_embedding.safetensors"))

    folder = out_dir / "sentence_bert"
    (folder / "1_Pooling").mkdir(parents=True, exist_ok=True)
    Pooling(bert.config.hidden_size, pooling_mode="mean").save(str(folder / "1_Pooling"))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules, indent=2) + "\n")
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 12, "do_lower_case": False}) + "\n")
    print("wrote", folder, "and sentence_embedding.safetensors:", {k: tuple(v.shape) for k, v in tensors.items()})


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "write":
        sys.exit(__doc__)
    write(Path(sys.argv[2]))
