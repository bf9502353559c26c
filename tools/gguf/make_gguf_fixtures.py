#!/usr/bin/env python3
"""Writes the GGUF container fixtures of tests/io/test_gguf.cpp with the `gguf` Python package's
GGUFWriter (the reference writer), plus fixtures.json describing what each file holds:

    bash scripts/install-python.sh && .venv/bin/python tools/gguf/make_gguf_fixtures.py tests/fixtures/gguf

- metadata.gguf: a key of every value type and an array of every item type (strings with an empty
  one, UTF-8 and a newline; bools), and one f32 tensor.
- tensors.gguf: f32 tensors of 0 to 3 dimensions and an empty one, f16, bf16, and a Q8_0 and a Q4_0
  tensor whose bytes gguf.quants makes.
- align8.gguf: general.alignment 8 (GGUFWriter.add_custom_alignment) and tensors whose sizes are
  not multiples of it.
- nested_array.gguf: an array of arrays, which llama.cpp and nanoformer refuse.
Re-running it rewrites the same bytes (fixed seeds).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V

TYPE_NAMES = {V.UINT8: "u8", V.INT8: "i8", V.UINT16: "u16", V.INT16: "i16", V.UINT32: "u32", V.INT32: "i32",
              V.FLOAT32: "f32", V.BOOL: "bool", V.STRING: "string", V.UINT64: "u64", V.INT64: "i64",
              V.FLOAT64: "f64"}


def as_stored(value, vtype):
    """The value as the file holds it (an f32 rounded to f32), for the JSON."""
    if vtype == V.FLOAT32:
        return float(np.float32(value))
    return value


class Fixture:
    """A GGUFWriter plus the record of what it was given, in order."""

    def __init__(self, directory: Path, name: str, arch: str = "llama"):
        self.path = directory / name
        self.writer = gguf.GGUFWriter(str(self.path), arch)
        self.alignment = gguf.GGUF_DEFAULT_ALIGNMENT
        self.keys = [{"key": "general.architecture", "type": "string", "value": arch}]
        self.tensors = []

    def scalar(self, key, value, vtype):
        self.writer.add_key_value(key, value, vtype)
        self.keys.append({"key": key, "type": TYPE_NAMES[vtype], "value": as_stored(value, vtype)})

    def array(self, key, values, item_type):
        self.writer.add_key_value(key, values, V.ARRAY, sub_type=item_type)
        self.keys.append({"key": key, "type": "array", "item_type": TYPE_NAMES[item_type],
                          "value": [as_stored(v, item_type) for v in values]})

    def custom_alignment(self, alignment):
        self.writer.add_custom_alignment(alignment)
        self.alignment = alignment
        self.keys.append({"key": "general.alignment", "type": "u32", "value": alignment})

    def tensor(self, name, array, qtype=None):
        """A numpy array (f32 / f16), or the bytes of gguf.quants.quantize with its type."""
        self.writer.add_tensor(name, array, raw_dtype=qtype)
        info = self.writer.tensors[-1][name]
        self.tensors.append({"name": name, "type": gguf.GGMLQuantizationType(info.dtype).name.lower(),
                             "shape": [int(d) for d in info.shape], "nbytes": int(array.nbytes),
                             "hex": array.tobytes().hex()})

    def close(self):
        self.writer.write_header_to_file()
        self.writer.write_kv_data_to_file()
        self.writer.write_tensors_to_file()
        self.writer.close()
        offset = 0
        for t in self.tensors:
            t["offset"] = offset
            offset += -(-t["nbytes"] // self.alignment) * self.alignment
        return {"version": 3, "alignment": self.alignment, "metadata": self.keys, "tensors": self.tensors}


def metadata_fixture(directory: Path, rng) -> dict:
    f = Fixture(directory, "metadata.gguf")
    f.scalar("general.name", "nanoformer fixture é 🦙", V.STRING)
    f.scalar("test.empty_string", "", V.STRING)
    f.scalar("test.u8", 200, V.UINT8)
    f.scalar("test.i8", -100, V.INT8)
    f.scalar("test.u16", 60000, V.UINT16)
    f.scalar("test.i16", -30000, V.INT16)
    f.scalar("test.u32", 4_000_000_000, V.UINT32)
    f.scalar("test.i32", -2_000_000_000, V.INT32)
    f.scalar("test.f32", 0.1, V.FLOAT32)
    f.scalar("test.bool_true", True, V.BOOL)
    f.scalar("test.bool_false", False, V.BOOL)
    f.scalar("test.u64", 2**64 - 1, V.UINT64)
    f.scalar("test.i64", -(2**63), V.INT64)
    f.scalar("test.f64", 1 / 3, V.FLOAT64)
    f.array("test.array.u8", [0, 255, 7], V.UINT8)
    f.array("test.array.i8", [-128, 127], V.INT8)
    f.array("test.array.u16", [65535, 1], V.UINT16)
    f.array("test.array.i16", [-32768, 32767, 0], V.INT16)
    f.array("test.array.u32", [4_294_967_295], V.UINT32)
    f.array("test.array.i32", [-1, 0, 1, 2**31 - 1], V.INT32)
    f.array("test.array.f32", [1.5, -0.1, 3.0e38], V.FLOAT32)
    f.array("test.array.bool", [True, False, True], V.BOOL)
    f.array("test.array.u64", [2**64 - 1, 0], V.UINT64)
    f.array("test.array.i64", [-(2**63), 2**63 - 1], V.INT64)
    f.array("test.array.f64", [2.5, -1e300], V.FLOAT64)
    f.array("tokenizer.ggml.tokens", ["<s>", "", "é", "a\nb", "Ġthe"], V.STRING)
    f.array("tokenizer.ggml.scores", [float(x) for x in rng.standard_normal(5).astype(np.float32)], V.FLOAT32)
    f.array("tokenizer.ggml.token_type", [3, 1, 1, 1, 1], V.INT32)
    f.tensor("output_norm.weight", rng.standard_normal(5).astype(np.float32))
    return f.close()


def tensors_fixture(directory: Path, rng) -> dict:
    f = Fixture(directory, "tensors.gguf")
    f.scalar("general.file_type", 7, V.UINT32)
    f.tensor("token_embd.weight", rng.standard_normal((3, 5)).astype(np.float32))
    f.tensor("scalar", np.array(2.5, dtype=np.float32))
    f.tensor("empty", np.zeros((0, 4), dtype=np.float32))
    f.tensor("cube", rng.standard_normal((2, 3, 4)).astype(np.float32))
    f.tensor("half", rng.standard_normal(7).astype(np.float16))
    f.tensor("brain", gguf.quants.quantize(rng.standard_normal((2, 8)).astype(np.float32), Q.BF16), Q.BF16)
    f.tensor("blk.0.attn_q.weight", gguf.quants.quantize(rng.standard_normal((3, 64)).astype(np.float32), Q.Q8_0),
             Q.Q8_0)
    f.tensor("blk.0.ffn_up.weight", gguf.quants.quantize(rng.standard_normal((2, 32)).astype(np.float32), Q.Q4_0),
             Q.Q4_0)
    return f.close()


def align8_fixture(directory: Path, rng) -> dict:
    f = Fixture(directory, "align8.gguf", arch="gpt2")
    f.custom_alignment(8)
    f.scalar("gpt2.context_length", 16, V.UINT32)
    f.tensor("three", rng.standard_normal(3).astype(np.float32))
    f.tensor("blk.0.attn_q.weight", gguf.quants.quantize(rng.standard_normal((1, 32)).astype(np.float32), Q.Q8_0),
             Q.Q8_0)
    f.tensor("five_halves", rng.standard_normal(5).astype(np.float16))
    return f.close()


def nested_array_fixture(directory: Path) -> dict:
    f = Fixture(directory, "nested_array.gguf")
    f.writer.add_key_value("test.nested", [[1, 2], [3]], V.ARRAY)  # inner arrays of i32
    f.keys.append({"key": "test.nested", "type": "array", "item_type": "array"})
    f.tensor("w", np.ones(4, dtype=np.float32))
    return f.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="directory for the .gguf files and fixtures.json")
    out = parser.parse_args().out
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(22)
    fixtures = {
        "metadata.gguf": metadata_fixture(out, rng),
        "tensors.gguf": tensors_fixture(out, rng),
        "align8.gguf": align8_fixture(out, rng),
        "nested_array.gguf": nested_array_fixture(out),
    }
    fixtures["nested_array.gguf"]["refused"] = "test.nested"
    (out / "fixtures.json").write_text(json.dumps(fixtures, indent=1, ensure_ascii=False) + "\n")
    for name in fixtures:
        print(f"{out / name}: {(out / name).stat().st_size} bytes")


if __name__ == "__main__":
    main()
