#!/usr/bin/env python3
"""Bit-exact fixtures for the weight types' quantise / dequantise rows (tests/ops/test_quant_rows.cpp).

The oracle is the `gguf` Python package's reference, gguf.quants (pinned in scripts/install-python.sh):
it quantises f16, bf16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and dequantises all of those and Q3_K to Q6_K.
gguf.quants cannot quantise Q3_K / Q4_K / Q5_K / Q6_K / Q8_K / Q8_1; for those the oracle is llama.cpp's
own quantize_row_*_ref, called through ctypes in a libggml-base (a llama-cpp-python install made by
tools/llamacpp/install.sh, or the bin/ of tools/peers/build_llamacpp.sh: --llamacpp, else $LLAMACPP_VENV,
else .venv-llamacpp). The C++ test expects
those bytes, so the script refuses to run without it; with it, it also checks that llama.cpp's
reference gives gguf.quants' bytes for the types both quantise.

Run (re-runnable; same numpy / gguf / llama.cpp versions -> byte-identical file):
    bash tools/llamacpp/install.sh            # once: builds llama.cpp into .venv-llamacpp (10-30 minutes)
    make quant-fixtures                       # = scripts/install-python.sh + .venv/bin/python <this script>
    (any Python with numpy and gguf==0.19.0 works: python3 tools/quant/make_quant_fixtures.py --llamacpp VENV,
     or --llamacpp .cache/peers/llamacpp/bin)

Output: tests/fixtures/quant/quants.bin, a list of named arrays:
    b"NFQUANT1", u32 length + JSON metadata (versions, seed, cases), u32 count, then per array
    u32 name length, name (ASCII), u32 GGUF type number (0 = f32), u32 rows, u32 cols,
    rows * row_bytes(type, cols) bytes (little-endian, rows of blocks as in a GGUF tensor).
Names: "<case>/x" f32 input; "<case>/<type>" its blocks from the oracle; "<case>/<type>/y" those
blocks dequantised by gguf.quants (case "real" only); "random/<type>" random valid blocks (NaN-free
scales) and "random/<type>/y".
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import struct
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

ROOT = Path(__file__).resolve().parents[2]
SEED = 20240622
COLS = 256  # one Q4_K / Q6_K super-block, eight 32-value blocks

SMALL = {"f16": T.F16, "bf16": T.BF16, "q8_0": T.Q8_0, "q4_0": T.Q4_0, "q4_1": T.Q4_1, "q5_0": T.Q5_0, "q5_1": T.Q5_1}
# gguf dequantises them; llama.cpp quantises them (new types go last: the random draws of the others stay)
K_TYPES = {"q4_k": T.Q4_K, "q6_k": T.Q6_K, "q5_k": T.Q5_K, "q3_k": T.Q3_K}
ACTIVATIONS = {"q8_k": (15, 256, 292), "q8_1": (9, 32, 36)}  # GGUF number, block size and bytes: llama.cpp only
SIZES = {**{int(t): gguf.GGML_QUANT_SIZES[t] for t in list(SMALL.values()) + list(K_TYPES.values())},
         0: (1, 4), **{t: (block, size) for t, block, size in ACTIVATIONS.values()}}


def f32(a) -> np.ndarray:
    return np.asarray(a, dtype=np.float32)


# ---- the cases: rows of 256 f32 values, eight blocks of 32 each with its own purpose ----------

def case_normal(rng):
    """N(0, s^2) with s from 0.003 to 30, one scale per block of 32."""
    scales = f32(np.repeat(10.0 ** np.linspace(-2.5, 1.5, 8), 32))
    return (f32(rng.standard_normal(COLS)) * scales).reshape(1, COLS)


def case_outliers(rng):
    """N(0, 0.02^2) with one to three outliers of 0.2 to 5 (either sign) per block, as in LLM weights."""
    x = f32(rng.standard_normal(COLS) * 0.02)
    for b in range(8):
        for _ in range(1 + b % 3):
            x[32 * b + rng.integers(32)] = f32(rng.choice([-1, 1]) * rng.uniform(0.2, 5.0))
    return x.reshape(1, COLS)


def case_zero_blocks(rng):
    """Row 0: zero, one positive, one negative, constant positive / negative, below 1e-15 (llama.cpp's
    GROUP_MAX_EPS), 0/1 alternating, half zero; row 1: a whole zero super-block."""
    b = np.zeros((8, 32), dtype=np.float32)
    b[1, 7] = 0.75
    b[2, 31] = -1.25
    b[3, :] = 0.25
    b[4, :] = -3.0
    b[5, ::3] = 1e-20
    b[6, ::2] = 1.0
    b[7, 16:] = f32(rng.standard_normal(16))
    return np.stack([b.reshape(COLS), np.zeros(COLS, dtype=np.float32)])


def case_tiny(rng):
    """Magnitudes 1e-2 down to 1e-30: f16 scales that are subnormal, or flush to 0 while the f32 scale
    that quantised the values did not; below llama.cpp's 1e-15 a K-type group counts as zero."""
    scales = f32(np.repeat([1e-2, 1e-4, 1e-5, 1e-6, 1e-7, 1e-9, 1e-20, 1e-30], 32))
    return (f32(rng.standard_normal(COLS)) * scales).reshape(1, COLS)


def case_huge(rng):
    """Magnitudes 1e2 to 1e7: f16 values and scales that round to 65504 or overflow to inf."""
    scales = f32(np.repeat([1e2, 1e3, 1e4, 3e4, 6e4, 1e5, 1e6, 1e7], 32))
    return (f32(rng.standard_normal(COLS)) * scales).reshape(1, COLS)


def case_negative_max(rng):
    """The value of largest magnitude negative; +m before -m and -m before +m (the first wins); all
    negative; all positive (a K-type min clamped to 0); -m repeated; one negative spike."""
    b = f32(rng.uniform(-1, 1, (8, 32)))
    b[0, 5] = -3.0
    b[1, 2], b[1, 9] = 2.0, -2.0
    b[2, 2], b[2, 9] = -2.0, 2.0
    b[3] = -np.abs(b[3]) - 0.5
    b[4] = np.abs(b[4]) + 0.5
    b[5, ::4] = -1.5
    b[5] = np.clip(b[5], -1.5, 1.5)
    b[6] = b[6] * 0.01
    b[6, 30] = -0.9
    b[7, 0] = -1.0
    return b.reshape(1, COLS)


def nudge_until(x, sensitive, steps=64):
    """The float32 nearest x (at most `steps` ulps away) for which sensitive(v) holds, or None."""
    up = down = np.float32(x)
    for _ in range(steps + 1):
        for v in (up, down):
            if sensitive(v):
                return v
        up, down = np.nextafter(up, np.float32(np.inf)), np.nextafter(down, np.float32(-np.inf))
    return None


def fused(p_a, p_b, c):
    """fl32(a * b + c) with one rounding (an FMA), a and b float32."""
    return np.float32(np.float64(p_a) * np.float64(p_b) + np.float64(c))


def case_ties(rng):
    """Exact halves, and values where an FMA (x * id + c rounded once) would quantise differently.
    Row 0, block 0: max |x| = 127 (Q8_0's d = 1): x = k + 0.5, rounded away from zero (not to even).
    Block 1: max = -8 (Q4_0's d = 1, Q5_0's d = 0.5) and x = -7.5 .. 7.5 in halves: trunc(x + 8.5).
    Block 2: min 0, max 15 (Q4_1's d = 1): x = k + 0.5; block 3: the same for Q5_1 (max 31).
    Blocks 4-7 and row 1: for Q4_0 and Q5_0 (four anchors each), values whose x * id lands within an
    ulp of a level boundary: trunc(fl(fl(x * id) + c)) != trunc(fl(x * id + c)), so a fused multiply-add
    gives another level. (Q4_1 / Q5_1 add 0.5 to a larger x * id: a fused add cannot change their level.)"""
    rows = np.zeros((2, 8, 32), dtype=np.float32)
    rows[0, 0] = f32([127.0, -126.5, -0.5, 0.5, 1.5, 2.5, -1.5, -2.5] + [k + 0.5 for k in range(-100, 120, 9)][:24])
    rows[0, 1] = f32([-8.0] + list(np.arange(-7.5, 8.0, 0.5)))
    rows[0, 2] = f32([0.0, 15.0] + [k + 0.5 for k in range(15)] + [k + 0.5 for k in range(14, -1, -1)])
    rows[0, 3] = f32([0.0, 31.0] + [k + 0.5 for k in range(0, 30)])

    def fma_sensitive(divisor, offset, anchor):
        # Q4_0 / Q5_0: d = max / -divisor, id = 1 / d, q = trunc(x * id + offset); x * id in [-divisor, divisor]
        anchor = np.float32(anchor)
        id_ = np.float32(1.0) / (anchor / np.float32(-divisor))
        block = [anchor]
        for level in range(divisor):
            target = np.float32(level - divisor + 0.5)  # x * id at a boundary of trunc(. + offset)
            v = nudge_until(target / id_, lambda v: abs(v) < abs(anchor) and
                            np.trunc(np.float32(v * id_) + np.float32(offset)) != np.trunc(fused(v, id_, offset)))
            if v is not None:
                block.append(v)
        found = len(block) - 1
        assert found >= 1, f"ties: no FMA-sensitive value for anchor {anchor} of divisor {divisor}"
        fill = f32(rng.uniform(-1, 1, 32 - len(block))) * abs(anchor)
        return f32(block + list(fill)), found

    found = {8: 0, 16: 0}
    slots = [(0, 4), (0, 5), (0, 6), (0, 7), (1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (1, 6), (1, 7)]
    anchors = [(8, 0.7371), (16, -1.913), (8, -3.0517), (16, 0.3142), (8, 12.345), (16, -0.0271), (8, -0.5519),
               (16, 7.77), (8, 0.0913), (16, -25.5), (8, -101.3), (16, 2.2222)]
    for (r, b), (divisor, anchor) in zip(slots, anchors):
        rows[r, b], n = fma_sensitive(divisor, divisor + 0.5, anchor)
        found[divisor] += n
    assert min(found.values()) >= 6, f"ties: too few FMA-sensitive values {found}"
    return rows.reshape(2, COLS)


def case_real(rng):
    """A row of a committed checkpoint's embedding (tests/fixtures/hf/gpt2: GPT-2's initialisation,
    N(0, 0.02^2); the repository holds no trained weights small enough to commit)."""
    path = ROOT / "tests/fixtures/hf/gpt2/model.safetensors"
    raw = path.read_bytes()
    header_len = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + header_len])
    info = header["transformer.wte.weight"]
    assert info["dtype"] == "F32", info
    begin, end = info["data_offsets"]
    w = np.frombuffer(raw[8 + header_len + begin:8 + header_len + end], dtype="<f4")
    return f32(w[:COLS]).reshape(1, COLS)


# the cases whose blocks are also stored dequantised (beside random/*): the fixture stays small,
# and the random blocks already hold every scale class (subnormal, zero, negative, 65504, inf)
WITH_DEQUANTISED = ("real",)
CASES = [("normal", case_normal), ("outliers", case_outliers), ("zero_blocks", case_zero_blocks),
         ("ties", case_ties), ("tiny", case_tiny), ("huge", case_huge), ("negative_max", case_negative_max),
         ("real", case_real)]


# ---- random valid blocks (the dequantisers' inputs, every bit pattern but NaN scales) -----------

def random_f16(rng, n, rotate=0):
    """n f16 scales: random of both signs and magnitudes 1e-3 to 10, every other one a special
    (subnormal, the largest, inf, zero, negative subnormal; `rotate` picks where the cycle starts)."""
    v = f32(rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 1, n))
    specials = np.roll(f32([6e-8, 65504.0, np.inf, 0.0, -3e-6]), -rotate)
    v[1::2] = np.resize(specials, v[1::2].size)
    return v.astype(np.float16).view(np.uint8).reshape(n, 2)


def random_blocks(rng, qtype, n_blocks):
    """Random bytes, but f16 / bf16 values and f16 scales that are not NaN."""
    _, size = gguf.GGML_QUANT_SIZES[qtype]
    raw = rng.integers(0, 256, (n_blocks, size), dtype=np.uint8)
    if qtype in (T.F16, T.BF16):
        bits = raw.view(np.uint16)
        if qtype == T.F16:
            nan = ((bits & 0x7c00) == 0x7c00) & ((bits & 0x03ff) != 0)
        else:
            nan = ((bits & 0x7f80) == 0x7f80) & ((bits & 0x007f) != 0)
        bits[nan] &= 0xff80 if qtype == T.BF16 else 0xfc00  # NaN -> inf of the same sign
        return raw
    scale_at = {T.Q8_0: [0], T.Q4_0: [0], T.Q5_0: [0], T.Q4_1: [0, 2], T.Q5_1: [0, 2], T.Q4_K: [0, 2], T.Q6_K: [208],
                T.Q5_K: [0, 2], T.Q3_K: [108]}
    for i, at in enumerate(scale_at[qtype]):
        raw[:, at:at + 2] = random_f16(rng, n_blocks, rotate=2 * i)
    return raw


# ---- llama.cpp's reference quantisers through ctypes ---------------------------------------------

def find_libggml(explicit: str | None) -> Path | None:
    if explicit and os.path.isfile(explicit):
        return Path(explicit)
    if explicit and os.path.isfile(os.path.join(explicit, "libggml-base.so")):  # a folder holding it
        return Path(explicit) / "libggml-base.so"
    venvs = [explicit] if explicit else [os.environ.get("LLAMACPP_VENV"), str(ROOT / ".venv-llamacpp")]
    for venv in filter(None, venvs):
        pattern = os.path.join(venv, "lib", "python3*", "site-packages", "llama_cpp", "lib", "libggml-base.so")
        hits = sorted(glob.glob(pattern))
        if hits:
            return Path(hits[0])
        if explicit:
            sys.exit(f"--llamacpp {explicit}: no llama_cpp/lib/libggml-base.so in it "
                     "(tools/llamacpp/install.sh makes one)")
    return None


class LlamaCpp:
    """quantize_row_<type>_ref of a libggml-base (ggml-quants.c, built without FMA: nothing fused)."""

    def __init__(self, path: Path):
        self.path = path
        self.lib = ctypes.CDLL(str(path))
        self.version = "ggml"
        for field in ("ggml_version", "ggml_commit"):  # exported by recent ggml
            fn = getattr(self.lib, field, None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                self.version += " " + fn().decode()
        origin = path.parent.parent / "ORIGIN"  # tools/peers/build_llamacpp.sh's record of its commit
        if origin.exists():
            self.version += ", " + " ".join(origin.read_text().split()[:2])
        version_file = path.parents[1] / "__init__.py"  # llama_cpp/__init__.py beside llama_cpp/lib/
        if version_file.exists():
            for line in version_file.read_text().splitlines():
                if line.startswith("__version__"):
                    self.version += ", llama-cpp-python " + line.split("=")[1].strip().strip("\"'")

    def quantize(self, name: str, x: np.ndarray, type_id: int) -> np.ndarray:
        fn = getattr(self.lib, f"quantize_row_{name}_ref")
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        fn.restype = None
        block, size = SIZES[type_id]
        rows = []
        for row in np.ascontiguousarray(x, dtype=np.float32):
            # zeroed: Q8_K leaves the bsums of a zero block as they were
            out = np.zeros(row.size // block * size, dtype=np.uint8)
            fn(row.ctypes.data, out.ctypes.data, row.size)
            rows.append(out)
        return np.stack(rows)


# ---- writing -------------------------------------------------------------------------------------

def as_bytes(a: np.ndarray, rows: int) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8).reshape(rows, -1)


def write(path: Path, meta: dict, arrays: list[tuple[str, int, int, int, np.ndarray]]) -> None:
    out = bytearray(b"NFQUANT1")
    text = json.dumps(meta, sort_keys=True).encode()
    out += struct.pack("<I", len(text)) + text + struct.pack("<I", len(arrays))
    for name, type_id, rows, cols, data in arrays:
        block, size = SIZES[type_id]
        assert cols % block == 0 and data.nbytes == rows * cols // block * size, (name, data.nbytes)
        out += struct.pack("<I", len(name)) + name.encode() + struct.pack("<III", type_id, rows, cols)
        out += data.tobytes()
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(bytes(out))
    tmp.replace(path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "tests/fixtures/quant/quants.bin"), help="the fixture file to write")
    ap.add_argument("--llamacpp", help="a llama-cpp-python venv, its libggml-base.so, or a folder holding one "
                    "(tools/peers/build_llamacpp.sh's bin/) "
                    "(default: $LLAMACPP_VENV, then .venv-llamacpp)")
    args = ap.parse_args()
    out = Path(args.out)
    if not out.parent.is_dir():
        sys.exit(f"--out {out}: folder {out.parent} does not exist")
    lib_path = find_libggml(args.llamacpp)
    if lib_path is None:
        sys.exit("no llama.cpp found (--llamacpp, $LLAMACPP_VENV, .venv-llamacpp): its quantize_row_*_ref is "
                 "the oracle of the K types, Q8_K and Q8_1; build it with tools/llamacpp/install.sh")
    llama = LlamaCpp(lib_path)

    np.seterr(all="ignore")  # scales that overflow f16 (case huge, random inf) are meant
    rng = np.random.default_rng(SEED)
    arrays = []
    mismatches = []
    for case, make in CASES:
        x = make(rng)
        rows, cols = x.shape
        arrays.append((f"{case}/x", 0, rows, cols, as_bytes(x, rows)))
        for name, qtype in SMALL.items():
            blocks = as_bytes(quants.quantize(x, qtype), rows)
            arrays.append((f"{case}/{name}", int(qtype), rows, cols, blocks))
            if case in WITH_DEQUANTISED:
                y = quants.dequantize(blocks, qtype).astype(np.float32)
                arrays.append((f"{case}/{name}/y", 0, rows, cols, as_bytes(y, rows)))
            if name.startswith("q"):  # the two oracles agree (a check, not stored)
                if not np.array_equal(llama.quantize(name, x, int(qtype)), blocks):
                    mismatches.append(f"{case}/{name}")
        for name, qtype in K_TYPES.items():
            blocks = llama.quantize(name.replace("_k", "_K"), x, int(qtype))
            arrays.append((f"{case}/{name}", int(qtype), rows, cols, blocks))
            if case in WITH_DEQUANTISED:
                y = quants.dequantize(blocks, qtype).astype(np.float32)
                arrays.append((f"{case}/{name}/y", 0, rows, cols, as_bytes(y, rows)))
        for name, (type_id, _, _) in ACTIVATIONS.items():
            blocks = llama.quantize(name.replace("_k", "_K"), x, type_id)
            arrays.append((f"{case}/{name}", type_id, rows, cols, blocks))
    for name, qtype in {**SMALL, **K_TYPES}.items():
        block, _ = gguf.GGML_QUANT_SIZES[qtype]
        rows, cols = (2, 2 * COLS) if block == 256 else (1, COLS)  # 4 super-blocks, or 8 blocks
        blocks = random_blocks(rng, qtype, rows * cols // block).reshape(rows, -1)
        y = quants.dequantize(blocks, qtype).astype(np.float32)
        arrays.append((f"random/{name}", int(qtype), rows, cols, blocks))
        arrays.append((f"random/{name}/y", 0, rows, cols, as_bytes(y, rows)))

    if mismatches:
        sys.exit("gguf.quants and llama.cpp's reference differ on " + ", ".join(mismatches) + ": which is the oracle?")
    meta = {
        "generator": "tools/quant/make_quant_fixtures.py",
        "seed": SEED,
        "gguf_version": metadata.version("gguf"),
        "numpy_version": np.__version__,
        "llama_cpp_version": llama.version,
        "cases": {case: " ".join((make.__doc__ or "").split()) for case, make in CASES},
    }
    write(out, meta, arrays)
    print(f"wrote {out} ({out.stat().st_size} bytes, {len(arrays)} arrays; {llama.version} at {llama.path})")


if __name__ == "__main__":
    main()
