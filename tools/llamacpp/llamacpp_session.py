"""One llama.cpp model and context through llama-cpp-python's C API (ctypes), as llama-bench uses it.

Session(path, n_threads, n_ctx, ...) loads a GGUF on the CPU; decode(tokens, pos, all_logits)
runs one batch at positions pos.. and returns its logits (every position's, or the last one's);
clear() empties the KV cache; vocab_only=True loads the tokenizer alone. Used by logits.py.
"""
import ctypes
import sys

import numpy as np

try:
    import llama_cpp
except ImportError:
    sys.exit("llama_cpp is not importable: run tools/llamacpp/install.sh and use its venv's python "
             "(.venv-llamacpp/bin/python, or $LLAMACPP_VENV/bin/python)")

CACHE_TYPES = {"f32": 0, "f16": 1, "q8_0": 8, "q4_0": 2, "bf16": 30}  # ggml_type numbers
FLASH_ATTN = {"auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO, "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
              "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED}


@llama_cpp.llama_log_callback
def _quiet(level, text, user_data):
    pass


class Session:
    def __init__(self, path, n_threads=2, n_ctx=1024, n_batch=2048, n_ubatch=512, cache_type="f16",
                 flash_attn="auto", verbose=False, vocab_only=False):
        if not verbose:
            llama_cpp.llama_log_set(_quiet, ctypes.c_void_p(0))
        llama_cpp.llama_backend_init()
        mp = llama_cpp.llama_model_default_params()
        mp.n_gpu_layers = 0
        mp.vocab_only = vocab_only
        self.model = llama_cpp.llama_model_load_from_file(str(path).encode(), mp)
        if not self.model:
            sys.exit(f"llama.cpp could not load {path} (rerun with --verbose for its log)")
        self.vocab = llama_cpp.llama_model_get_vocab(self.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.ctx = self.batch = None
        if vocab_only:  # the tokenizer alone: tokenize, detokenize, n_vocab
            return
        cp = llama_cpp.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch = n_ctx, min(n_batch, n_ctx), min(n_ubatch, n_batch, n_ctx)
        cp.n_threads = cp.n_threads_batch = n_threads
        cp.type_k = cp.type_v = CACHE_TYPES[cache_type]
        cp.flash_attn_type = FLASH_ATTN[flash_attn]
        cp.no_perf = True
        self.ctx = llama_cpp.llama_init_from_model(self.model, cp)
        if not self.ctx:
            sys.exit(f"llama.cpp could not make a context for {path} (n_ctx {n_ctx}, cache {cache_type}, "
                     f"flash_attn {flash_attn}; rerun with --verbose)")
        self.n_ctx = n_ctx
        self.n_batch = cp.n_batch
        self.batch = llama_cpp.llama_batch_init(self.n_batch, 0, 1)
        self.memory = llama_cpp.llama_get_memory(self.ctx)

    def clear(self):
        llama_cpp.llama_memory_clear(self.memory, True)

    def decode(self, tokens, pos, all_logits=False):
        """Runs tokens at positions pos.. in batches of n_batch; the logits of every position
        (len(tokens) x n_vocab) or of the last one (n_vocab), as float32 numpy."""
        if pos + len(tokens) > self.n_ctx:
            sys.exit(f"llama.cpp context too small: positions {pos}..{pos + len(tokens)} > n_ctx {self.n_ctx}")
        out = []
        b = self.batch
        for start in range(0, len(tokens), self.n_batch):
            chunk = tokens[start:start + self.n_batch]
            last = start + len(chunk) == len(tokens)
            for i, t in enumerate(chunk):
                b.token[i] = int(t)
                b.pos[i] = pos + start + i
                b.n_seq_id[i] = 1
                b.seq_id[i][0] = 0
                b.logits[i] = all_logits or (last and i == len(chunk) - 1)
            b.n_tokens = len(chunk)
            rc = llama_cpp.llama_decode(self.ctx, b)
            if rc != 0:
                sys.exit(f"llama_decode failed with {rc} at positions {pos + start}..{pos + start + len(chunk)}")
            if all_logits:
                out.append(np.ctypeslib.as_array(llama_cpp.llama_get_logits(self.ctx),
                                                 shape=(len(chunk) * self.n_vocab,)).reshape(len(chunk), -1).copy())
        if all_logits:
            return np.concatenate(out)
        return np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(self.ctx, -1), shape=(self.n_vocab,)).copy()

    def decode_one(self, token, pos):
        """One token at pos, logits of it; llama_synchronize'd (what llama-bench's tg times)."""
        b = self.batch
        b.token[0], b.pos[0], b.n_seq_id[0], b.logits[0] = token, pos, 1, 1
        b.seq_id[0][0] = 0
        b.n_tokens = 1
        rc = llama_cpp.llama_decode(self.ctx, b)
        if rc != 0:
            sys.exit(f"llama_decode failed with {rc} at position {pos}")
        llama_cpp.llama_synchronize(self.ctx)

    def tokenize(self, text):
        data = text.encode("utf-8")
        buf = (llama_cpp.llama_token * (len(data) + 8))()
        n = llama_cpp.llama_tokenize(self.vocab, data, len(data), buf, len(buf), False, True)
        if n < 0:
            sys.exit(f"llama_tokenize: {-n} tokens do not fit the buffer")
        return list(buf[:n])

    def detokenize(self, tokens):
        out = b""
        buf = ctypes.create_string_buffer(256)
        for t in tokens:
            n = llama_cpp.llama_token_to_piece(self.vocab, int(t), buf, len(buf), 0, True)
            out += buf.raw[:max(n, 0)]
        return out.decode("utf-8", errors="replace")

    def close(self):
        if self.ctx:
            llama_cpp.llama_batch_free(self.batch)
            llama_cpp.llama_free(self.ctx)
        llama_cpp.llama_model_free(self.model)


def version():
    return llama_cpp.__version__


def system_info():
    return llama_cpp.llama_print_system_info().decode()
