"""nanoformer from Python: `Model.load(path)` loads anything nanoformer reads (GGUF, Hugging Face,
MiniMind and nanochat folders, our checkpoints, presets) through its C API, with its tokenizer.

    import nanoformer
    model = nanoformer.Model.load("model.gguf")
    ids = model.tokenizer.encode("Hello")
    logits = model.forward(ids)                      # numpy (1, T, vocab_size)
    for piece in model.generate("Once upon a time", max_new_tokens=40, temperature=0):
        print(piece, end="", flush=True)
    answer = model.chat([{"role": "user", "content": "Hi!"}], response_format={"type": "json_object"})
    vectors = model.embed(["a sentence", "another"])  # numpy (2, embedding_size)

Errors are NanoformerError, carrying the C API's one-line message and status.

Every call that computes runs on one engine thread of the package's, whichever thread makes it:
OpenMP keeps a pool of threads per calling thread, and two pools on a machine's few cores throttle
each other's waits (decoding from a second thread took 1.5x the time).
"""
import concurrent.futures
import ctypes
import json
import queue
import threading

import numpy as np

from . import _library as _c

_lib = _c.load_library()

__version__ = _lib.nf_version().decode()


class NanoformerError(RuntimeError):
    """A failed call: `status` is the C API's nf_status name ("invalid argument", "load", ...)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = _c.STATUS_NAMES[status] if 0 <= status < len(_c.STATUS_NAMES) else str(status)


_engine = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="nanoformer-engine")


def _on_engine(fn, *args):
    """fn(*args) on the engine thread; its status, and its message when it failed (read there: the
    C API's message is per thread)."""

    def call():
        status = fn(*args)
        return status, "" if status == _c.OK else _lib.nf_last_error().decode(errors="replace")

    return _engine.submit(call).result()


def _call(fn, *args):
    """fn(*args) on the engine thread; NanoformerError unless it succeeded (or only needs a larger buffer)."""
    status, message = _on_engine(fn, *args)
    if status not in (_c.OK, _c.BUFFER_TOO_SMALL):
        raise NanoformerError(status, message)
    return status


def _free(fn, handle):
    """A handle freed on the engine thread (directly once the interpreter is shutting the engine down)."""
    try:
        _on_engine(lambda: fn(handle) or _c.OK)
    except RuntimeError:
        fn(handle)


def _sized(call, ctype, start=256):
    """A result of unknown length by the two-call convention: `call(buffer, capacity, count)` -> status."""
    count = ctypes.c_size_t(0)
    capacity = start
    while True:
        buffer = (ctype * max(capacity, 1))()
        if call(buffer, capacity, ctypes.byref(count)) == _c.BUFFER_TOO_SMALL:
            capacity = count.value
            continue
        return buffer, count.value


def _text(value):
    return value.encode() if isinstance(value, str) else bytes(value)


class Tokenizer:
    """The model's tokenizer (text <-> ids)."""

    def __init__(self, model):
        self._model = model

    def encode(self, text, add_bos=False):
        data = _text(text)
        buffer, n = _sized(lambda b, cap, cnt: _call(_lib.nf_tokenize, self._model._handle, data, len(data), int(add_bos), b,
                                                     cap, cnt), ctypes.c_int64, len(data) + 8)
        return list(buffer[:n])

    def decode(self, ids):
        ids = list(ids)
        array = (ctypes.c_int64 * max(len(ids), 1))(*ids)
        buffer, n = _sized(lambda b, cap, cnt: _call(_lib.nf_detokenize, self._model._handle, array, len(ids), b, cap, cnt),
                           ctypes.c_char, 4 * len(ids) + 16)
        return bytes(buffer[:n]).decode(errors="replace")


def _messages(messages):
    """[{"role", "content"}, ...] as a ctypes array (the bytes kept alive beside it)."""
    keep = [(_text(m["role"]), _text(m.get("content") or "")) for m in messages]
    array = (_c.ChatMessage * max(len(keep), 1))(*[_c.ChatMessage(role, content) for role, content in keep])
    return array, keep


class Model:
    """A decoder language model with its tokenizer, loaded through nanoformer's C API. Calls from any
    thread are made one at a time on the package's engine thread."""

    def __init__(self, handle):
        self._handle = handle
        self.tokenizer = Tokenizer(self)

    @classmethod
    def load(cls, path, tokenizer=None, threads=0):
        handle = ctypes.c_void_p()
        _call(_lib.nf_model_load, _text(path), _text(tokenizer) if tokenizer else None, threads, ctypes.byref(handle))
        return cls(handle)

    def close(self):
        if self._handle:
            _free(_lib.nf_model_free, self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def vocab_size(self):
        return _lib.nf_model_vocab_size(self._handle)

    @property
    def context_length(self):
        return _lib.nf_model_context_length(self._handle)

    @property
    def embedding_size(self):
        return _lib.nf_model_embedding_size(self._handle)

    def forward(self, ids):
        """Logits at every position: ids (T,) or (B, T) -> float32 array (B, T, vocab_size)."""
        batch = np.ascontiguousarray(np.atleast_2d(np.asarray(ids, dtype=np.int64)))
        if batch.ndim != 2:
            raise ValueError(f"ids must be (T,) or (B, T), got shape {batch.shape}")
        out = np.empty((batch.shape[0], batch.shape[1], self.vocab_size), dtype=np.float32)
        count = ctypes.c_size_t(0)
        _call(_lib.nf_forward, self._handle, batch.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), batch.shape[0],
              batch.shape[1], out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), out.size, ctypes.byref(count))
        return out

    def embed(self, texts, normalize=True):
        """Mean-pooled final hidden states, one row per text: float32 (len(texts), embedding_size)."""
        single = isinstance(texts, (str, bytes))
        rows = []
        for text in [texts] if single else texts:
            data = _text(text)
            out = np.empty(self.embedding_size, dtype=np.float32)
            count = ctypes.c_size_t(0)
            _call(_lib.nf_embed, self._handle, data, len(data), int(normalize),
                  out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), out.size, ctypes.byref(count))
            rows.append(out)
        return rows[0] if single else np.stack(rows)

    def apply_chat_template(self, messages, tools=None, add_generation_prompt=True):
        """The chat's token ids as the model's template renders it."""
        array, _keep = _messages(messages)
        tools_text = _text(json.dumps(tools)) if tools else None
        buffer, n = _sized(lambda b, cap, cnt: _call(_lib.nf_apply_chat_template, self._handle, array, len(messages), tools_text,
                                                     int(add_generation_prompt), b, cap, cnt), ctypes.c_int64, 1024)
        return list(buffer[:n])

    @staticmethod
    def _params(max_new_tokens=256, temperature=0.8, top_k=0, top_p=0.95, min_p=0.0, repetition_penalty=1.0, seed=0,
                stop=None, grammar=None, json_schema=None, tools=None):
        p = _lib.nf_generate_default_params()
        p.max_new_tokens, p.temperature, p.top_k, p.top_p = max_new_tokens, temperature, top_k, top_p
        p.min_p, p.repetition_penalty, p.seed = min_p, repetition_penalty, seed
        stops = [_text(s) for s in ([stop] if isinstance(stop, str) else stop or [])]
        array = (ctypes.c_char_p * max(len(stops), 1))(*stops)
        p.stop, p.stop_count = ctypes.cast(array, ctypes.POINTER(ctypes.c_char_p)), len(stops)
        keep = [array]
        if grammar is not None:
            p.grammar = _text(grammar)
        if json_schema is not None:
            p.json_schema = _text(json_schema if isinstance(json_schema, (str, bytes)) else json.dumps(json_schema))
        if tools:
            p.tools = _text(json.dumps(tools))
        return p, keep

    def _stream(self, run):
        """Pieces of text as a C call made by `run(callback)` (returning its status) produces them on the
        engine thread."""
        pieces = queue.Queue()
        stop = threading.Event()
        done = object()
        outcome = {}

        def on_text(data, length, token, user):
            pieces.put(ctypes.string_at(data, length))
            return 1 if stop.is_set() else 0

        callback = _c.TEXT_CALLBACK(on_text)

        def worker():
            try:
                outcome["status"] = run(callback)
                outcome["message"] = _lib.nf_last_error().decode(errors="replace")
            finally:
                pieces.put(done)

        job = _engine.submit(worker)
        held = b""
        try:
            while True:
                piece = pieces.get()
                if piece is done:
                    break
                held += piece
                text = held.decode(errors="ignore")
                if text.encode() == held:  # whole UTF-8 characters only (the C API never splits one)
                    held = b""
                    yield text
        finally:
            stop.set()
            job.result()
        status = outcome.get("status", _c.INTERNAL)
        if status != _c.OK:
            raise NanoformerError(status, outcome.get("message", ""))

    def generate(self, prompt, **sampling):
        """Continues `prompt`: an iterator of text pieces as they are decided. Sampling: max_new_tokens,
        temperature (0: greedy), top_k, top_p, min_p, repetition_penalty, seed, stop (strings), grammar
        (GBNF), json_schema (a dict or its JSON text)."""
        params, keep = self._params(**sampling)
        data = _text(prompt)
        result = _c.GenerateResult()

        def run(callback):
            _alive = keep  # the stop strings params points at
            return _lib.nf_generate(self._handle, data, len(data), ctypes.byref(params), callback, None,
                                    ctypes.byref(result))

        return self._stream(run)

    def chat(self, messages, tools=None, response_format=None, stream=False, session=None, **sampling):
        """The assistant's answer to `messages` ([{"role", "content"}]), as the model's chat template
        renders them with `tools` (OpenAI's tool list); response_format as OpenAI's: {"type":
        "json_object"} or {"type": "json_schema", "json_schema": {"schema": ...}}. A string, or with
        stream=True an iterator of pieces. A `session` (Model.session()) keeps the KV cache across turns."""
        if response_format:
            kind = response_format.get("type")
            if kind == "json_object":
                sampling["json_schema"] = {"type": "object"}
            elif kind == "json_schema":
                sampling["json_schema"] = response_format["json_schema"]["schema"]
            elif kind != "text":
                raise ValueError(f"response_format type {kind!r}: the types are text, json_object and json_schema")
        owned = session is None
        if owned:
            session = self.session()
        pieces = session.chat(messages, tools=tools, **sampling)
        if stream:
            return pieces
        try:
            return "".join(pieces)
        finally:
            if owned:
                session.close()

    def session(self, context=0):
        """A KV cache that lives across calls (Session.chat)."""
        return Session(self, context)


class Session:
    """A chat's KV cache: each turn computes only its new messages."""

    def __init__(self, model, context=0):
        self._model = model
        self._handle = ctypes.c_void_p()
        _call(_lib.nf_session_new, model._handle, context, ctypes.byref(self._handle))

    def close(self):
        if self._handle:
            _free(_lib.nf_session_free, self._handle)
            self._handle = None

    def __del__(self):
        self.close()

    def __len__(self):
        return _lib.nf_session_length(self._handle)

    def chat(self, messages, tools=None, **sampling):
        params, keep = self._model._params(tools=tools, **sampling)
        array, keep_messages = _messages(messages)

        def run(callback):
            _alive = (keep, keep_messages)  # what params and array point at
            return _lib.nf_session_chat(self._handle, array, len(messages), ctypes.byref(params), callback, None, None)

        return self._model._stream(run)
