#!/usr/bin/env python3
"""A Hugging Face model folder cut to its first N layers: the draft model of speculative decoding
(docs/inference.md, "A draft model") before it is distilled.

    truncate_hf_model.py IN_FOLDER OUT_FOLDER N

IN_FOLDER holds config.json and one model.safetensors (as `nanoformer convert MODEL OUT --to hf`
writes them); OUT_FOLDER gets the same files with the tensors of layers >= N left out and the
layer count set to N (GPT-2's n_layer, LLaMA's num_hidden_layers). Python's standard library
only: safetensors is an 8-byte header length, a JSON header, then the tensors' bytes.
"""
import json
import os
import re
import struct
import sys


def main(src, dst, n):
    with open(os.path.join(src, "config.json")) as f:
        config = json.load(f)
    key = "n_layer" if "n_layer" in config else "num_hidden_layers"
    assert config[key] >= n >= 1, f"{src}: {config[key]} layers, asked for {n}"
    config[key] = n
    with open(os.path.join(src, "model.safetensors"), "rb") as f:
        size = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    layer = re.compile(r"(?:^|\.)(?:h|layers)\.(\d+)\.")
    kept, out, offset = {}, [], 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"][0] if kv[0] != "__metadata__" else -1):
        if name == "__metadata__":
            kept[name] = info
            continue
        m = layer.search(name)
        if m and int(m.group(1)) >= n:
            continue
        begin, end = info["data_offsets"]
        out.append(data[begin:end])
        kept[name] = dict(info, data_offsets=[offset, offset + end - begin])
        offset += end - begin
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    blob = json.dumps(kept).encode()
    blob += b" " * (-len(blob) % 8)
    with open(os.path.join(dst, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for part in out:
            f.write(part)
    print(f"wrote {dst}: {n} of the layers, {len(kept) - ('__metadata__' in kept)} tensors")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
