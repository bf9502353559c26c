"""JSONSchemaBench coverage and compliance of `nanoformer serve`'s response_format json_schema, beside
llama.cpp's JSON-schema-to-grammar converter on the same schemas (docs/structured-output.md).

    python3 tools/grammar/jsonschemabench.py --out /tmp/jsb.json                 # starts a server
    python3 tools/grammar/jsonschemabench.py --url http://127.0.0.1:8998 ...     # a running server
    python3 tools/grammar/jsonschemabench.py --no-server --export-masks F.json   # no requests

The schemas: a seeded sample (--seed, --per-category) of each of the ten categories of
guidance-ai/jsonschemabench's data/, read from a local git mirror (--mirror; no network). Each is
sent as a streamed /v1/chat/completions request with response_format json_schema (--strict, or
--no-strict for the approximating mode), a short fixed prompt, --max-tokens and a seeded
temperature 0.7. Chat, not text completions: response_format is the chat endpoint's field in
OpenAI's API, the way clients send schemas; the chat template adds a few prompt tokens, nothing else.
A 400 is a schema not covered (its message kept, refusals tallied by the keyword it names); a 200
is covered, and its answer is validated with `jsonschema` (validator_for(schema, default=
Draft202012Validator), with FORMAT_CHECKER and without). finish_reason "length" is truncated
(reported apart, neither valid nor invalid). The server has no timing fields, so the times are the
client's: time to the first content token (the schema's GBNF, its compilation, the prefill and the
first mask and token) and the whole request. A preset has random weights: the answers are whatever
the constraint lets a random model write, so they test the constraint, not the model.

llama.cpp's converter: SchemaConverter run as llama.cpp's server runs it (resolve_refs, visit,
format_grammar; an exception or a reported error is a refusal; --llamacpp-timeout), in two copies
(--llamacpp-converter FILE, repeatable, replaces them): "llama.cpp", MaskBench's copy of llama.cpp's
examples/json_schema_to_grammar.py in the mirror (maskbench/maskbench/json_schema_to_grammar.py:
llama.cpp 66c2c93, its whitespace rule widened to [ \t\n\r]*), always; "lcp-py", llama-cpp-python
0.3.36's own port (llama_cpp/llama_grammar.py), where tools/llamacpp/schema_converter.sh extracted it
from the sdist into .cache/llamacpp/ (that sdist's llama.cpp, 0c1e570, no longer ships the Python
converter). With a server, each grammar the first accepts is also sent to our GBNF compiler (the
`grammar` field, max_tokens 1): a 400 there is counted as "accepted, not compiled by ours".

--export-masks FILE writes, for each sampled schema with a valid instance, the schema and one
instance (MaskBench's first valid test of that schema, maskbench/data/<category>---<file>; else a
compliant answer of the server; else a schema `examples` entry that validates): the input of
bench/bench_schema_masks.cpp (NF_BENCH_SCHEMAS=FILE).
"""

import argparse
import collections
import copy
import http.client
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "serve"))

CATEGORIES = ["Glaiveai2K", "Github_trivial", "Github_easy", "Github_medium", "Github_hard", "Github_ultra",
              "Kubernetes", "Snowplow", "WashingtonPost", "JsonSchemaStore"]
DEFAULT_MIRROR = "/work/.mirror/guidance-ai+jsonschemabench/repo"
DEFAULT_CONVERTER = os.path.join(ROOT, ".cache", "llamacpp", "llama_grammar.py")
MESSAGES = [{"role": "user", "content": "Answer with JSON that follows the schema."}]


# ---- the mirror ----------------------------------------------------------------------------------

class Mirror:
    """A bare git repository read through git: the file names under a folder, and many blobs at once."""

    def __init__(self, path, rev="HEAD"):
        self.path = path
        self.commit = self.git("rev-parse", rev).strip()

    def git(self, *args, data=None):
        return subprocess.run(["git", "-C", self.path, *args], input=data, capture_output=True, check=True,
                              text=data is None or isinstance(data, str)).stdout

    def names(self, folder):
        return sorted(self.git("ls-tree", "-r", "--name-only", self.commit, folder).split())

    def read(self, paths):
        """{path: bytes or None (absent)} through one `git cat-file --batch`."""
        query = "".join(f"{self.commit}:{p}\n" for p in paths).encode()
        out = subprocess.run(["git", "-C", self.path, "cat-file", "--batch"], input=query, capture_output=True,
                             check=True).stdout
        found, at = {}, 0
        for p in paths:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            if header[-1] == b"missing":
                found[p], at = None, end + 1
                continue
            size = int(header[2])
            found[p], at = out[end + 1:end + 1 + size], end + 1 + size + 1
        return found


def sample(mirror, seed, per_category):
    """[(category, path, schema or None, error)]: per category a seeded choice of its files (sorted)."""
    chosen = []
    for category in CATEGORIES:
        names = mirror.names(f"data/{category}/")
        rng = random.Random(f"{seed}/{category}")
        chosen += [(category, p) for p in sorted(rng.sample(names, min(per_category, len(names))))]
    blobs = mirror.read([p for _, p in chosen])
    out = []
    for category, path in chosen:
        try:
            out.append((category, path, json.loads(blobs[path]), None))
        except (TypeError, ValueError) as e:
            out.append((category, path, None, f"not JSON: {e}"))
    return out


def maskbench_instances(mirror, schemas):
    """{path: instance text}: MaskBench's first valid test of each schema, as MaskBench writes it
    (json.dumps(data, indent=None, ensure_ascii=False); maskbench/maskbench/runner.py)."""
    paths = {p: "maskbench/data/" + p[len("data/"):].replace("/", "---", 1) for _, p, _, _ in schemas}
    blobs = mirror.read(list(paths.values()))
    found = {}
    for p, mb in paths.items():
        if blobs[mb] is None:
            continue
        for test in json.loads(blobs[mb]).get("tests", []):
            if test.get("valid"):
                found[p] = json.dumps(test["data"], indent=None, ensure_ascii=False)
                break
    return found


def export_answers(mirror, schemas, path, max_bytes=1500):
    """Chat JSONL for training a model that answers in JSON (a length budget for random weights, which
    wander inside strings): MESSAGES, then a valid MaskBench instance (compact) of every schema that is
    NOT in the sample, as the assistant's answer. Returns the number of conversations."""
    sampled = {"maskbench/data/" + p[len("data/"):].replace("/", "---", 1) for _, p, _, _ in schemas}
    names = [n for n in mirror.names("maskbench/data/") if n not in sampled]
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for start in range(0, len(names), 500):
            for blob in mirror.read(names[start:start + 500]).values():
                if blob is None:
                    continue
                for test in json.loads(blob).get("tests", []):
                    text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
                    if test.get("valid") and len(text) <= max_bytes:
                        answer = [*MESSAGES, {"role": "assistant", "content": text}]
                        f.write(json.dumps({"conversations": answer}, ensure_ascii=False) + "\n")
                        count += 1
    return count


# ---- validation ----------------------------------------------------------------------------------

def validate(schema, instance):
    """(error with FORMAT_CHECKER, error without): None where valid; 'validator: ...' where the
    validator itself failed (an unresolvable $ref, a schema it cannot read)."""
    import jsonschema
    from jsonschema import Draft202012Validator
    out = []
    for with_formats in (True, False):
        try:
            cls = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
            checker = cls.FORMAT_CHECKER if with_formats else None  # the draft's format checker
            error = next(iter(cls(schema, format_checker=checker).iter_errors(instance)), None)
            out.append(None if error is None else f"{'/'.join(map(str, error.absolute_path))}: {error.message[:200]}")
        except Exception as e:  # noqa: BLE001 - any failure of the validator is reported as such
            out.append(f"validator: {type(e).__name__}: {str(e)[:200]}")
    return out


# ---- the server ----------------------------------------------------------------------------------

def post(url, path, body, stream):
    """(status, error message, content, finish_reason, usage, seconds to the first content, seconds)."""
    parsed = urllib.parse.urlparse(url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=3600)
    start = time.perf_counter()
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    response = connection.getresponse()
    if response.status != 200:
        text = response.read().decode(errors="replace")
        connection.close()
        try:
            message = json.loads(text)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = text[:300]
        return response.status, message, None, None, None, None, time.perf_counter() - start
    if not stream:
        reply = json.loads(response.read())
        connection.close()
        choice = reply["choices"][0]
        return 200, None, choice.get("text"), choice.get("finish_reason"), reply.get("usage"), None, time.perf_counter() - start
    parts, finish, usage, first = [], None, None, None
    while True:
        line = response.readline()
        if not line:
            break
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        usage = chunk.get("usage") or usage
        for choice in chunk.get("choices", []):
            piece = choice.get("delta", {}).get("content")
            if piece:
                parts.append(piece)
                first = first or time.perf_counter() - start
            finish = choice.get("finish_reason") or finish
    connection.close()
    return 200, None, "".join(parts), finish, usage, first, time.perf_counter() - start


def ask(url, schema, strict, max_tokens, seed):
    body = {"messages": MESSAGES, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": max_tokens,
            "temperature": 0.7, "seed": seed,
            "response_format": {"type": "json_schema", "json_schema": {"name": "schema", "schema": schema, "strict": strict}}}
    return post(url, "/v1/chat/completions", body, stream=True)


KEYWORD = re.compile(r"'(\$?[A-Za-z_][\w-]*)'")


def refusal_reason(message):
    """The keyword a refusal names (the first quoted word after the field's own name), else its start."""
    text = message.split("': ", 1)[-1] if message.startswith("'response_format") else message
    found = KEYWORD.search(text)
    return found.group(1) if found else re.sub(r"\d+", "N", text[:60])


# ---- llama.cpp's converter -----------------------------------------------------------------------

def load_converter(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("llamacpp_json_schema_to_grammar", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Timeout(Exception):
    pass


def llamacpp_convert(module, schema, seconds):
    """(grammar, None) or (None, reason): as llama.cpp's server converts a schema."""
    def alarm(*_):
        raise Timeout()
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        converter = module.SchemaConverter(prop_order={}, allow_fetch=False, dotall=False, raw_pattern=False)
        # resolve_refs rewrites the $refs in place: a copy, so that the next converter and the server get the schema
        schema = converter.resolve_refs(copy.deepcopy(schema), "stdin")
        converter.visit(schema, "")
        errors = getattr(converter, "_errors", None)
        if errors:
            return None, "errors: " + "; ".join(map(str, errors))[:200]
        return converter.format_grammar(), None
    except Timeout:
        return None, f"timeout ({seconds} s)"
    except RecursionError:
        return None, "RecursionError"
    except Exception as e:  # noqa: BLE001 - any exception is the converter refusing the schema
        return None, f"{type(e).__name__}: {str(e)[:160]}"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def default_converters(mirror):
    """MaskBench's copy of llama.cpp's examples/json_schema_to_grammar.py (from the mirror, into
    .cache/llamacpp/), and llama-cpp-python's llama_grammar.py where schema_converter.sh put it."""
    folder = os.path.join(ROOT, ".cache", "llamacpp")
    os.makedirs(folder, exist_ok=True)
    source = "maskbench/maskbench/json_schema_to_grammar.py"
    path = os.path.join(folder, "maskbench_json_schema_to_grammar.py")
    with open(path, "wb") as f:
        f.write(mirror.read([source])[source])
    with open(os.path.join(folder, "ORIGIN-maskbench"), "w") as f:
        f.write(f"guidance-ai/jsonschemabench {mirror.commit[:8]} {source}: MaskBench's copy of llama.cpp's "
                "examples/json_schema_to_grammar.py, llama.cpp 66c2c93 (its header), space rule widened to [ \\t\\n\\r]*\n")
    paths = [path]
    if os.path.exists(DEFAULT_CONVERTER):
        paths.append(DEFAULT_CONVERTER)
    return paths


def converter_origin(path):
    """Where the converter file comes from: the ORIGIN file written beside it, else its header's URL."""
    name = "ORIGIN-maskbench" if "maskbench" in os.path.basename(path) else "ORIGIN"
    origin = os.path.join(os.path.dirname(path), name)
    if os.path.exists(origin):
        return open(origin).read().strip()
    lines = [line.strip() for line in open(path).readlines()[:6] if line.startswith("#") and "http" in line]
    return " ".join(lines) or path


# ---- the report ----------------------------------------------------------------------------------

def percentile(values, q):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(q / 100 * (len(values) - 1)))))]


def pct(part, whole):
    return f"{100 * part / whole:5.1f}%" if whole else "    -"


def seconds(value):
    return f"{value:6.2f}" if value is not None else "     -"


def summarise(rows):
    n = len(rows)
    covered = [r for r in rows if r.get("covered")]
    finished = [r for r in covered if r.get("finish_reason") != "length" and r.get("answer") is not None]
    truncated = [r for r in covered if r.get("finish_reason") == "length"]
    not_json = [r for r in finished if r.get("json_error")]
    checked = [r for r in finished if not r.get("json_error")]
    valid = [r for r in checked if r.get("error_format") is None]
    valid_plain = [r for r in checked if r.get("error_plain") is None]
    validator_failed = [r for r in checked if (r.get("error_format") or "").startswith("validator:")]
    columns = list(rows[0].get("llamacpp", {})) if rows else []
    llama = [r for r in rows if columns and r["llamacpp"][columns[0]]["accepted"]]
    return {
        "n": n, "covered": len(covered), "finished": len(finished), "truncated": len(truncated),
        "not_json": len(not_json), "compliant": len(valid), "compliant_no_format": len(valid_plain),
        "invalid": len(finished) - len(valid) - len(validator_failed),  # not JSON, or a validation error
        "validator_failed": len(validator_failed),
        "llamacpp_accepted": {c: sum(r["llamacpp"][c]["accepted"] for r in rows) for c in columns},
        "llamacpp_not_compiled_by_ours": len([r for r in llama if r.get("llamacpp_ours_error")]),
        "request_s_p50": percentile([r["total_s"] for r in covered if "total_s" in r], 50),
        "request_s_p99": percentile([r["total_s"] for r in covered if "total_s" in r], 99),
        "first_token_s_p50": percentile([r["first_s"] for r in covered if r.get("first_s")], 50),
        "first_token_s_p99": percentile([r["first_s"] for r in covered if r.get("first_s")], 99),
        "refusal_s_p50": percentile([r["total_s"] for r in rows if r.get("covered") is False], 50),
    }


def print_table(by_category, overall, with_server, columns):
    head = f"{'category':16} {'n':>4}"
    if with_server:
        head += f" {'ours':>6}"
    for c in columns:
        head += f" {c:>9}"
    if with_server:
        head += f" {'compliant':>10} {'no-format':>9} {'invalid':>7} {'truncated':>9} {'req p50':>7} {'req p99':>7} {'ttft p50':>8} {'ttft p99':>8}"
    print(head)
    for name, s in list(by_category.items()) + [("overall", overall)]:
        line = f"{name:16} {s['n']:4}"
        if with_server:
            line += f" {pct(s['covered'], s['n']):>6}"
        for c in columns:
            line += f" {pct(s['llamacpp_accepted'][c], s['n']):>9}"
        if with_server:
            line += (f" {pct(s['compliant'], s['finished']):>10} {pct(s['compliant_no_format'], s['finished']):>9}"
                     f" {s['invalid']:7} {pct(s['truncated'], s['covered']):>9}"
                     f" {seconds(s['request_s_p50']):>7} {seconds(s['request_s_p99']):>7}"
                     f" {seconds(s['first_token_s_p50']):>8} {seconds(s['first_token_s_p99']):>8}")
        print(line)


def main():
    from server_process import argument_parser, ServerProcess
    p = argument_parser(__doc__)
    p.add_argument("--mirror", default=DEFAULT_MIRROR, help="git mirror of guidance-ai/jsonschemabench (default: %(default)s)")
    p.add_argument("--rev", default="HEAD", help="its commit (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--per-category", type=int, default=50)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--strict", action=argparse.BooleanOptionalAction, default=True,
                   help="response_format.json_schema.strict (default: true; --no-strict approximates)")
    p.add_argument("--url", help="a running server (default: start one on --model and --tokenizer)")
    p.add_argument("--no-server", action="store_true", help="no requests: llama.cpp's converter and --export-masks only")
    p.add_argument("--context", type=int, default=1024, help="the started server's context (default: %(default)s)")
    p.add_argument("--threads", default=os.environ.get("NANOFORMER_THREADS", "2"), help="the started server's threads")
    p.add_argument("--llamacpp-converter", action="append", help="a json_schema_to_grammar.py with SchemaConverter "
                   "(repeatable; default: MaskBench's copy in the mirror, and .cache/llamacpp/llama_grammar.py "
                   "where tools/llamacpp/schema_converter.sh put it)")
    p.add_argument("--no-llamacpp", action="store_true", help="skip llama.cpp's converter")
    p.add_argument("--llamacpp-timeout", type=int, default=60, help="seconds per schema and converter, then refused "
                   "(default: %(default)s; MaskBench allowed 900 s for compile + masks)")
    p.add_argument("--out", help="JSON report: settings, per-schema rows, summaries")
    p.add_argument("--export-masks", help="schemas with one valid instance each, for bench_schema_masks")
    p.add_argument("--export-max-bytes", type=int, default=0, help="export only schemas up to this many bytes (0: all)")
    p.add_argument("--export-answers", help="chat JSONL of valid MaskBench instances of the schemas not sampled, to "
                   "train a model that answers in JSON (tools/grammar/train_json_model.sh); then stop")
    a = p.parse_args()

    mirror = Mirror(a.mirror, a.rev)
    schemas = sample(mirror, a.seed, a.per_category)
    print(f"jsonschemabench {mirror.commit[:8]} ({a.mirror}): {len(schemas)} schemas, seed {a.seed}, "
          f"{a.per_category} per category", flush=True)
    if a.export_answers:
        print(f"wrote {a.export_answers}: {export_answers(mirror, schemas, a.export_answers)} conversations")
        return
    rows = [{"id": path[len("data/"):], "category": category, "bytes": len(json.dumps(schema)) if schema is not None else 0}
            for category, path, schema, _ in schemas]

    converters = []  # (column, origin, module)
    if not a.no_llamacpp:
        sys.setrecursionlimit(10000)
        for path in a.llamacpp_converter or default_converters(mirror):
            origin = converter_origin(path)
            column = "llama.cpp" if "maskbench" in os.path.basename(path) else "lcp-py" if "llama_grammar" in path else os.path.basename(path)[:9]
            converters.append((column, origin, load_converter(path)))
            print(f"converter {column}: {origin}", flush=True)
        start = time.time()
        for row, (_, _, schema, error) in zip(rows, schemas):
            row["llamacpp"] = {}
            for k, (column, _, module) in enumerate(converters):
                grammar, reason = llamacpp_convert(module, schema, a.llamacpp_timeout) if error is None else (None, error)
                row["llamacpp"][column] = {"accepted": grammar is not None, "reason": reason}
                if k == 0:
                    row["_llamacpp_grammar"] = grammar  # the first converter's: sent to our GBNF compiler
        print(f"  converted in {time.time() - start:.1f} s", flush=True)

    def run(url):
        start = time.time()
        for i, (row, (_, _, schema, error)) in enumerate(zip(rows, schemas)):
            if error is not None:
                row.update(covered=False, error=error, reason="not JSON")
                continue
            status, message, text, finish, usage, first, total = ask(url, schema, a.strict, a.max_tokens,
                                                                     a.seed * 1000003 + i)
            row.update(status=status, total_s=total)
            if status != 200:
                row.update(covered=False, error=message, reason=refusal_reason(message))
            else:
                row.update(covered=True, answer=text, finish_reason=finish, first_s=first,
                           completion_tokens=(usage or {}).get("completion_tokens"))
                if finish != "length":
                    try:
                        instance = json.loads(text)
                        row["error_format"], row["error_plain"] = validate(schema, instance)
                    except ValueError as e:
                        row["json_error"] = str(e)
            grammar = row.pop("_llamacpp_grammar", None)
            if grammar is not None:
                status, message, *_ = post(url, "/v1/completions", {"prompt": "x", "max_tokens": 1, "grammar": grammar}, False)
                row["llamacpp_ours_error"] = None if status == 200 else message
            if (i + 1) % 10 == 0 or i + 1 == len(rows):
                done = rows[:i + 1]
                print(f"  {i + 1}/{len(rows)} ({time.time() - start:.0f} s): covered {sum(bool(r.get('covered')) for r in done)}, "
                      f"invalid {sum(1 for r in done if r.get('error_format') and not r['error_format'].startswith('validator:'))}, "
                      f"truncated {sum(1 for r in done if r.get('finish_reason') == 'length')}", flush=True)

    with_server = not a.no_server
    if with_server:
        if a.url:
            run(a.url)
        else:
            args = ["--model", a.model, "--tokenizer", a.tokenizer, "--context", str(a.context), "--parallel", "1"]
            with ServerProcess(args, env={"NANOFORMER_THREADS": str(a.threads)}) as server:
                print(f"server: {' '.join(server.args)} (NANOFORMER_THREADS={a.threads})", flush=True)
                run(server.url)
    for row in rows:
        row.pop("_llamacpp_grammar", None)

    by_category = {c: summarise([r for r in rows if r["category"] == c]) for c in CATEGORIES}
    overall = summarise(rows)
    print()
    print(f"strict {str(a.strict).lower()}, max_tokens {a.max_tokens}; compliant = valid with FORMAT_CHECKER among finished "
          f"answers (no-format: without it); truncated = finish_reason length among covered; times in seconds, client side")
    print_table(by_category, overall, with_server, [c for c, _, _ in converters])
    if with_server:
        reasons = collections.Counter(r["reason"] for r in rows if r.get("covered") is False)
        print("\nrefusals by keyword (ours):")
        for reason, count in reasons.most_common(15):
            example = next(r["error"] for r in rows if r.get("reason") == reason)
            print(f"  {count:4}  {reason:24} e.g. {example[:110]}")
        invalid = [r for r in rows if r.get("error_format") and not r["error_format"].startswith("validator:")]
        for r in invalid[:10]:
            print(f"  INVALID {r['id']}: {r['error_format'][:150]}")
        if overall["llamacpp_not_compiled_by_ours"]:
            print(f"\nllama.cpp grammars our GBNF compiler refuses: {overall['llamacpp_not_compiled_by_ours']}")
            for r in [r for r in rows if r.get("llamacpp_ours_error")][:5]:
                print(f"  {r['id']}: {r['llamacpp_ours_error'][:140]}")
    for column, origin, _ in converters:
        reasons = collections.Counter(re.sub(r"\d+", "N", r["llamacpp"][column]["reason"][:50]) for r in rows
                                      if not r["llamacpp"][column]["accepted"])
        print(f"\nrefusals of {column} ({origin}):")
        for reason, count in reasons.most_common(10):
            print(f"  {count:4}  {reason}")

    if a.out:
        with open(a.out, "w") as f:
            json.dump({"mirror": a.mirror, "commit": mirror.commit, "seed": a.seed, "per_category": a.per_category,
                       "strict": a.strict, "max_tokens": a.max_tokens, "model": a.model, "tokenizer": a.tokenizer,
                       "llamacpp_converters": {c: origin for c, origin, _ in converters},
                       "formats_checked": sorted(__import__("jsonschema").Draft202012Validator.FORMAT_CHECKER.checkers),
                       "summary": {"overall": overall, **by_category}, "rows": rows}, f, indent=1)
        print(f"\nwrote {a.out}")

    if a.export_masks:
        from_maskbench = maskbench_instances(mirror, schemas)
        exported = []
        for row, (category, path, schema, error) in zip(rows, schemas):
            if error is not None or (a.export_max_bytes and row["bytes"] > a.export_max_bytes):
                continue
            instance, source = from_maskbench.get(path), "maskbench"
            if instance is None and row.get("covered") and row.get("error_format") is None and row.get("answer"):
                instance, source = row["answer"], "server"
            if instance is None and isinstance(schema, dict):
                for example in schema.get("examples", []) if isinstance(schema.get("examples"), list) else []:
                    if validate(schema, example)[0] is None:
                        instance, source = json.dumps(example, ensure_ascii=False), "examples"
                        break
            if instance is None:
                continue
            exported.append({"id": row["id"], "category": category, "covered": row.get("covered"),
                             "instance_source": source, "schema": schema, "instance": instance})
        with open(a.export_masks, "w") as f:
            json.dump({"source": f"guidance-ai/jsonschemabench {mirror.commit}", "seed": a.seed,
                       "per_category": a.per_category, "schemas": exported}, f, ensure_ascii=False)
        print(f"wrote {a.export_masks}: {len(exported)} schemas with an instance "
              f"({collections.Counter(e['instance_source'] for e in exported)})")


if __name__ == "__main__":
    main()
