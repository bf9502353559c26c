#!/usr/bin/env python3
"""The test oracle of the JSON Schema compiler (src/grammar/json_schema.cpp).

Writes tests/fixtures/grammar/schema_cases.json, which tests/grammar/test_json_schema_oracle.cpp
reads: JSON Schemas grouped by keyword, each with instances as the TEXT a grammar must see, every
instance labelled by the Python `jsonschema` package (not by anything of nanoformer's):

  valid                  jsonschema.validators.validator_for(schema, default=Draft202012Validator)
                         with format checking on (that validator's FORMAT_CHECKER)
  valid_without_formats  the same validator without format checking
  canonical              the text is in the form the compiler promises it can generate (see
                         `canonical()` below): a valid canonical text must be accepted

and a list of schemas ("refused") whose assertions no context-free grammar expresses, with the
keyword path a strict compile must name.

Rerun (no network; seeded, so the output is the same each time with the same jsonschema):

    python3 tools/grammar/make_schema_fixtures.py            # writes the fixture (and fuzz seeds)
    python3 tools/grammar/make_schema_fixtures.py --check    # fails if they are stale

It also writes a few of the schemas as seeds of the `grammar` fuzz target
(fuzz/corpus/grammar/oracle-*.schema.json; FUZZ_SEEDS lists them).

Labelling details:
  * Instances are labelled from their text, parsed with decimal.Decimal for non-integers (and the
    schema too), so that multipleOf 0.01 is decided in decimal, as a grammar over digits decides
    it, not with binary floating point (where 0.07 / 0.01 is not an integer). For drafts 6 and
    later a Decimal of integral value is an integer, as a float of integral value is to jsonschema.
  * jsonschema checks "hostname", "uri" and "duration" only when optional packages (fqdn, rfc3987,
    isoduration) are installed. So that the fixture does not depend on them, those three formats
    are always checked by this script's own checks (RFC 1123 host names, RFC 3986 absolute URIs,
    RFC 3339 appendix A durations; see FALLBACK_FORMATS); the fixture's "format_checkers" says
    which checker decided each format.
Expectations per schema: "compile" (a strict compile must succeed), "either" (the language is
context-free, but the compiler may refuse it: if it compiles, soundness and completeness hold;
if not, the error must name the keyword path), "refused" (see REFUSED).
"""
import argparse
import copy
import decimal
import json
import random
import re
import sys
import urllib.parse
from importlib import metadata
from pathlib import Path

import jsonschema
from jsonschema import Draft202012Validator, FormatChecker

SEED = 20261129
MUTATIONS_PER_SCHEMA = 30
REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "fixtures" / "grammar" / "schema_cases.json"
# Schemas also written as seeds of the `grammar` fuzz target (fuzz/corpus/grammar/oracle-<id>.schema.json).
FUZZ_SEEDS = ["oneof-discriminated", "ref-mutual-recursion", "ite-const-discriminator", "patprops-with-props",
              "draft04-exclusive-bool-id", "fmt-in-object", "ref-definitions-escapes", "contains-min-max"]
FUZZ_DIR = REPO / "fuzz" / "corpus" / "grammar"
D = decimal.Decimal

# ----------------------------------------------------------------------------------------------
# The schemas. case(group, id, schema, instances, expect=...): `instances` are hand-written
# values (valid and near-boundary invalid ones alike: jsonschema labels them, not this list).

CASES = []


def case(group, cid, schema, instances, expect="compile"):
    CASES.append({"group": group, "id": cid, "schema": schema, "hand": instances, "expect": expect})


# type
case("type", "type-string", {"type": "string"}, ["", "a", "hé\"llo\\", 1, None, True, ["a"], {"a": "b"}, "line\nbreak"])
case("type", "type-integer", {"type": "integer"}, [0, -1, 1234567890123456, 12345678901234567, 1.5, "1", True, None, -0.0, 3.0])
case("type", "type-number", {"type": "number"}, [0, -1.5, 3.14159, 1e-7, 2e20, 0.1234567890123456, "3", False, [1]])
case("type", "type-boolean-null", {"type": ["boolean", "null"]}, [True, False, None, 0, "true", [], {}])
case("type", "type-list", {"type": ["string", "integer", "array"], "items": {"type": "integer"}},
     ["x", 3, [], [1, 2], [1, "a"], 2.5, None, {}])
case("type", "type-none", {}, [1, "a", None, [1, {"a": []}], {"x": {"y": [True]}}])

# properties / required
case("properties", "props-person", {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "email": {"type": "string"}},
    "required": ["name", "age"]},
    [{"name": "Ann", "age": 31}, {"name": "Bob", "age": 40, "email": "b@x.org"}, {"name": "Cy"}, {"age": 3},
     {"name": 5, "age": 3}, {"name": "D", "age": "3"}, {"name": "E", "age": 3, "extra": 1}, [], "x"])
case("properties", "props-nested", {
    "type": "object",
    "properties": {"user": {"type": "object", "properties": {"id": {"type": "integer"}, "tags": {"type": "array", "items": {"type": "string"}}},
                            "required": ["id"]},
                   "active": {"type": "boolean"}},
    "required": ["user"]},
    [{"user": {"id": 1}}, {"user": {"id": 2, "tags": ["a", "b"]}, "active": False}, {"user": {}}, {"active": True},
     {"user": {"id": 1, "tags": [1]}}, {"user": {"id": 1.5}}])
case("properties", "props-all-optional", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}, "c": {"type": "null"}}},
     [{}, {"a": 1}, {"b": "x"}, {"c": None}, {"a": 1, "b": "y", "c": None}, {"a": "1"}, {"c": 0}])
case("properties", "props-no-type", {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
     [{"a": 1}, {"a": 1.5}, {}, 5, "str", [1], None])
case("properties", "props-escaped-names", {"type": "object", "properties": {"a\"b": {"type": "integer"}, "c\\d": {"type": "string"}, "é ü": {"type": "boolean"}}, "required": ["a\"b"]},
     [{"a\"b": 1}, {"a\"b": 1, "c\\d": "x", "é ü": True}, {"c\\d": "x"}, {"a\"b": "1"}])

# additionalProperties
case("additionalProperties", "addl-false", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a"], "additionalProperties": False},
     [{"a": 1}, {"a": 1, "b": 2}, {"a": 1, "c": 3}, {"a": 1, "b": 2, "c": 3}, {}])
case("additionalProperties", "addl-schema", {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": {"type": "integer", "minimum": 0}},
     [{"id": "x"}, {"id": "x", "n": 1}, {"id": "x", "n": 1, "m": 2}, {"id": "x", "n": -1}, {"id": "x", "n": "1"}, {"id": 1}])
case("additionalProperties", "addl-map", {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}},
     [{}, {"a": "b"}, {"k1": "abc", "k2": ""}, {"a": "abcd"}, {"a": 1}, []])
case("additionalProperties", "addl-false-empty", {"type": "object", "additionalProperties": False},
     [{}, {"a": 1}, [], "x"])
case("additionalProperties", "addl-true", {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": True},
     [{}, {"a": "x"}, {"a": "x", "z": [1]}, {"a": 1}])

# pattern
case("pattern", "pattern-code", {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"},
     ["ABC-12", "XYZ-1234", "AB-12", "ABC-1", "ABC-12345", "abc-12", "ABC-123a", "xABC-12"])
case("pattern", "pattern-unanchored", {"type": "string", "pattern": "a+b"},
     ["ab", "xxaab", "abyy", "a", "b", "ba", "", "aaaab!"])
case("pattern", "pattern-classes", {"type": "string", "pattern": "^\\d+(\\.\\d+)?\\s?(kg|lb)$"},
     ["12kg", "1.5 lb", "3 kg", "kg", "1.kg", "12 KG", "12  kg", "7lb"])
case("pattern", "pattern-alternation-quant", {"type": "string", "pattern": "^(foo|bar){1,2}$|^x*$"},
     ["foo", "foobar", "barbar", "foobarfoo", "", "xxx", "fo", "xfoo"])
case("pattern", "pattern-escapes", {"type": "string", "pattern": "^[\\w.-]+@[a-z]+\\.(com|org)$", "maxLength": 20},
     ["a.b-c@ex.com", "x@y.org", "x@y.net", "@y.com", "a b@y.com", "aaaaaaaaaaaaaaa@y.com"])
case("pattern", "pattern-quote", {"type": "string", "pattern": "^[^\"]*\"[^\"]*$"},
     ["a\"b", "\"", "ab", "a\"b\"c", "\\\""])

# patternProperties
case("patternProperties", "patprops-closed", {"type": "object", "patternProperties": {"^x-[a-z]+$": {"type": "string"}}, "additionalProperties": False},
     [{}, {"x-a": "1"}, {"x-ab": "1", "x-cd": "2"}, {"x-a": 1}, {"y": "1"}, {"x-A": "1"}])
case("patternProperties", "patprops-with-props", {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
                                                  "patternProperties": {"^[0-9]+$": {"type": "integer"}}, "additionalProperties": False},
     [{"name": "a"}, {"name": "a", "1": 2}, {"name": "a", "12": 3, "7": 0}, {"name": "a", "1": "2"}, {"name": "a", "x": 1}, {"1": 1}])
case("patternProperties", "patprops-open", {"type": "object", "patternProperties": {"^n_": {"type": "number"}, "^s_": {"type": "string"}}},
     [{}, {"n_a": 1.5, "s_b": "x"}, {"other": [1]}, {"n_a": "x"}, {"s_b": 2}])

# allOf
case("allOf", "allof-ref-base", {
    "$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}, "kind": {"type": "string"}}, "required": ["id"]}},
    "allOf": [{"$ref": "#/$defs/base"}, {"properties": {"label": {"type": "string", "minLength": 1}}, "required": ["label"]}]},
    [{"id": 1, "label": "x"}, {"id": 1, "kind": "k", "label": "x"}, {"id": 1}, {"label": "x"}, {"id": 1, "label": ""}, {"id": "1", "label": "x"}])
case("allOf", "allof-ranges", {"allOf": [{"type": "integer", "minimum": 0}, {"maximum": 10}, {"not": {"const": 5}}]},
     [0, 10, 5, -1, 11, 4, 6, 2.5, "3"])
case("allOf", "allof-strings", {"allOf": [{"type": "string", "minLength": 2}, {"maxLength": 4}, {"pattern": "^a"}]},
     ["ab", "abcd", "a", "abcde", "ba", "a\"c"])
case("allOf", "allof-closed-objects", {"type": "object", "allOf": [
    {"properties": {"a": {"type": "integer"}}, "required": ["a"]},
    {"properties": {"b": {"type": "boolean"}}}], "properties": {"a": True, "b": True}, "additionalProperties": False},
    [{"a": 1}, {"a": 1, "b": True}, {"b": True}, {"a": 1, "c": 1}, {"a": 1, "b": 1}])

# anyOf
case("anyOf", "anyof-scalar", {"anyOf": [{"type": "string", "maxLength": 2}, {"type": "integer", "minimum": 10}]},
     ["", "ab", "abc", 10, 9, 100, 1.5, None])
case("anyOf", "anyof-objects", {"anyOf": [
    {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False},
    {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"], "additionalProperties": False}]},
    [{"a": 1}, {"b": "x"}, {"a": 1, "b": "x"}, {}, {"a": "x"}, {"c": 1}])
case("anyOf", "anyof-nullable", {"type": "object", "properties": {"v": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "number"}, "maxItems": 2}]}}, "required": ["v"]},
     [{"v": None}, {"v": []}, {"v": [1, 2.5]}, {"v": [1, 2, 3]}, {"v": ["1"]}, {}])
case("anyOf", "anyof-overlap", {"anyOf": [{"type": "integer"}, {"minimum": 0}]},
     [1, -1, 0.5, -0.5, "x", None])

# oneOf
case("oneOf", "oneof-discriminated", {
    "oneOf": [
        {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}}, "required": ["kind", "r"], "additionalProperties": False},
        {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number"}, "h": {"type": "number"}}, "required": ["kind", "w", "h"], "additionalProperties": False}]},
    [{"kind": "circle", "r": 1}, {"kind": "rect", "w": 1, "h": 2}, {"kind": "circle", "w": 1, "h": 2}, {"kind": "rect", "r": 1},
     {"kind": "circle", "r": -1}, {"kind": "square", "r": 1}, {"kind": "rect", "w": 1}])
case("oneOf", "oneof-disjoint-types", {"oneOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
     ["a", 1, None, 1.5, True, []])
case("oneOf", "oneof-overlapping-numbers", {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 0}]},
     [1, -1, 0.5, -0.5, 0, 3], expect="either")
case("oneOf", "oneof-overlapping-objects", {"oneOf": [
    {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
    {"type": "object", "properties": {"b": {"type": "string"}}, "required": ["b"]}]},
    [{"a": "x"}, {"b": "y"}, {"a": "x", "b": "y"}, {}, {"a": 1}], expect="either")
case("oneOf", "oneof-enums", {"oneOf": [{"enum": ["a", "b", "c"]}, {"enum": ["c", "d"]}]},
     ["a", "b", "c", "d", "e"])

# not
case("not", "not-type", {"not": {"type": "string"}}, [1, None, [], {}, "a", ""])
case("not", "not-const-in-string", {"type": "string", "not": {"enum": ["admin", "root"]}}, ["user", "admin", "root", "", "roo", "admins"])
case("not", "not-required", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "not": {"required": ["b"]}},
     [{}, {"a": 1}, {"b": 1}, {"a": 1, "b": 2}])
case("not", "not-range", {"type": "integer", "not": {"minimum": 3, "maximum": 7}}, [2, 3, 7, 8, 5, -100, 100])
case("not", "not-properties-minimum", {"not": {"properties": {"a": {"minimum": 3}}}},
     [{"a": 2}, {"a": 3}, {"a": 2.99}, {"a": "x"}, {}, {"b": 1}, 5, "s"], expect="either")

# if/then/else
case("if-then-else", "ite-const-discriminator", {
    "type": "object",
    "properties": {"country": {"enum": ["US", "CA"]}, "postal": {"type": "string"}},
    "required": ["country", "postal"],
    "if": {"properties": {"country": {"const": "US"}}},
    "then": {"properties": {"postal": {"pattern": "^[0-9]{5}$"}}},
    "else": {"properties": {"postal": {"pattern": "^[A-Z][0-9][A-Z] [0-9][A-Z][0-9]$"}}}},
    [{"country": "US", "postal": "12345"}, {"country": "CA", "postal": "K1A 0B1"}, {"country": "US", "postal": "K1A 0B1"},
     {"country": "CA", "postal": "12345"}, {"country": "US", "postal": "1234"}, {"country": "MX", "postal": "1"}])
case("if-then-else", "ite-number", {"type": "integer", "if": {"minimum": 10}, "then": {"multipleOf": 10}, "else": {"maximum": 5}},
     [10, 20, 15, 5, 6, 9, -3, 0])
case("if-then-else", "ite-no-else", {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "string"}},
                                     "if": {"properties": {"a": {"const": True}}, "required": ["a"]}, "then": {"required": ["b"]}},
     [{}, {"a": False}, {"a": True, "b": "x"}, {"a": True}, {"b": "y"}])

# numbers: minimum / maximum / exclusive
case("numeric-bounds", "int-range", {"type": "integer", "minimum": -5, "maximum": 120}, [-5, 120, -6, 121, 0, 99, 100, 1000, -50])
case("numeric-bounds", "num-exclusive", {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, [0, 1, 0.5, 0.0001, 0.9999, 1.0001, -0.1, 0.0])
case("numeric-bounds", "num-decimal-bounds", {"type": "number", "minimum": 1.25, "maximum": 99.5}, [1.25, 1.24, 99.5, 99.51, 50, 1.2500001, 99.4999])
case("numeric-bounds", "int-exclusive-big", {"type": "integer", "exclusiveMinimum": 999, "maximum": 100000}, [999, 1000, 100000, 100001, 5000, 99999])
case("numeric-bounds", "num-negative-range", {"type": "number", "minimum": -10.5, "exclusiveMaximum": -2}, [-10.5, -10.51, -2, -2.0001, -5, 0])
case("numeric-bounds", "int-minimum-only", {"type": "integer", "minimum": 18}, [18, 17, 19, 1000000, -18])

# multipleOf
case("multipleOf", "mult-10", {"type": "integer", "multipleOf": 10}, [0, 10, -20, 15, 100, 1000000, 5])
case("multipleOf", "mult-0.01", {"type": "number", "multipleOf": 0.01, "minimum": 0}, [0, 0.07, 1.99, 12.5, 0.001, 1.999, 3])
case("multipleOf", "mult-0.1-range", {"type": "number", "multipleOf": 0.1, "minimum": 0, "maximum": 1}, [0, 0.1, 0.5, 1, 0.15, 1.1, 0.3])
case("multipleOf", "mult-100-int", {"type": "integer", "multipleOf": 100, "maximum": 1000}, [100, 1000, 1100, 150, 0, -300])
case("multipleOf", "mult-1-number", {"type": "number", "multipleOf": 1}, [1, 2, 1.5, -7, 0.5])
case("multipleOf", "mult-0.3", {"type": "number", "multipleOf": 0.3}, [0.3, 0.6, 0.9, 3, 0.5, 1, 0.31], expect="either")

# minLength / maxLength
case("string-length", "len-range", {"type": "string", "minLength": 2, "maxLength": 5}, ["ab", "abcde", "a", "abcdef", "héllo", "hé", "é", "\"\\"])
case("string-length", "len-exact", {"type": "string", "minLength": 3, "maxLength": 3}, ["abc", "ab", "abcd", "€€€", "😀😀😀", "😀😀"])
case("string-length", "len-min", {"type": "string", "minLength": 1}, ["a", "", " ", "abc"])
case("string-length", "len-max-zero", {"type": "string", "maxLength": 0}, ["", "a"])

# minItems / maxItems
case("array-length", "items-range", {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}, [[1], [1, 2, 3], [], [1, 2, 3, 4], [1, "2"]])
case("array-length", "items-min", {"type": "array", "minItems": 2}, [[1, 2], [1], [], ["a", None, {}]])
case("array-length", "items-max-zero", {"type": "array", "maxItems": 0}, [[], [1]])
case("array-length", "items-of-objects", {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}, "maxItems": 2},
     [[], [{"x": 1}], [{"x": 1}, {"x": 2.5}], [{"x": 1}, {"x": 2}, {"x": 3}], [{"y": 1}]])

# prefixItems / items / additionalItems
case("tuple", "prefix-closed", {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": False},
     [["a", 1], ["a"], [], ["a", 1, 2], [1, "a"], ["a", 1.5]])
case("tuple", "prefix-then-items", {"type": "array", "prefixItems": [{"const": "cmd"}], "items": {"type": "number"}, "minItems": 2},
     [["cmd", 1], ["cmd", 1, 2.5], ["cmd"], ["x", 1], ["cmd", "1"]])
case("tuple", "draft07-items-list", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                     "items": [{"type": "boolean"}, {"type": "string"}], "additionalItems": False},
     [[True, "a"], [True], [], [True, "a", 1], ["a", True]])
case("tuple", "draft07-additional-schema", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "array",
                                            "items": [{"type": "integer"}], "additionalItems": {"type": "string"}},
     [[1], [1, "a", "b"], [1, 2], ["a"], []])

# contains
case("contains", "contains-int", {"type": "array", "contains": {"type": "integer"}}, [[1], ["a", 2], [], ["a"], [1.5, "b", 3]])
case("contains", "contains-min-max", {"type": "array", "items": {"type": "string"}, "contains": {"const": "x"}, "minContains": 2, "maxContains": 3},
     [["x", "x"], ["x", "a", "x", "x"], ["x"], ["x", "x", "x", "x"], [], ["a", "x", "b", "x"]])
case("contains", "contains-in-object", {"type": "object", "properties": {"roles": {"type": "array", "items": {"enum": ["user", "admin", "guest"]}, "contains": {"const": "admin"}}}, "required": ["roles"]},
     [{"roles": ["admin"]}, {"roles": ["user", "admin"]}, {"roles": ["user"]}, {"roles": []}, {"roles": ["boss"]}])

# uniqueItems
case("uniqueItems", "unique-enum", {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "uniqueItems": True},
     [[], ["red"], ["red", "green"], ["blue", "green", "red"], ["red", "red"], ["red", "green", "red"], ["pink"]])
case("uniqueItems", "unique-boolean", {"type": "array", "items": {"type": "boolean"}, "uniqueItems": True}, [[], [True], [True, False], [True, True], [False, True, False]])
case("uniqueItems", "unique-max-one", {"type": "array", "items": {"type": "object"}, "uniqueItems": True, "maxItems": 1}, [[], [{}], [{"a": 1}], [{}, {}], [{}, {"a": 1}]])
case("uniqueItems", "unique-strings-unbounded", {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
     [[], ["a"], ["a", "b"], ["a", "a"]], expect="either")
case("uniqueItems", "unique-false", {"type": "array", "items": {"type": "integer"}, "uniqueItems": False}, [[1, 1], [], [1, 2]])

# minProperties / maxProperties
case("object-size", "props-min-max", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}},
                                      "minProperties": 1, "maxProperties": 2, "additionalProperties": False},
     [{"a": 1}, {"a": 1, "c": 3}, {}, {"a": 1, "b": 2, "c": 3}, {"d": 1}])
case("object-size", "map-max", {"type": "object", "additionalProperties": {"type": "boolean"}, "maxProperties": 2}, [{}, {"a": True}, {"a": True, "b": False}, {"a": True, "b": False, "c": True}])
case("object-size", "map-min", {"type": "object", "minProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": [2]}])

# dependencies / dependentRequired / dependentSchemas
case("dependencies", "dep-required-2019", {"$schema": "https://json-schema.org/draft/2019-09/schema", "type": "object",
                                           "properties": {"card": {"type": "string"}, "billing": {"type": "string"}, "name": {"type": "string"}},
                                           "dependentRequired": {"card": ["billing"]}},
     [{}, {"name": "a"}, {"card": "1", "billing": "x"}, {"card": "1"}, {"billing": "x"}])
case("dependencies", "dep-schemas", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                                     "dependentSchemas": {"a": {"properties": {"b": {"minimum": 10}}, "required": ["b"]}}},
     [{}, {"b": 1}, {"a": 1, "b": 10}, {"a": 1, "b": 9}, {"a": 1}])
case("dependencies", "dep-draft07-array", {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                                           "properties": {"x": {"type": "number"}, "y": {"type": "number"}, "z": {"type": "number"}},
                                           "dependencies": {"x": ["y"], "y": {"required": ["z"]}}},
     [{}, {"z": 1}, {"x": 1, "y": 2, "z": 3}, {"x": 1}, {"y": 1}, {"x": 1, "y": 2}])

# propertyNames
case("propertyNames", "propnames-pattern", {"type": "object", "propertyNames": {"pattern": "^[a-z_]+$", "maxLength": 8}, "additionalProperties": {"type": "integer"}},
     [{}, {"ab": 1}, {"a_b": 1, "cd": 2}, {"A": 1}, {"abcdefghi": 1}, {"ab": "x"}])
case("propertyNames", "propnames-enum", {"type": "object", "propertyNames": {"enum": ["x", "y"]}}, [{}, {"x": 1}, {"x": 1, "y": [2]}, {"z": 1}])
case("propertyNames", "propnames-false", {"type": "object", "propertyNames": False}, [{}, {"a": 1}])

# const / enum
case("const-enum", "const-object", {"const": {"a": [1, "x"], "b": None}}, [{"a": [1, "x"], "b": None}, {"a": [1, "x"]}, {"a": [1, "y"], "b": None}, {"b": None, "a": [1, "x"]}, 1])
case("const-enum", "enum-mixed", {"enum": [1, "one", None, True, [1, 2], {"k": "v"}, 2.5]},
     [1, "one", None, True, [1, 2], {"k": "v"}, 2.5, 1.0, 2, "One", False, [2, 1], {"k": "w"}])
case("const-enum", "const-string-escapes", {"const": "say \"hi\" \\o/"}, ["say \"hi\" \\o/", "say \"hi\" \\o", "say hi", "say \"hi\"\n\\o/"])
case("const-enum", "const-control-char", {"const": "a\nb\u0001"}, ["a\nb\u0001", "a\nb", "ab\u0001"])
case("const-enum", "enum-in-object", {"type": "object", "properties": {"level": {"enum": ["low", "mid", "high"]}, "n": {"const": 3}}, "required": ["level"]},
     [{"level": "low"}, {"level": "mid", "n": 3}, {"level": "top"}, {"level": "low", "n": 4}])
case("const-enum", "enum-numbers", {"type": "number", "enum": [0, 0.5, 10, -3]}, [0, 0.5, 10, -3, 1, 0.25, -0])

# $ref
case("ref", "ref-defs", {"type": "object", "properties": {"home": {"$ref": "#/$defs/addr"}, "work": {"$ref": "#/$defs/addr"}}, "required": ["home"],
                         "$defs": {"addr": {"type": "object", "properties": {"street": {"type": "string"}, "zip": {"type": "string", "pattern": "^[0-9]{5}$"}}, "required": ["street"]}}},
     [{"home": {"street": "a"}}, {"home": {"street": "a", "zip": "12345"}, "work": {"street": "b"}}, {"home": {}}, {"home": {"street": "a", "zip": "1"}}])
case("ref", "ref-definitions-escapes", {"definitions": {"a/b": {"type": "integer"}, "c~d": {"type": "string"}, "e%f": {"type": "boolean"}},
                                        "type": "array", "prefixItems": [{"$ref": "#/definitions/a~1b"}, {"$ref": "#/definitions/c~0d"}, {"$ref": "#/definitions/e%25f"}]},
     [[1, "x", True], [1], [], ["x"], [1, 2], [1, "x", "y"]])
case("ref", "ref-recursive-tree", {"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}, "required": ["value"], "additionalProperties": False}},
                                   "$ref": "#/$defs/node"},
     [{"value": 1}, {"value": 1, "children": []}, {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]},
      {"value": 1, "children": [{}]}, {"value": "1"}, {"value": 1, "children": [{"value": 2, "x": 1}]}])
case("ref", "ref-root-recursive-list", {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"$ref": "#"}]}},
     [[], [1], [1, [2, [3]]], [[[]]], [1, "a"], [[1, 2.5]]])
case("ref", "ref-nested-chain", {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/c"}, "c": {"type": "string", "maxLength": 2}},
                                 "type": "object", "properties": {"v": {"$ref": "#/$defs/a"}}, "required": ["v"]},
     [{"v": ""}, {"v": "ab"}, {"v": "abc"}, {"v": 1}, {}])
case("ref", "ref-mutual-recursion", {"$defs": {"expr": {"anyOf": [{"type": "number"}, {"$ref": "#/$defs/op"}]},
                                               "op": {"type": "object", "properties": {"op": {"enum": ["+", "*"]}, "args": {"type": "array", "items": {"$ref": "#/$defs/expr"}, "minItems": 2, "maxItems": 2}},
                                                      "required": ["op", "args"], "additionalProperties": False}},
                                     "$ref": "#/$defs/expr"},
     [1, {"op": "+", "args": [1, 2]}, {"op": "*", "args": [{"op": "+", "args": [1, 2]}, 3]}, {"op": "-", "args": [1, 2]}, {"op": "+", "args": [1]}, "x"])

# format
case("format", "fmt-date-time", {"type": "string", "format": "date-time"},
     ["2024-01-15T10:30:00Z", "2024-01-15T10:30:00.123+02:00", "2024-02-29T23:59:59-05:30", "2023-02-29T10:00:00Z", "2024-01-15 10:30:00Z",
      "2024-13-01T00:00:00Z", "2024-01-15T24:00:00Z", "2024-01-15T10:30:00", "2024-01-15t10:30:00z", "not a date"])
case("format", "fmt-date", {"type": "string", "format": "date"}, ["2024-01-15", "2000-02-29", "1900-02-29", "2023-04-31", "2024-1-5", "2024-01-15T00:00:00Z", "20240115"])
case("format", "fmt-time", {"type": "string", "format": "time"}, ["10:30:00Z", "23:59:59.5+01:00", "10:30:00", "25:00:00Z", "10:60:00Z", "10:30Z"])
case("format", "fmt-duration", {"type": "string", "format": "duration"}, ["P1D", "PT1H30M", "P1Y2M3DT4H5M6S", "P2W", "P", "PT", "1D", "P1H", "P1DT"])
case("format", "fmt-email", {"type": "string", "format": "email"}, ["a@example.com", "first.last@sub.example.org", "no-at-sign", "@", "a@b"])
case("format", "fmt-hostname", {"type": "string", "format": "hostname"}, ["example.com", "a-b.c-d.org", "localhost", "-bad.com", "bad-.com", "a..b", "under_score.com", "x" * 64 + ".com"])
case("format", "fmt-ipv4", {"type": "string", "format": "ipv4"}, ["192.168.0.1", "0.0.0.0", "255.255.255.255", "256.0.0.1", "1.2.3", "01.2.3.4", "1.2.3.4.5"])
case("format", "fmt-ipv6", {"type": "string", "format": "ipv6"}, ["::1", "2001:db8::8a2e:370:7334", "fe80::1", "::ffff:192.168.1.1", "2001:db8:::1", "12345::", "1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7:8:9"])
case("format", "fmt-uri", {"type": "string", "format": "uri"}, ["https://example.com/a/b?q=1#f", "urn:isbn:0451450523", "mailto:a@b.org", "/relative/path", "http://exa mple.com", "no scheme"])
case("format", "fmt-uuid", {"type": "string", "format": "uuid"}, ["123e4567-e89b-12d3-a456-426614174000", "123E4567-E89B-12D3-A456-426614174000", "123e4567e89b12d3a456426614174000",
                                                                  "123e4567-e89b-12d3-a456-42661417400", "g23e4567-e89b-12d3-a456-426614174000"])
case("format", "fmt-in-object", {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "at": {"type": "string", "format": "date-time"}, "ip": {"type": "string", "format": "ipv4"}},
                                 "required": ["id", "at"], "additionalProperties": False},
     [{"id": "123e4567-e89b-12d3-a456-426614174000", "at": "2024-01-15T10:30:00Z"}, {"id": "123e4567-e89b-12d3-a456-426614174000", "at": "2024-01-15T10:30:00Z", "ip": "10.0.0.1"},
      {"id": "x", "at": "2024-01-15T10:30:00Z"}, {"id": "123e4567-e89b-12d3-a456-426614174000", "at": "yesterday"}])
case("format", "fmt-unknown", {"type": "string", "format": "color-hex"}, ["#fff", "anything"])

# drafts
case("drafts", "draft04-exclusive-bool-id", {"$schema": "http://json-schema.org/draft-04/schema#", "id": "http://example.com/root.json",
                                             "type": "object", "properties": {"p": {"type": "number", "minimum": 0, "maximum": 100, "exclusiveMaximum": True},
                                                                              "q": {"type": "integer", "minimum": 1, "exclusiveMinimum": True}},
                                             "required": ["p"]},
     [{"p": 0}, {"p": 99.9}, {"p": 100}, {"p": -1}, {"p": 1, "q": 1}, {"p": 1, "q": 2}, {"p": 1, "q": 2.0}])
case("drafts", "draft07-ref-siblings", {"$schema": "http://json-schema.org/draft-07/schema#",
                                        "definitions": {"s": {"type": "string"}},
                                        "type": "object", "properties": {"name": {"$ref": "#/definitions/s", "maxLength": 2}}, "required": ["name"]},
     [{"name": "a"}, {"name": "abcdef"}, {"name": 1}, {}])
case("drafts", "draft2019-defs-dependent", {"$schema": "https://json-schema.org/draft/2019-09/schema", "$defs": {"pos": {"type": "integer", "minimum": 1}},
                                            "type": "object", "properties": {"from": {"$ref": "#/$defs/pos"}, "to": {"$ref": "#/$defs/pos", "maximum": 10}},
                                            "dependentRequired": {"to": ["from"]}},
     [{}, {"from": 1}, {"from": 1, "to": 10}, {"to": 2}, {"from": 1, "to": 11}, {"from": 0}])
case("drafts", "draft2020-prefix", {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "array",
                                    "prefixItems": [{"type": "number"}, {"type": "number"}], "items": False, "minItems": 2},
     [[1, 2], [1.5, -2], [1], [1, 2, 3], ["1", 2]])
case("drafts", "draft06-const-examples", {"$schema": "http://json-schema.org/draft-06/schema#", "type": "object", "properties": {"v": {"const": 1, "examples": [1]}},
                                          "required": ["v"], "additionalProperties": False},
     [{"v": 1}, {"v": 1.0}, {"v": 2}, {}])

# annotations and unknown keywords
case("annotations", "k8s-preserve", {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"spec": {"type": "object", "x-kubernetes-int-or-string": True,
                                                                                                                            "properties": {"replicas": {"type": "integer", "minimum": 0}}}},
                                     "required": ["spec"]},
     [{"spec": {}}, {"spec": {"replicas": 3}}, {"spec": {"replicas": -1}}, {}])
case("annotations", "snowplow-self", {"$schema": "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
                                      "self": {"vendor": "com.acme", "name": "click", "format": "jsonschema", "version": "1-0-0"},
                                      "type": "object", "properties": {"target": {"type": "string", "maxLength": 10}}, "required": ["target"], "additionalProperties": False},
     [{"target": "btn"}, {"target": "x" * 11}, {}, {"target": "a", "b": 1}])
case("annotations", "typos-and-vendor", {"type": "object", "descripton": "typo of description", "_format": "x", "readOnly": True, "deprecated": True,
                                         "title": "T", "$comment": "c", "examples": [{"a": 1}], "default": {},
                                         "properties": {"a": {"type": "integer", "writeOnly": True, "contentMediaType": "text/plain", "x-order": 1}}},
     [{}, {"a": 1}, {"a": "1"}])
case("annotations", "unknown-with-assertion-names", {"type": "string", "maxlength": 1, "minimun": 5, "x-pattern": "^a$"}, ["abc", "", 5])

# Texts that are not JSON at all (a leading zero, a bare dot, NaN, a trailing comma, ...): no
# grammar of a schema may accept them.
NOT_JSON = {
    "type-integer": ["01", "-01", "+1", "1.", "00", "- 1", "NaN", "Infinity", "0x1F", "1_000"],
    "type-number": [".5", "1.e3", "-.5", "01.5", "1e", "1e+", "-", "--1", "-Infinity", "1.5.2"],
    "type-string": ["'a'", "\"a", "\"\\x\"", "\"\\u12\"", "\"a\tb\"", "\"\\\""],
    "props-person": ['{"name":"a","age":1,}', '{name:"a","age":1}', '{"name":"a" "age":1}', '{"name":"a","age":01}', '{"name":"a","age":1}}'],
    "type-list": ["[1,]", "[,1]", "[1 2]", "[1,,2]", "[01]", "[\"a\",]"],
    "type-none": ["", "tru", "nul", "True", "{\"a\":}", "[", "{}}", "1 2", "{\"a\" 1}"],
}

# ----------------------------------------------------------------------------------------------
# Schemas whose assertions no context-free grammar expresses in general: a strict compile must
# refuse them, naming the keyword path (a JSON pointer from the schema's root).
# * uniqueItems over an unbounded domain with minItems >= 2: every canonical answer has at least
#   two pairwise-distinct arbitrary values (with three or more items, not context-free; and the
#   compiler's canonical uniqueItems arrays have at most one item, so nothing is left).
# * `not` of uniqueItems: arrays with some duplicate; intersected with [<int>,<int>] that is the
#   copy language {[w,w]}, which is not context-free.
# (multipleOf of a decimal like 0.3, `not` of an object schema, overlapping oneOf and unbounded
# uniqueItems without minItems ARE context-free, often regular: they are "either" cases above.)

REFUSED = [
    ("unique-objects-min2", {"type": "array", "items": {"type": "object"}, "uniqueItems": True, "minItems": 2}, "#/uniqueItems"),
    ("unique-integers-min2", {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "minItems": 2}, "#/uniqueItems"),
    ("unique-nested-strings", {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True, "minItems": 3}},
                               "required": ["tags"]}, "#/properties/tags/uniqueItems"),
    ("unique-in-defs", {"$defs": {"set": {"type": "array", "items": {"type": "number"}, "uniqueItems": True, "minItems": 2}},
                        "type": "object", "properties": {"s": {"$ref": "#/$defs/set"}}, "required": ["s"]}, "#/$defs/set/uniqueItems"),
    ("not-unique", {"type": "array", "items": {"type": "integer"}, "not": {"uniqueItems": True}}, "#/not"),
]

# ----------------------------------------------------------------------------------------------
# Format checks for the formats whose jsonschema checkers need optional packages.

_HOST_LABEL = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
_HOSTNAME = re.compile(rf"^{_HOST_LABEL}(\.{_HOST_LABEL})*\.?$")


def check_hostname(s):  # RFC 1123, as fqdn.FQDN(s, min_labels=1).is_valid
    return isinstance(s, str) and len(s.rstrip(".")) <= 253 and bool(_HOSTNAME.match(s))


_PCT = r"%[0-9A-Fa-f]{2}"
_UNRES_SUB = r"[A-Za-z0-9\-._~!$&'()*+,;=]"
_PCHAR = rf"(?:{_UNRES_SUB}|{_PCT}|[:@])"
_URI = re.compile(rf"^[A-Za-z][A-Za-z0-9+.\-]*:"                       # scheme
                  rf"(?://(?:(?:{_UNRES_SUB}|{_PCT}|:)*@)?"            # userinfo
                  rf"(?:\[[0-9A-Fa-f:.]+\]|(?:{_UNRES_SUB}|{_PCT})*)"  # host
                  rf"(?::[0-9]*)?(?:/{_PCHAR}*)*"                       # port, path-abempty
                  rf"|/?(?:{_PCHAR}+(?:/{_PCHAR}*)*)?)"                 # path-absolute/rootless/empty
                  rf"(?:\?(?:{_PCHAR}|[/?])*)?(?:#(?:{_PCHAR}|[/?])*)?$")


def check_uri(s):  # RFC 3986 URI (a scheme required), as rfc3987.parse(s, rule="URI")
    return isinstance(s, str) and bool(_URI.match(s))


_DURATION = re.compile(r"^P(?:(?:\d+Y(?:\d+M(?:\d+D)?)?|\d+M(?:\d+D)?|\d+D)(?:T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S))?"
                       r"|T(?:\d+H(?:\d+M(?:\d+S)?)?|\d+M(?:\d+S)?|\d+S)|\d+W)$", re.ASCII)


def check_duration(s):  # RFC 3339 appendix A
    return isinstance(s, str) and bool(_DURATION.match(s))


FALLBACK_FORMATS = {"hostname": check_hostname, "uri": check_uri, "duration": check_duration}
DRAFT_FORMATS = {"duration": {"Draft201909Validator", "Draft202012Validator"}}  # formats a draft lacks


def validators_for(schema):
    """(validator with format checks, validator without) for `schema` (parsed with Decimal)."""
    cls = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
    if cls.__name__ not in ("Draft3Validator", "Draft4Validator"):
        def is_integer(checker, x):
            if isinstance(x, bool):
                return False
            return isinstance(x, int) or (isinstance(x, float) and x.is_integer()) or \
                (isinstance(x, D) and x.is_finite() and x == x.to_integral_value())
        cls = jsonschema.validators.extend(cls, type_checker=cls.TYPE_CHECKER.redefine("integer", is_integer))
    base = jsonschema.validators.validator_for(schema, default=Draft202012Validator)
    checker = FormatChecker(formats=())
    checker.checkers = dict(base.FORMAT_CHECKER.checkers)
    for name, fn in FALLBACK_FORMATS.items():
        if base.__name__ in DRAFT_FORMATS.get(name, {base.__name__}):
            checker.checkers[name] = (fn, ())
    return cls(schema, format_checker=checker), cls(schema), base.__name__


# ----------------------------------------------------------------------------------------------
# Walking a schema alongside an instance: the declared key order, and the canonical form.

def resolve(root, ref):
    if not ref.startswith("#"):
        return None
    node = root
    pointer = urllib.parse.unquote(ref[1:])
    for token in [t for t in pointer.split("/")[1:]]:
        token = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return None
    return node


def parts(schemas, root):
    """The schema objects that apply at a place, in the order the compiler declares their properties:
    depth first through $ref (its target first) and allOf, then the branches (anyOf, oneOf,
    then/else, dependent schemas), each flattened the same way. `not` is left out here: it declares
    no property that applies (its names count in negated_names)."""
    out, seen = [], set()

    def visit(s, branches):
        if not isinstance(s, dict) or id(s) in seen:
            return
        seen.add(id(s))
        if isinstance(s.get("$ref"), str):
            visit(resolve(root, s["$ref"]), branches)
        out.append(s)
        for sub in s.get("allOf", []) if isinstance(s.get("allOf"), list) else []:
            visit(sub, branches)
        for key in ("anyOf", "oneOf"):
            branches.extend(s.get(key, []) if isinstance(s.get(key), list) else [])
        for key in ("then", "else"):
            branches.append(s.get(key))
        for key in ("dependentSchemas", "dependencies"):
            if isinstance(s.get(key), dict):
                branches.extend(v for v in s[key].values() if isinstance(v, dict))

    todo = list(schemas)
    while todo:
        branches = []
        for s in todo:
            visit(s, branches)
        todo = branches
    return out


def negated_names(ps):
    """Property names a `not` in these parts mentions (the compiler writes them as declared ones)."""
    names = set()
    for p in ps:
        n = p.get("not")
        if isinstance(n, dict):
            names.update(n.get("properties", {}) if isinstance(n.get("properties"), dict) else {})
            names.update(r for r in n.get("required", []) if isinstance(r, str))
    return names


def declared_keys(ps):
    keys = []
    for p in ps:
        for k in p.get("properties", {}) if isinstance(p.get("properties"), dict) else {}:
            if k not in keys:
                keys.append(k)
    return keys


def child_schemas_for_key(ps, key):
    out = []
    for p in ps:
        props = p.get("properties") if isinstance(p.get("properties"), dict) else {}
        matched = key in props
        if matched:
            out.append(props[key])
        for pattern, sub in (p.get("patternProperties") or {}).items():
            if re.search(pattern, key):
                out.append(sub)
                matched = True
        if not matched and isinstance(p.get("additionalProperties"), dict):
            out.append(p["additionalProperties"])
    return out


def child_schemas_for_item(ps, i):
    out = []
    for p in ps:
        prefix = p.get("prefixItems") if isinstance(p.get("prefixItems"), list) else None
        items = p.get("items")
        if isinstance(items, list):
            prefix, items = items, p.get("additionalItems")
        if prefix is not None and i < len(prefix):
            out.append(prefix[i])
        elif isinstance(items, dict):
            out.append(items)
        if isinstance(p.get("contains"), dict):
            out.append(p["contains"])
    return out


def ordered(value, schemas, root):
    """`value` with object keys in declared order (then the undeclared ones, as they came)."""
    ps = parts(schemas, root)
    if isinstance(value, dict):
        declared = declared_keys(ps)
        keys = [k for k in declared if k in value] + [k for k in value if k not in declared]
        return {k: ordered(value[k], child_schemas_for_key(ps, k), root) for k in keys}
    if isinstance(value, list):
        return [ordered(v, child_schemas_for_item(ps, i), root) for i, v in enumerate(value)]
    return value


# The common forms of the formats: a canonical string of a format matches its pattern.
COMMON_FORMS = {
    "date-time": r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})",
    "date": r"\d{4}-\d{2}-\d{2}",
    "time": r"\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})",
    "duration": r"P(\d+Y)?(\d+M)?(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?|P\d+W",
    "email": r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}",
    # the last label starts with a letter (an all-digit name reads as an address); labels of up to 30
    "hostname": r"([a-z0-9]([a-z0-9-]{0,28}[a-z0-9])?\.){0,3}[a-z]([a-z0-9-]{0,28}[a-z0-9])?",
    "ipv4": r"(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}",
    "ipv6": r"[0-9a-f:]+",
    "uri": r"[a-z][a-z0-9+.-]*:[A-Za-z0-9\-._~!$&'()*+,;=:@/?#%]+",
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
}
_NUMBER_FORM = re.compile(r"-?(0|[1-9]\d{0,15})(\.\d{1,16})?")


def canonical(value, schemas, root):
    ps = parts(schemas, root)
    literals = []
    for p in ps:
        literals += ([p["const"]] if "const" in p else []) + (p["enum"] if isinstance(p.get("enum"), list) else [])
    if literals and not any(text_of(value) == text_of(v) for v in literals):
        return False  # a value under const/enum is generated as written there (its key order too)
    if isinstance(value, bool) or value is None:
        return True
    if isinstance(value, int):
        return len(str(abs(value))) <= 16
    if isinstance(value, float):
        text = json.dumps(value)
        return bool(_NUMBER_FORM.fullmatch(text)) and not value.is_integer()
    if isinstance(value, str):
        if not all(c.isprintable() for c in value):
            return False
        # jsonschema matches `pattern` with Python's re, whose \d \w \s match non-ASCII
        # characters that ECMA-262's do not: such strings are not asked of the grammar
        if not value.isascii() and any("pattern" in p for p in ps):
            return False
        for p in ps:
            form = COMMON_FORMS.get(p.get("format"))
            if form and not re.fullmatch(form, value):
                return False
        return True
    if isinstance(value, list):
        if any(p.get("uniqueItems") is True for p in ps) and len(value) > 1:
            if not all(any("enum" in q or "const" in q for q in parts(child_schemas_for_item(ps, i), root)) for i in range(len(value))):
                return False
        return all(canonical(v, child_schemas_for_item(ps, i), root) for i, v in enumerate(value))
    if isinstance(value, dict):
        declared = declared_keys(ps)
        open_object = not (declared or negated_names(ps)) or any(isinstance(p.get("additionalProperties"), dict) or p.get("patternProperties") for p in ps)
        if not open_object and any(k not in declared for k in value):
            return False
        return all(canonical(v, child_schemas_for_key(ps, k), root) for k, v in value.items())
    return False


# ----------------------------------------------------------------------------------------------
# Seeded mutations of instances: near-boundary neighbours of a value.

WORDS = ["a", "x", "abc", "", "é", "Z9", "hello world", "\"q\"", "2024-01-15", "a@b.co", "admin", "US", "circle", "rect", "12345"]


def mutate(value, rng, depth=0):
    """A neighbour of `value`: one change somewhere inside it."""
    if isinstance(value, dict) and value and rng.random() < 0.7:
        keys = list(value)
        choice = rng.randrange(5)
        out = dict(value)
        if choice == 0:                                   # drop a key
            del out[rng.choice(keys)]
        elif choice == 1:                                 # an extra key
            out[rng.choice(["extra", "zz", "x-a", "1", "n_b", "ab"])] = rng.choice([1, "v", None, True])
        elif choice == 2:                                 # another type
            out[rng.choice(keys)] = rng.choice([1, "1", None, [], {}, 2.5, False])
        else:                                             # change inside
            k = rng.choice(keys)
            out[k] = mutate(value[k], rng, depth + 1)
        return out
    if isinstance(value, dict):
        return {rng.choice(["a", "b", "x", "kind", "value"]): rng.choice([1, "s", None])}
    if isinstance(value, list) and rng.random() < 0.8:
        out = list(value)
        choice = rng.randrange(5)
        if choice == 0 and out:                           # drop an item
            del out[rng.randrange(len(out))]
        elif choice == 1 and out:                         # duplicate an item
            out.append(copy.deepcopy(rng.choice(out)))
        elif choice == 2:                                 # an item of another type
            out.append(rng.choice([1, "a", None, 1.5, True, {}, []]))
        elif out:                                         # change inside
            i = rng.randrange(len(out))
            out[i] = mutate(out[i], rng, depth + 1)
        else:
            out.append(rng.choice([0, "x", True]))
        return out
    if isinstance(value, bool):
        return rng.choice([not value, 1, "true"])
    if isinstance(value, int):
        return rng.choice([value + 1, value - 1, value * 10, -value, value + 0.5, value + 0.01, 10 ** rng.randrange(1, 18), str(value)])
    if isinstance(value, float):
        return rng.choice([round(value + 0.1, 6), round(value - 0.01, 6), round(value * 10, 6), -value, int(value), round(value, 1)])
    if isinstance(value, str):
        choice = rng.randrange(7)
        if choice == 0:
            return value + rng.choice(["a", "0", "Z", " ", "-"])
        if choice == 1:
            return value[:-1]
        if choice == 2 and value:
            i = rng.randrange(len(value))
            return value[:i] + rng.choice("a9Z-:.@ é\"") + value[i + 1:]
        if choice == 3:
            return value.upper() if value != value.upper() else value.lower()
        if choice == 4:
            return rng.choice(WORDS)
        if choice == 5:
            return value * 2
        return rng.choice([None, 1, ["x"]])
    if value is None:
        return rng.choice([0, "", False, "null"])
    return value


# ----------------------------------------------------------------------------------------------

def text_of(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def is_json(text):
    """Whether `text` is JSON (RFC 8259: Python's NaN and Infinity are not)."""
    def refuse(constant):
        raise ValueError(constant)
    try:
        json.loads(text, parse_constant=refuse)
        return True
    except ValueError:
        return False


def label(validators, text):
    with_formats, without_formats = validators
    instance = json.loads(text, parse_float=D)
    return with_formats.is_valid(instance), without_formats.is_valid(instance)


def build():
    rng = random.Random(SEED)
    cases, format_sources = [], {}
    for c in CASES:
        schema = c["schema"]
        labelling_schema = json.loads(json.dumps(schema), parse_float=D)
        with_formats, without_formats, draft = validators_for(labelling_schema)
        candidates = [(v, "hand") for v in c["hand"]]
        pool = [v for v in c["hand"] if with_formats.is_valid(json.loads(text_of(v), parse_float=D))] or list(c["hand"])
        for _ in range(MUTATIONS_PER_SCHEMA):
            v = rng.choice(pool)
            for _ in range(rng.choice([1, 1, 2])):
                v = mutate(v, rng)
            candidates.append((v, "mutation"))
        instances, seen = [], set()
        for value, origin in candidates:
            value = ordered(value, [schema], schema)
            text = text_of(value)
            if text in seen:
                continue
            seen.add(text)
            valid, valid_without_formats = label((with_formats, without_formats), text)
            instances.append({"text": text, "valid": valid, "valid_without_formats": valid_without_formats,
                              "canonical": canonical(value, [schema], schema), "origin": origin})
        for text in NOT_JSON.get(c["id"], []):
            if text not in seen and not is_json(text):
                seen.add(text)
                instances.append({"text": text, "valid": False, "valid_without_formats": False, "canonical": False, "origin": "not-json"})
        for p in parts([schema], schema):
            if isinstance(p.get("format"), str):
                fmt = p["format"]
                format_sources[fmt] = "script" if fmt in FALLBACK_FORMATS else (
                    "jsonschema" if fmt in with_formats.format_checker.checkers else "unchecked")
        cases.append({"id": c["id"], "group": c["group"], "expect": c["expect"], "draft": draft, "schema": schema, "instances": instances})
    refused = [{"id": cid, "group": "refused", "expect": "refused", "schema": s, "path": path, "keyword": path.rsplit("/", 1)[1]}
               for cid, s, path in REFUSED]
    return {
        "generator": "tools/grammar/make_schema_fixtures.py",
        "seed": SEED,
        "jsonschema": metadata.version("jsonschema"),
        "format_checkers": dict(sorted(format_sources.items())),
        "cases": cases,
        "refused": refused,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if the fixture differs from what this script makes")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    doc = build()
    files = {args.out: json.dumps(doc, ensure_ascii=False, separators=(",", ":")).replace('},{"id"', '},\n{"id"') + "\n"}
    schemas = {c["id"]: c["schema"] for c in doc["cases"]}
    for cid in FUZZ_SEEDS:
        files[FUZZ_DIR / f"oracle-{cid}.schema.json"] = json.dumps(schemas[cid], ensure_ascii=False) + "\n"
    if args.check:
        for path, text in files.items():
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                sys.exit(f"{path} is stale: rerun {doc['generator']}")
        return
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    n = [i for c in doc["cases"] for i in c["instances"]]
    print(f"{args.out}: {len(doc['cases'])} schemas, {len(doc['refused'])} refused, {len(n)} instances "
          f"({sum(i['valid'] for i in n)} valid, {sum(not i['valid'] for i in n)} invalid, "
          f"{sum(i['canonical'] and i['valid'] for i in n)} valid canonical)")


if __name__ == "__main__":
    main()
