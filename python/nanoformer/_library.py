"""libnanoformer found and its C API declared for ctypes (the declarations mirror
include/nanoformer/c_api.h, API version 1.0)."""
import ctypes
import ctypes.util
import os
import subprocess

API_VERSION_MAJOR = 1

OK, INVALID_ARGUMENT, LOAD, OUT_OF_MEMORY, BUFFER_TOO_SMALL, UNSUPPORTED, INTERNAL = range(7)
STATUS_NAMES = ["ok", "invalid argument", "load", "out of memory", "buffer too small", "unsupported", "internal"]


class ChatMessage(ctypes.Structure):
    _fields_ = [("role", ctypes.c_char_p), ("content", ctypes.c_char_p)]


class GenerateParams(ctypes.Structure):
    _fields_ = [
        ("max_new_tokens", ctypes.c_int64),
        ("temperature", ctypes.c_double),
        ("top_k", ctypes.c_int64),
        ("top_p", ctypes.c_double),
        ("min_p", ctypes.c_double),
        ("repetition_penalty", ctypes.c_double),
        ("seed", ctypes.c_uint64),
        ("stop", ctypes.POINTER(ctypes.c_char_p)),
        ("stop_count", ctypes.c_size_t),
        ("grammar", ctypes.c_char_p),
        ("json_schema", ctypes.c_char_p),
        ("tools", ctypes.c_char_p),
    ]


class GenerateResult(ctypes.Structure):
    _fields_ = [("prompt_tokens", ctypes.c_int64), ("completion_tokens", ctypes.c_int64), ("finish_reason", ctypes.c_int)]


TEXT_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_char), ctypes.c_size_t, ctypes.c_int64,
                                 ctypes.c_void_p)


def _candidates():
    if os.environ.get("NANOFORMER_LIBRARY"):
        yield os.environ["NANOFORMER_LIBRARY"]
        return
    try:
        libdir = subprocess.run(["pkg-config", "--variable=libdir", "nanoformer"], capture_output=True, text=True,
                                check=True).stdout.strip()
        if libdir:
            yield os.path.join(libdir, "libnanoformer.so")
    except (OSError, subprocess.CalledProcessError):
        pass
    found = ctypes.util.find_library("nanoformer")
    if found:
        yield found
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    yield os.path.join(checkout, "build", "libnanoformer.so")


def load_library():
    tried = []
    for path in _candidates():
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _declare(lib)
        if lib.nf_api_version() // 1000 != API_VERSION_MAJOR:
            raise ImportError(f"{path} has C API version {lib.nf_api_version()}, this package speaks {API_VERSION_MAJOR}.x")
        return lib
    raise ImportError("libnanoformer.so not found (set NANOFORMER_LIBRARY to its path); tried: " + "; ".join(tried))


def _declare(lib):
    P, i64, size, f32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_size_t, ctypes.c_float
    i64p, sizep, f32p, charp = ctypes.POINTER(i64), ctypes.POINTER(size), ctypes.POINTER(f32), ctypes.c_char_p
    signatures = {
        "nf_version": (charp, []),
        "nf_api_version": (ctypes.c_int, []),
        "nf_last_error": (charp, []),
        "nf_model_load": (ctypes.c_int, [charp, charp, ctypes.c_int, ctypes.POINTER(P)]),
        "nf_model_free": (None, [P]),
        "nf_model_vocab_size": (i64, [P]),
        "nf_model_context_length": (i64, [P]),
        "nf_model_embedding_size": (i64, [P]),
        "nf_model_end_ids": (ctypes.c_int, [P, i64p, size, sizep]),
        "nf_tokenize": (ctypes.c_int, [P, charp, size, ctypes.c_int, i64p, size, sizep]),
        "nf_detokenize": (ctypes.c_int, [P, i64p, size, ctypes.POINTER(ctypes.c_char), size, sizep]),
        "nf_apply_chat_template": (ctypes.c_int, [P, ctypes.POINTER(ChatMessage), size, charp, ctypes.c_int, i64p, size,
                                                  sizep]),
        "nf_forward": (ctypes.c_int, [P, i64p, size, size, f32p, size, sizep]),
        "nf_embed": (ctypes.c_int, [P, charp, size, ctypes.c_int, f32p, size, sizep]),
        "nf_generate_default_params": (GenerateParams, []),
        "nf_generate": (ctypes.c_int, [P, charp, size, ctypes.POINTER(GenerateParams), TEXT_CALLBACK, P,
                                       ctypes.POINTER(GenerateResult)]),
        "nf_session_new": (ctypes.c_int, [P, i64, ctypes.POINTER(P)]),
        "nf_session_free": (None, [P]),
        "nf_session_chat": (ctypes.c_int, [P, ctypes.POINTER(ChatMessage), size, ctypes.POINTER(GenerateParams),
                                           TEXT_CALLBACK, P, ctypes.POINTER(GenerateResult)]),
        "nf_session_length": (i64, [P]),
    }
    for name, (restype, argtypes) in signatures.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
