#!/usr/bin/env python3
"""Oracle fixtures for nf::grammar::Automaton::regex (grammar/regex.h): tests/fixtures/grammar/regex_cases.json.

Collects every `pattern` value and `patternProperties` key of the JSONSchemaBench schemas (all ten
categories of data/), generates candidate strings per pattern (random strings from a walk of Python's
own parse of the pattern, so that many match, plus mutations and random text, so that many don't) and
labels each with Python's `re.search(pattern, s, re.ASCII) is not None`. Where Python's `re` and
ECMA-262 differ, the script avoids the difference: \\d \\w \\s are ASCII (re.ASCII) and no string holds
a character where the two dialects' \\s or `.` disagree (\\r, U+0085, U+00A0, U+1680, U+2000-U+200A,
U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF), no string ends with "\\n" (Python's `$` matches before
it), and patterns whose syntax means something else in the other dialect are skipped (`{,n}`, `[]`,
`[^]`, \\u surrogate escapes), as are patterns Python rejects. `(?<name>` is given to Python as `(?P<name>`.
Seeded: re-running gives the same file.

Re-run (no network; the mirror is the git snapshot of github.com/guidance-ai/jsonschemabench):
  python3 tools/grammar/make_regex_fixtures.py [--mirror /work/.mirror/guidance-ai+jsonschemabench/repo]
"""
import argparse
import json
import multiprocessing
import random
import re
import subprocess
import sys
import warnings

try:
    import re._parser as sre_parse
    import re._constants as sre_constants
except ImportError:  # Python < 3.11
    import sre_parse
    import sre_constants

CASES_PER_PATTERN = 20
MAX_LENGTH = 40
OUT = "tests/fixtures/grammar/regex_cases.json"
# Characters where ECMA-262's and Python's \s or `.` disagree, and the surrogates UTF-8 cannot hold.
AVOID = set("\r\x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff") | {chr(c) for c in range(0x2000, 0x200B)}
FILLER = list("abcxyzABZ019_-. /:@\"\\\t\n\x01{}[]()é中") + ["\U0001F600"]


def collect_patterns(mirror):
    names = subprocess.run(["git", "-C", mirror, "ls-tree", "-r", "--name-only", "HEAD", "data/"],
                           check=True, capture_output=True, text=True).stdout.splitlines()
    names = [n for n in names if n.endswith(".json")]
    batch = subprocess.run(["git", "-C", mirror, "cat-file", "--batch"], input="".join(f"HEAD:{n}\n" for n in names).encode(),
                           check=True, capture_output=True).stdout
    patterns, pos = set(), 0
    for _ in names:
        header_end = batch.index(b"\n", pos)
        header = batch[pos:header_end].split()
        if header[-1] == b"missing":
            pos = header_end + 1
            continue
        size = int(header[2])
        blob = batch[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1
        try:
            schema = json.loads(blob)
        except ValueError:
            continue
        stack = [schema]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                if isinstance(node.get("pattern"), str):
                    patterns.add(node["pattern"])
                if isinstance(node.get("patternProperties"), dict):
                    patterns.update(node["patternProperties"].keys())
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    return sorted(patterns), len(names)


def python_pattern(pattern):
    """The pattern for Python's re, or None where the dialects read the same text differently."""
    if re.search(r"\{,|\[\]|\[\^\]|\\u[dD][89a-fA-F]", pattern):
        return None
    return re.sub(r"\(\?<([A-Za-z_][A-Za-z0-9_]*)>", r"(?P<\1>", pattern)


def category_char(rng, category):
    name = str(category)
    digits, word, space = "0123456789", "abcXYZ_09", " \t\n\v\f"
    if "NOT_DIGIT" in name:
        return rng.choice("aZ_ -é")
    if "DIGIT" in name:
        return rng.choice(digits)
    if "NOT_WORD" in name:
        return rng.choice(" -.@é")
    if "WORD" in name:
        return rng.choice(word)
    if "NOT_SPACE" in name:
        return rng.choice("a0_-é")
    return rng.choice(space)


def in_char(rng, items):
    negated = any(op is sre_constants.NEGATE for op, _ in items)
    if negated:
        return rng.choice(FILLER)
    choices = [(op, av) for op, av in items if op is not sre_constants.NEGATE]
    if not choices:
        return rng.choice(FILLER)
    op, av = rng.choice(choices)
    if op is sre_constants.LITERAL:
        return chr(av)
    if op is sre_constants.RANGE:
        lo, hi = av
        return chr(rng.randint(lo, min(hi, lo + 200)))
    if op is sre_constants.CATEGORY:
        return category_char(rng, av)
    return rng.choice(FILLER)


def generate(rng, items, out, depth=0):
    """Appends to `out` a string that the parsed pattern `items` likely matches."""
    if depth > 100 or len(out) > 4 * MAX_LENGTH:
        return
    for op, av in items:
        if op is sre_constants.LITERAL:
            out.append(chr(av))
        elif op is sre_constants.NOT_LITERAL or op is sre_constants.ANY:
            out.append(rng.choice(FILLER))
        elif op is sre_constants.IN:
            out.append(in_char(rng, av))
        elif op is sre_constants.CATEGORY:
            out.append(category_char(rng, av))
        elif op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT) or str(op) == "POSSESSIVE_REPEAT":
            lo, hi, sub = av
            for _ in range(rng.randint(lo, min(hi, lo + 3)) if lo <= 50 else lo):
                generate(rng, sub, out, depth + 1)
        elif op is sre_constants.SUBPATTERN:
            generate(rng, av[-1], out, depth + 1)
        elif str(op) == "ATOMIC_GROUP":
            generate(rng, av, out, depth + 1)
        elif op is sre_constants.BRANCH:
            generate(rng, rng.choice(av[1]), out, depth + 1)
        # anchors, assertions, group references: nothing


def mutate(rng, s):
    kind = rng.randrange(6)
    i = rng.randint(0, len(s))
    if kind == 0:
        return s[:i] + rng.choice(FILLER) + s[i:]
    if kind == 1 and s:
        return s[:max(i - 1, 0)] + s[i:]
    if kind == 2 and s:
        return s[:max(i - 1, 0)] + rng.choice(FILLER) + s[i:]
    if kind == 3:
        return s[:i]
    if kind == 4:
        return s[i:]
    return rng.choice(FILLER) + s + rng.choice(FILLER)


def usable(s):
    return len(s) <= MAX_LENGTH and not (set(s) & AVOID) and not s.endswith("\n")


def cases_for(args):
    """[pattern, [matching strings], [other strings]], or None when Python rejects the pattern."""
    index, pattern = args
    warnings.simplefilter("ignore", FutureWarning)
    rng = random.Random(index * 7919 + len(pattern))
    py = python_pattern(pattern)
    if py is None:
        return None
    try:
        compiled = re.compile(py, re.ASCII)
        tree = sre_parse.parse(py, re.ASCII)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    candidates = {""}
    for _ in range(CASES_PER_PATTERN):
        out = []
        generate(rng, list(tree), out)
        s = "".join(out)
        candidates.add(s)
        candidates.add(mutate(rng, s))
        candidates.add("".join(rng.choice(FILLER) for _ in range(rng.randint(1, 6))))
    strings = sorted(s for s in candidates if usable(s))
    rng.shuffle(strings)
    matching, other = [], []
    for s in strings:
        (matching if compiled.search(s) is not None else other).append(s)
    half = CASES_PER_PATTERN // 2
    return [pattern, sorted(matching[:half]), sorted(other[:CASES_PER_PATTERN - min(len(matching), half)])]


def main():
    warnings.simplefilter("ignore", FutureWarning)  # "possible nested set": the meaning is unchanged
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", default="/work/.mirror/guidance-ai+jsonschemabench/repo")
    parser.add_argument("--out", default=OUT)
    args = parser.parse_args()
    patterns, files = collect_patterns(args.mirror)
    entries, skipped, timed_out = [], 0, 0
    pool = multiprocessing.Pool(1)
    for index, pattern in enumerate(patterns):
        job = pool.apply_async(cases_for, ((index, pattern),))
        try:
            entry = job.get(timeout=10)  # Python's backtracking can take exponential time
        except multiprocessing.TimeoutError:
            pool.terminate()
            pool = multiprocessing.Pool(1)
            entry, timed_out = None, timed_out + 1
        if entry is None:
            skipped += 1
        else:
            entries.append(entry)
    pool.terminate()
    document = {
        "source": "JSONSchemaBench data/ (pattern values, patternProperties keys); labels: Python re.search with re.ASCII",
        "schemas": files, "patterns": len(patterns), "skipped": skipped, "entries": entries,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(document, f, ensure_ascii=False, separators=(",", ":"))
        f.write("\n")
    print(f"{files} schemas, {len(patterns)} distinct patterns, {len(entries)} with cases, {skipped} skipped "
          f"(Python rejects them, the dialects differ, or {timed_out} timed out)", file=sys.stderr)


if __name__ == "__main__":
    main()
