"""nanoformer's Python package against the CLI (the same logits bit for bit, the same greedy text),
against transformers (logits of a small random LLaMA, committed by tools/golden), and on its own
(tokenizer round trips, chat under a JSON schema, sessions, embeddings, errors).

NANOFORMER_LIBRARY names the libnanoformer.so under test, NF_CLI the nanoformer program beside it,
NF_SOURCE_DIR the checkout (scripts/test-python.sh sets all three)."""
import json
import os
import struct
import subprocess

import numpy as np
import pytest

import nanoformer

SOURCE = os.environ.get("NF_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
CLI = os.environ.get("NF_CLI", os.path.join(SOURCE, "build", "nanoformer"))
FIXTURES = os.path.join(SOURCE, "tests", "fixtures")
GGUF = os.path.join(FIXTURES, "gguf_model", "llama.gguf")  # a tiny llama with its tokenizer


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (F32 and I64 tensors), read without safetensors."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        dtype = {"F32": np.float32, "I64": np.int64}[t["dtype"]]
        out[name] = np.frombuffer(data[begin:end], dtype=dtype).reshape(t["shape"])
    return out


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    """A tiny random LLaMA (seed-0 weights of a config) with a byte-level BPE of ChatML's specials
    (ids 0, 1, 2) trained by `nanoformer tokenizer train`."""
    folder = tmp_path_factory.mktemp("chat")
    subprocess.run([CLI, "tokenizer", "train", "-q", "-i", os.path.join(FIXTURES, "tokenizer", "corpus.txt"), "-v", "300",
                    "-s", "<|endoftext|>", "-s", "<|im_start|>", "-s", "<|im_end|>", "-o", str(folder / "tokenizer.json")],
                   check=True, capture_output=True)
    config = json.load(open(os.path.join(SOURCE, "configs", "llama2c-stories260k.json")))
    config.update(vocab_size=300, dim=32, n_layers=2, n_heads=4, n_kv_heads=2, max_seq_len=256)
    (folder / "config.json").write_text(json.dumps(config))
    with nanoformer.Model.load(str(folder / "config.json"), tokenizer=str(folder / "tokenizer.json")) as model:
        yield model


def test_version():
    assert nanoformer.__version__.count(".") == 2


def test_logits_equal_the_clis_forward_bit_for_bit_and_transformers(tmp_path):
    golden = read_safetensors(os.path.join(FIXTURES, "hf", "llama_gqa.logits.safetensors"))
    ids = golden["ids"][0]
    with nanoformer.Model.load(os.path.join(FIXTURES, "hf", "llama_gqa")) as model:
        logits = model.forward(ids)
        batched = model.forward(np.stack([ids, ids[::-1].copy()]))
    out = tmp_path / "logits.safetensors"
    subprocess.run([CLI, "forward", "--model", os.path.join(FIXTURES, "hf", "llama_gqa"), "--ids",
                    " ".join(str(i) for i in ids), "--out", str(out)], check=True, capture_output=True)
    cli = read_safetensors(str(out))["logits"]
    assert logits.shape == (1, len(ids), cli.shape[-1])
    assert np.array_equal(logits[0], cli)  # bit for bit
    np.testing.assert_allclose(batched[0], logits[0], rtol=1e-6, atol=1e-6)  # another GEMM shape: another summation order
    # transformers' LlamaForCausalLM on the same weights (tools/golden), to float precision
    np.testing.assert_allclose(logits, golden["logits"], rtol=1e-5, atol=1e-5)


def test_greedy_generation_equals_the_clis():
    prompt = "Hello"
    cli = subprocess.run([CLI, "generate", "-m", GGUF, "-p", prompt, "--greedy", "-n", "16"], check=True,
                         capture_output=True, text=True).stdout
    with nanoformer.Model.load(GGUF) as model:
        pieces = list(model.generate(prompt, temperature=0, max_new_tokens=16))
    assert prompt + "".join(pieces) + "\n" == cli
    assert len(pieces) >= 1


def test_tokenizer_round_trip_and_errors(chat_model):
    text = "Hello, <|im_start|>world"
    ids = chat_model.tokenizer.encode(text)
    assert 1 in ids  # <|im_start|>, one id
    assert chat_model.tokenizer.decode(ids) == text
    with pytest.raises(nanoformer.NanoformerError) as e:
        chat_model.tokenizer.decode([100000])
    assert e.value.status == "invalid argument" and "id 100000" in str(e.value)
    with pytest.raises(nanoformer.NanoformerError) as e:
        nanoformer.Model.load("/nonexistent/model.gguf")
    assert e.value.status == "load" and "/nonexistent/model.gguf" in str(e.value)


def test_chat_follows_a_json_schema_and_a_session_reuses_its_cache(chat_model):
    schema = {"type": "object", "properties": {"answer": {"type": "string", "maxLength": 8}, "sure": {"type": "boolean"}},
              "required": ["answer", "sure"], "additionalProperties": False}
    messages = [{"role": "user", "content": "Is it raining?"}]
    for seed in range(3):
        text = chat_model.chat(messages, response_format={"type": "json_schema", "json_schema": {"schema": schema}},
                               seed=seed, temperature=1.0, max_new_tokens=80)
        answer = json.loads(text)
        assert set(answer) == {"answer", "sure"} and isinstance(answer["sure"], bool) and len(answer["answer"]) <= 8
    session = chat_model.session()
    first = chat_model.chat(messages, session=session, temperature=0, max_new_tokens=8)
    held = len(session)
    assert held > 0
    streamed = list(chat_model.chat(messages + [{"role": "assistant", "content": first}, {"role": "user", "content": "Sure?"}],
                                    session=session, stream=True, temperature=0, max_new_tokens=8))
    assert len(session) > held
    assert all(isinstance(p, str) for p in streamed)
    ids = chat_model.apply_chat_template(messages)
    assert ids[0] == 1 and chat_model.tokenizer.decode(ids).endswith("<|im_start|>assistant\n")


def test_embeddings_are_normalised_rows(chat_model):
    vectors = chat_model.embed(["a cat", "a dog", "a cat"])
    assert vectors.shape == (3, chat_model.embedding_size)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert np.array_equal(vectors[0], vectors[2])


def test_stopping_a_stream_early_stops_the_generation(chat_model):
    stream = chat_model.generate("Once", temperature=0, max_new_tokens=200)
    first = next(stream)
    stream.close()  # the consumer leaves: the C call is told to stop and the thread ends
    assert isinstance(first, str)
    # the model is usable at once
    assert len(list(chat_model.generate("Once", temperature=0, max_new_tokens=3))) >= 1
