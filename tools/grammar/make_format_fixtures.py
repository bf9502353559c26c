#!/usr/bin/env python3
"""Cases for the `format` patterns of src/grammar/schema/formats.cpp, checked against Python's jsonschema.

Reads the patterns from formats.cpp's kFormats table (entries {"name", R"re(^...$)re"}), and for each
format collects strings:
  generated  random strings of the pattern itself (a seeded walk of Python's parse tree of it), and
             copies with one character changed, inserted or removed;
  common     hand-written common valid forms, which the pattern must match;
  invalid    hand-written strings the format refuses (RFC), which the pattern must not match.
Then checks, here, that every string the pattern matches (re.fullmatch) is valid: by jsonschema's
FormatChecker where this environment checks the format (some checkers need optional packages:
`checked` below), and by the hand-written label (generated strings count as valid: for the formats
jsonschema does not check here the patterns were checked by hand against the RFC grammars named in
formats.cpp; host names, also of email, must also pass the idn-hostname checker (idna) and have
at most 253 characters). Any failure is printed and the script exits 1.

Writes tests/fixtures/grammar/format_cases.json: {"formats": {name: {pattern, checked (whether this
environment's FormatChecker checks it)}}, "cases": [{format, string, valid_by_jsonschema
(FormatChecker's verdict; true for a format it does not check), valid (jsonschema's verdict where
checked, and the label where given), common, matches (re.fullmatch)}]}.

With the optional checkers installed (pip install rfc3987 isoduration fqdn), jsonschema checks uri,
uri-reference, duration and hostname too: 5000 generated strings of each pattern all validated then.
tests/grammar/test_formats.cpp checks the C++ regex automaton against it.

Usage: python3 tools/grammar/make_format_fixtures.py [repository root]   (no network; re-running
gives the same file)
"""
import json
import random
import re
import sys
from pathlib import Path

import jsonschema

try:
    import re._parser as sre_parse  # Python 3.11+
    import re._constants as sre_constants
except ImportError:  # older Pythons
    import sre_parse
    import sre_constants

ROOT = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]
CHECKER = jsonschema.Draft202012Validator.FORMAT_CHECKER
GENERATED_PER_FORMAT = 200
MUTATIONS_PER_FORMAT = 200

COMMON = {
    "date": ["2024-01-15", "1999-12-31", "2024-02-29", "2000-02-29", "2023-02-28", "0001-01-01", "9999-12-31",
             "2023-04-30", "2023-07-31"],
    "time": ["12:34:56Z", "00:00:00Z", "23:59:59+05:30", "08:15:00.123Z", "08:15:00-08:00", "12:00:00.5+00:00"],
    "date-time": ["2024-01-15T12:34:56Z", "2024-01-15T12:34:56.789Z", "2024-01-15T12:34:56+01:00",
                  "1985-04-12T23:20:50.52Z", "1996-12-19T16:39:57-08:00", "2024-02-29T00:00:00.000000Z"],
    "duration": ["P1D", "PT1H", "P1Y2M3DT4H5M6S", "PT30M", "P2W", "P3M", "PT0S", "P1DT12H", "PT1M30S"],
    "email": ["user@example.com", "john.smith@mail.example.org", "first.last+tag@sub.domain.co.uk",
              "a@b.io", "user_name-1@example-site.com", "x@localhost"],
    "hostname": ["example.com", "www.example.com", "localhost", "my-host.example.co.uk", "a.b.c.d.e.f.g.io",
                 "server01.internal"],
    "ipv4": ["192.168.0.1", "0.0.0.0", "255.255.255.255", "10.0.0.254", "8.8.8.8", "172.16.254.1"],
    "ipv6": ["::1", "::", "2001:db8::1", "fe80::1:2:3:4", "2001:0db8:85a3:0000:0000:8a2e:0370:7334",
             "1:2:3:4:5:6:7:8", "::ffff:192.168.1.1", "2001:db8:0:0:1::1", "1::", "FE80::ABCD"],
    "uri": ["https://example.com", "http://example.com/path/to/page?query=1&b=2#frag", "mailto:user@example.com",
            "urn:isbn:0451450523", "ftp://ftp.example.org/pub/file.txt", "https://user:pass@example.com:8080/a%20b",
            "file:///etc/hosts", "https://192.168.0.1/", "tel:+1-816-555-1212", "data:text/plain,hello"],
    "uri-reference": ["https://example.com/a", "/path/to/resource", "../parent", "page.html#section", "?q=1",
                      "#frag", "", "//example.com/x", "a/b/c", "mailto:x@y.z"],
    "uuid": ["123e4567-e89b-12d3-a456-426614174000", "00000000-0000-0000-0000-000000000000",
             "F47AC10B-58CC-4372-A567-0E02B2C3D479"],
}

INVALID = {
    "date": ["2023-02-29", "1900-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "0000-01-01", "2024-1-01",
             "24-01-01", "2024-01-32", "2024/01/15", "2024-01-15T00:00:00Z"],
    "time": ["24:00:00Z", "12:60:00Z", "12:00:60Z", "12:00:00", "12:00Z", "12:00:00+24:00", "12:00:00.Z",
             "1:00:00Z"],
    "date-time": ["2024-01-15 12:34:56Z", "2024-01-15T12:34:56", "2024-02-30T00:00:00Z", "2024-01-15T25:00:00Z",
                  "2024-01-15T12:34Z"],
    "duration": ["P", "PT", "1D", "P1H", "PT1D", "P1D2Y", "P1W2D", "P-1D", "PT1.5S", "P1DT"],
    "email": ["plainaddress", "@example.com", "user@", "user@@example.com", ".user@example.com",
              "user.@example.com", "us..er@example.com", "user@-example.com", "user@exa mple.com"],
    "hostname": ["-example.com", "example-.com", "exa_mple.com", "example..com", ".example.com", "a" * 64 + ".com",
                 "ab--cd.com", "", "exa mple.com"],
    "ipv4": ["256.0.0.1", "01.2.3.4", "1.2.3", "1.2.3.4.5", "1.2.3.-4", "1.2.3.4 ", "a.b.c.d", "00.0.0.0"],
    "ipv6": ["1:2:3:4:5:6:7:8:9", "1::2::3", "12345::", "::1%eth0", "1:2:3:4:5:6:7", ":1:2:3:4:5:6:7",
             "g::1", "1:2:3:4:5:6:7:8::", "::256.1.1.1"],
    "uri": ["example.com", "//example.com", "/path", "http://exa mple.com", "1http://x", "http://x/%zz",
            "http://[::1", "http:// x"],
    "uri-reference": ["http://exa mple.com", "a b", "%zz", "1a:b/c?d#e#f", "http://x/<>"],
    "uuid": ["123e4567-e89b-12d3-a456-42661417400", "123e4567e89b12d3a456426614174000",
             "123e4567-e89b-12d3-a456-42661417400g", "{123e4567-e89b-12d3-a456-426614174000}"],
}


def read_patterns(path):
    table = re.findall(r'\{"([a-z0-9-]+)", R"re\((.*?)\)re"\}', path.read_text())
    assert table, f"no patterns found in {path}"
    return dict(table)


def walk(nodes, rng, out):
    """Appends a random string of the parsed pattern `nodes` to out."""
    for op, arg in nodes:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(arg))
        elif name == "IN":
            out.append(pick_from_class(arg, rng))
        elif name == "SUBPATTERN":
            walk(arg[-1], rng, out)
        elif name == "BRANCH":
            walk(rng.choice(arg[1]), rng, out)
        elif name in ("MAX_REPEAT", "MIN_REPEAT"):
            low, high, body = arg
            high = low + 3 if high == sre_constants.MAXREPEAT else high
            count = high if rng.random() < 0.1 else rng.randint(low, min(high, low + 3))
            for _ in range(count):
                walk(body, rng, out)
        elif name == "AT":
            pass  # ^ and $
        else:
            raise ValueError(f"pattern element {name} not handled")


def pick_from_class(items, rng):
    ranges = []
    for op, arg in items:
        name = str(op)
        if name == "LITERAL":
            ranges.append((arg, arg))
        elif name == "RANGE":
            ranges.append(arg)
        else:
            raise ValueError(f"class element {name} not handled")
    low, high = rng.choice(ranges)
    return chr(rng.randint(low, high))


def mutate(s, rng, alphabet):
    i = rng.randint(0, len(s))
    kind = rng.choice(["change", "insert", "remove"])
    if kind == "remove" and s:
        i = min(i, len(s) - 1)
        return s[:i] + s[i + 1:]
    c = rng.choice(alphabet)
    if kind == "change" and i < len(s):
        return s[:i] + c + s[i + 1:]
    return s[:i] + c + s[i:]


def extra_check(fmt, s):
    """RFC rules jsonschema does not check here: host names of at most 253 characters whose labels
    idna accepts (the idn-hostname checker), for hostname and the domain of email."""
    if fmt not in ("hostname", "email") or "@" not in s and fmt == "email":
        return True
    host = s.rsplit("@", 1)[-1] if fmt == "email" else s
    return len(host) <= 253 and CHECKER.conforms(host, "idn-hostname")


def main():
    patterns = read_patterns(ROOT / "src/grammar/schema/formats.cpp")
    assert set(patterns) == set(COMMON), f"formats differ: {sorted(patterns)} vs {sorted(COMMON)}"
    formats, cases, failures = {}, [], []
    alphabet = "0123456789abcdefABCDEFZTPWYMDHS:.-+@/?#%_~[] !\"'x"
    for fmt, pattern in patterns.items():
        rng = random.Random(fmt)  # a seed per format: adding one leaves the others' strings alone
        checked = fmt in CHECKER.checkers
        tree = sre_parse.parse(pattern)
        strings = {}  # string -> (label, common)
        for s in COMMON[fmt]:
            strings[s] = (True, True)
        for s in INVALID[fmt]:
            strings[s] = (False, False)
        generated = []
        for _ in range(GENERATED_PER_FORMAT):
            out = []
            walk(tree, rng, out)
            generated.append("".join(out))
        for s in generated:
            strings.setdefault(s, (True, False))
        if checked:  # mutations only where jsonschema can say whether they are valid
            for _ in range(MUTATIONS_PER_FORMAT):
                strings.setdefault(mutate(rng.choice(generated), rng, alphabet), (None, False))
        for s, (label, common) in sorted(strings.items()):
            matches = re.fullmatch(pattern, s) is not None
            by_jsonschema = CHECKER.conforms(s, fmt)
            # Valid: jsonschema accepts it (where it checks) and the RFC does (the hand label, where
            # given: jsonschema's email check, "contains @", is weaker than RFC 5321).
            valid = (by_jsonschema or not checked) and label is not False and extra_check(fmt, s)
            if checked and label and not by_jsonschema:
                failures.append(f"{fmt}: jsonschema refuses {s!r}, a common form or one of the pattern's own")
            if matches and not valid:
                failures.append(f"{fmt}: the pattern matches {s!r}, which is not valid")
            if common and not matches:
                failures.append(f"{fmt}: the pattern misses the common form {s!r}")
            if label is False and matches:
                failures.append(f"{fmt}: the pattern matches the invalid {s!r}")
            cases.append({"format": fmt, "string": s, "valid_by_jsonschema": by_jsonschema, "valid": valid,
                          "common": common, "matches": matches})
        formats[fmt] = {"pattern": pattern, "checked": checked}
    out = ROOT / "tests/fixtures/grammar/format_cases.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases)  # a case a line
    out.write_text('{"formats": ' + json.dumps(formats, indent=1) + ',\n"cases": [\n' + lines + "\n]}\n")
    print(f"{len(cases)} cases of {len(patterns)} formats to {out}; jsonschema checks here: "
          f"{', '.join(f for f in patterns if f in CHECKER.checkers)}")
    for f in failures:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
