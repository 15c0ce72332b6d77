"""Malformed input files: every one gets a one-line error, exit status 2, no traceback.

Covers the strict reader :func:`exact.io.load_json` (size, UTF-8, depth, duplicate keys,
exact JSON numbers), the field checker :func:`exact.io.check_fields` used by every
``from_json``, and the strict ASCII number grammar of
:func:`exact.numbers.parse_rational` (with its digit limit).
"""

import json
import os
import re
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

import pytest

import exact.io as exact_io
from exact.cli import main
from exact.errors import ExactAttentionError, InvalidFormat, InvalidNumber, ShapeError
from exact.io import (
    MAX_DEPTH,
    check_fields,
    check_kind,
    describe_json,
    load_json,
    load_model,
    model_from_json,
    parse_json,
)
from exact.models import SingleHead
from exact.multihead import MultiHead
from exact.numbers import MAX_DECIMAL_EXPONENT, MAX_DIGITS, parse_rational
from exact.sequences import Sequence

PREFIX = "exact-attention: error: "
MAX_MESSAGE = 300


# -- helpers ---------------------------------------------------------------------------


def _env():
    env = dict(os.environ)
    env.pop("PYTHONSTARTUP", None)
    return env


def one_line(err: str, path: Path) -> str:
    """stderr is one line, with the prefix and the file's name, short, with no traceback;
    returns the message after ``"<prefix><file>: "``."""
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {err!r}"
    assert err.endswith("\n")
    line = lines[0]
    assert line.startswith(PREFIX), line
    assert len(line) - len(PREFIX) <= MAX_MESSAGE, f"{len(line)} characters: {line[:400]}"
    head = f"{PREFIX}{path}: "
    assert line.startswith(head), f"the message does not name the file first: {line}"
    return line[len(head):]


def write(tmp_path: Path, content, name: str = "bad.json") -> Path:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8")
    else:
        path.write_text(json.dumps(content), encoding="utf-8")
    return path


def learn(tmp_path, capsys, content, name: str = "bad.json") -> str:
    """``learn single-head --model FILE`` on a bad file: exit 2, one line; returns the message."""
    path = write(tmp_path, content, name)
    rc = main(["learn", "single-head", "--model", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2, err
    assert out == ""
    return one_line(err, path)


def run_module(*args, input: bytes | None = None, timeout: float = 60):
    """``python -m exact ARGS`` in a real subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "exact", *map(str, args)],
        capture_output=True, input=input, timeout=timeout, env=_env(),
    )


def model_text(W: str, v: str = '["1"]', extra: str = "") -> str:
    return '{"kind": "single-head", "W": ' + W + ', "v": ' + v + extra + "}"


# -- deep nesting ----------------------------------------------------------------------


def test_deep_nesting_is_a_clean_error(tmp_path, capsys):
    n = 100_000
    msg = learn(tmp_path, capsys, model_text("[" * n + "]" * n))
    assert re.fullmatch(
        rf"W\[0\]\[0\].*: JSON nested more than {MAX_DEPTH} levels deep \(MAX_DEPTH; at line 1, column 93\)", msg
    ), msg


def test_deep_nesting_in_a_subprocess_never_shows_a_traceback(tmp_path):
    n = 100_000
    path = write(tmp_path, model_text("[" * n + "]" * n))
    proc = run_module("learn", "single-head", "--model", path)
    assert proc.returncode == 2
    assert proc.stdout == b""
    msg = one_line(proc.stderr.decode(), path)
    assert "nested more than 64 levels deep" in msg and msg.startswith("W[0]")


def test_depth_limit_is_exact_and_strings_do_not_count():
    inner = "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1)
    assert parse_json("[" + inner + "]") is not None  # MAX_DEPTH levels: accepted
    with pytest.raises(InvalidFormat, match=r"^<string>: \[0\]\[0\].*: JSON nested more than 64 levels deep"):
        parse_json("[[" + inner + "]]")  # one more: refused
    assert parse_json('["' + "[" * 10_000 + '"]') == ["[" * 10_000]  # brackets inside strings


def test_deep_nesting_never_raises_recursion_error():
    for opener, closer in (("[", "]"), ('{"a":', "}")):
        text = opener * 5000 + "1" + closer * 5000
        with pytest.raises(InvalidFormat, match="nested more than 64 levels") as info:
            parse_json(text)
        assert not isinstance(info.value, RecursionError)
    with pytest.raises(InvalidFormat, match=r"^<string>: a\.a\.a.*: JSON nested"):
        parse_json('{"a":' * 100 + "1" + "}" * 100)


# -- kind ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind, what", [(["single-head"], "a list"), ({"a": 1}, "an object"), (1, "a number"),
                                        (None, "null"), (True, "a boolean")])
def test_kind_that_is_not_a_string(tmp_path, capsys, kind, what):
    msg = learn(tmp_path, capsys, {"kind": kind, "W": [["1"]], "v": ["1"]})
    assert msg == f"model: field 'kind': expected a string, one of ['ffn', 'multi-head', 'single-head', 'transformer'], got {what}"


def test_kind_not_a_string_in_each_from_json():
    with pytest.raises(ShapeError, match=r"^model: field 'kind': expected a string, got a list$"):
        SingleHead.from_json({"kind": ["x"], "W": [["1"]], "v": ["1"]})
    with pytest.raises(ShapeError, match=r"^model: field 'kind': expected a string, got an object$"):
        MultiHead.from_json({"kind": {}, "heads": []})
    with pytest.raises(InvalidFormat, match=r"^model: field 'kind': expected a string, one of"):
        model_from_json({"kind": [1], "W": [["1"]], "v": ["1"]})


def test_unknown_kind_message_is_short():
    with pytest.raises(InvalidFormat, match=r"^model: unknown kind 'xxxx.*\.\.\.; expected one of") as info:
        model_from_json({"kind": "x" * 100_000, "W": [["1"]], "v": ["1"]})
    assert len(str(info.value)) < 200


# -- UTF-8 -----------------------------------------------------------------------------


def test_invalid_utf8_names_the_file_and_the_offset(tmp_path, capsys):
    data = b'{"kind": "single-head",\n "W": [["1\xff"]], "v": ["1"]}'
    msg = learn(tmp_path, capsys, data)
    assert msg == "not valid UTF-8 (byte 0xff at offset 34, line 2: invalid start byte)"


def test_invalid_utf8_in_a_subprocess_never_shows_a_traceback(tmp_path):
    path = write(tmp_path, b'{"kind": "single-head", "W": [["\xc3\x28"]], "v": ["1"]}')
    proc = run_module("learn", "single-head", "--model", path)
    assert proc.returncode == 2 and proc.stdout == b""
    msg = one_line(proc.stderr.decode(), path)
    assert msg == "not valid UTF-8 (byte 0xc3 at offset 32, line 1: invalid continuation byte)"


def test_invalid_utf8_on_standard_input():
    proc = run_module("learn", "single-head", "--model", "-", input=b'{"W": [["\xff"]]}')
    assert proc.returncode == 2 and proc.stdout == b""
    err = proc.stderr.decode()
    assert "Traceback" not in err and len(err.splitlines()) == 1
    assert err == f"{PREFIX}<stdin>: not valid UTF-8 (byte 0xff at offset 9, line 1: invalid start byte)\n"


def test_a_byte_order_mark_is_ignored(tmp_path):
    path = write(tmp_path, b"\xef\xbb\xbf" + json.dumps({"W": [["1/2"]], "v": ["3"]}).encode())
    assert load_model(path) == SingleHead([["1/2"]], [3])


def test_lone_surrogate_escapes_give_a_printable_one_line_error(tmp_path, capsys):
    msg = learn(tmp_path, capsys, model_text('[["\\ud800"]]'))
    assert msg == r"W[0][0]: expected an integer, 'p/q' or decimal string, got '\ud800' (only ASCII digits and signs are accepted)"


# -- huge numbers ----------------------------------------------------------------------


def test_huge_number_string_names_field_and_limit_without_the_digits(tmp_path, capsys):
    digits = "1" * 100_000
    msg = learn(tmp_path, capsys, model_text(f'[["{digits}"]]'))
    assert msg == "W[0][0]: the number has 100000 digits, more than the limit of 4000 (MAX_DIGITS); its digits are not shown"
    assert "1111" not in msg


@pytest.mark.parametrize("number, what, count", [
    ("7" * 100_000, "number", 100_000),
    ("-" + "7" * 5000, "number", 5000),
    ("1." + "7" * 5000, "mantissa", 5001),
    ("7" * 5000 + "e3", "mantissa", 5000),
])
def test_huge_json_numbers_name_the_field(tmp_path, capsys, number, what, count):
    msg = learn(tmp_path, capsys, model_text('[["1"]]', f'["1", {number}]'))
    assert msg == (f"v[1]: the {what} has {count} digits, more than the limit of {MAX_DIGITS} (MAX_DIGITS); "
                   "its digits are not shown")
    assert "7777" not in msg


def test_huge_denominator_and_exponent(tmp_path, capsys):
    msg = learn(tmp_path, capsys, model_text('[["1/' + "3" * 4001 + '"]]'))
    assert msg.startswith("W[0][0]: the denominator has 4001 digits, more than the limit of 4000")
    msg = learn(tmp_path, capsys, model_text("[[1e999999999]]"))
    assert msg == "W[0][0]: the decimal exponent exceeds ±10000 (MAX_DECIMAL_EXPONENT); write such a number as 'p/q'"
    msg = learn(tmp_path, capsys, model_text('[["1e' + "9" * 100_000 + '"]]'))
    assert msg.startswith("W[0][0]: the decimal exponent exceeds ±10000") and "9999" not in msg


def test_long_garbage_is_quoted_only_in_part(tmp_path, capsys):
    msg = learn(tmp_path, capsys, model_text('[["' + "x" * 100_000 + '"]]'))
    assert re.fullmatch(r"W\[0\]\[0\]: expected an integer, 'p/q' or decimal string, got 'x{50,60}\.\.\.", msg), msg


# -- shapes and types ------------------------------------------------------------------


@pytest.mark.parametrize("W, v, expected", [
    ({"a": 1}, ["1"], "W: expected a matrix (a list of rows), got an object"),
    ("1", ["1"], "W: expected a matrix (a list of rows), got a string"),
    (1, ["1"], "W: expected a matrix (a list of rows), got a number"),
    (None, ["1"], "W: expected a matrix (a list of rows), got null"),
    ([{"a": 1}], ["1"], "W[0]: expected a row (a list of numbers), got an object"),
    (["1"], ["1"], "W: expected a matrix (a list of rows of numbers), got a string where a row belongs"),
    ([1], ["1"], "W[0]: expected a row (a list of numbers), got a number"),
    ([["1"]], {"a": 1}, "v: expected a vector (a list of numbers), got an object"),
    ([["1"]], "1", "v: expected a vector (a list of numbers), got a string"),
])
def test_wrong_json_types_are_named(tmp_path, capsys, W, v, expected):
    assert learn(tmp_path, capsys, {"kind": "single-head", "W": W, "v": v}) == expected


def test_as_matrix_and_as_vector_reject_dicts_directly():
    with pytest.raises(ShapeError, match=r"^W: expected a matrix \(a list of rows\), got an object$"):
        SingleHead({"a": 1}, [1])
    with pytest.raises(ShapeError, match=r"^v: expected a vector \(a list of numbers\), got an object$"):
        SingleHead([[1]], {"a": 1})


@pytest.mark.parametrize("d, expected", [
    ("1", "model: field 'd': expected an integer, got a string"),
    (True, "model: field 'd': expected an integer, got a boolean"),
    (1.0, "model: field 'd': expected an integer, got a number"),
    (10**100, "model: field 'd': expected an integer below 2^62, got one with 101 digits"),
])
def test_field_d_must_be_an_integer(tmp_path, capsys, d, expected):
    assert learn(tmp_path, capsys, {"kind": "single-head", "d": d, "W": [["1"]], "v": ["1"]}) == expected


# -- the number grammar ----------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("-3", Fraction(-3)),
    ("+3", Fraction(3)),
    ("2/7", Fraction(2, 7)),
    (" -4/6 ", Fraction(-2, 3)),
    ("0.1", Fraction(1, 10)),
    ("1e-3", Fraction(1, 1000)),
    ("-1.5E+2", Fraction(-150)),
    ("1.25e2", Fraction(125)),
    (".5", Fraction(1, 2)),
    ("1.", Fraction(1)),
    ("-0", Fraction(0)),
    ("007", Fraction(7)),
    ("\t12\n", Fraction(12)),
    ("1e10000", Fraction(10) ** 10000),
    ("1e-10000", Fraction(1, 10**10000)),
    ("7" * MAX_DIGITS, Fraction(int("7" * MAX_DIGITS))),
    ("1/" + "3" * MAX_DIGITS, Fraction(1, int("3" * MAX_DIGITS))),
])
def test_parse_rational_accepts(text, value):
    assert parse_rational(text) == value


@pytest.mark.parametrize("text, hint", [
    ("١٢", " (only ASCII digits and signs are accepted)"),
    ("１２", " (only ASCII digits and signs are accepted)"),
    ("1\u00a0", " (only ASCII digits and signs are accepted)"),
    ("\u20031", " (only ASCII digits and signs are accepted)"),
    ("²", " (only ASCII digits and signs are accepted)"),
    ("1_000", " (digit separators '_' are not accepted)"),
    ("1/2_0", " (digit separators '_' are not accepted)"),
    ("inf", ""), ("-Infinity", ""), ("nan", ""), ("NaN", ""),
    ("0x10", ""), ("0b1", ""), ("1/2/3", ""), ("2**10", ""), ("1+1", ""),
    ("", ""), (" ", ""), (".", ""), ("e5", ""), ("1e", ""), ("1e+", ""), ("--1", ""), ("- 1", ""),
    ("1 /2", ""), ("1/ 2", ""), ("1/-2", ""), ("1/+2", ""), ("1.5/2", ""), ("1e5/2", ""), ("1/2e3", ""),
    ("1j", ""), ("(1)", ""), ("1,5", ""), ("__import__('os')", ""),
])
def test_parse_rational_rejects(text, hint):
    expected = f"F: expected an integer, 'p/q' or decimal string, got {text!r}{hint}"
    with pytest.raises(InvalidNumber, match="^" + re.escape(expected) + "$"):
        parse_rational(text, name="F")


def test_parse_rational_zero_denominator_and_limits():
    with pytest.raises(InvalidNumber, match=r"^F: expected a nonzero denominator, got '1/0'$"):
        parse_rational(" 1/0 ", name="F")
    with pytest.raises(InvalidNumber, match=r"^F: the number has 4001 digits, more than the limit of 4000 \(MAX_DIGITS\); its digits are not shown$"):
        parse_rational("9" * (MAX_DIGITS + 1), name="F")
    with pytest.raises(InvalidNumber, match=r"^F: the numerator has 4001 digits"):
        parse_rational("9" * (MAX_DIGITS + 1) + "/7", name="F")
    with pytest.raises(InvalidNumber, match=r"^F: the mantissa has 4001 digits"):
        parse_rational("0." + "0" * (MAX_DIGITS - 1) + "1e5", name="F")  # the leading 0 counts too
    with pytest.raises(InvalidNumber, match=rf"^F: the decimal exponent exceeds ±{MAX_DECIMAL_EXPONENT} "):
        parse_rational(f"1e-{MAX_DECIMAL_EXPONENT + 1}", name="F")
    assert parse_rational("1e" + "0" * 50 + "3") == 1000  # leading zeros in an exponent are harmless


def test_parse_rational_fails_in_linear_time():
    start = time.perf_counter()
    for text in ("1" * 10**6 + "x", " " * 10**6 + "x", "1." + "1" * 10**6 + "x", "1" + " " * 10**6 + "x",
                 "1e" + "1" * 10**6 + "x", "1/" + "1" * 10**6 + "/"):
        with pytest.raises(InvalidNumber):
            parse_rational(text)
    assert time.perf_counter() - start < 5


# -- JSON numbers are exact ------------------------------------------------------------


def test_json_numbers_are_exact(tmp_path):
    assert parse_json("0.1") == Fraction(1, 10)
    assert parse_json("[0.1, 1e-3, -1.5E+2, 1.0, 12, -0.0]") == [
        Fraction(1, 10), Fraction(1, 1000), Fraction(-150), Fraction(1), 12, 0,
    ]
    assert type(parse_json("12")) is int
    assert parse_json(str(2**200)) == 2**200
    path = write(tmp_path, '{"kind": "single-head", "d": 2, "W": [[0.1, -2], [0, 1e-3]], "v": [0.5, 3]}', "ok.json")
    assert load_model(path) == SingleHead([["0.1", "-2"], ["0", "1e-3"]], ["1/2", "3"])
    assert load_model(path).W[0][0] == Fraction(1, 10)  # not 0.1000000000000000055511151231257827


def test_json_nan_and_infinity_literals_are_refused(tmp_path, capsys):
    for literal in ("NaN", "Infinity", "-Infinity"):
        msg = learn(tmp_path, capsys, model_text('[["1"]]', f'["1", {literal}]'))
        assert msg == f"v[1]: expected a finite number, got {literal} (not a JSON number)"


# -- duplicate keys --------------------------------------------------------------------


def test_duplicate_top_level_key(tmp_path, capsys):
    msg = learn(tmp_path, capsys, '{"kind": "single-head", "W": [["1"]], "v": ["1"], "W": [["2"]]}')
    assert msg == "(top level): duplicate key 'W' in a JSON object"


def test_duplicate_nested_key(tmp_path, capsys):
    path = write(tmp_path, '{"kind": "multi-head", "heads": [{"W": [["1"]], "v": ["1"]}, {"W": [["1"]], "v": ["1"], "v": ["2"]}]}')
    rc = main(["counterexample", "--model", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert one_line(err, path) == "heads[1]: duplicate key 'v' in a JSON object"


def test_duplicate_keys_in_parse_json():
    with pytest.raises(InvalidFormat, match=r"^<string>: a\.b: duplicate key 'c' in a JSON object$"):
        parse_json('{"a": {"b": {"c": 1, "c": 1}}}')
    with pytest.raises(InvalidFormat, match=r"^<string>: rows\[1\]: duplicate key '0' in a JSON object$"):
        parse_json('{"d": 1, "rows": [{"0": "1"}, {"0": "1", "0": "2"}]}')
    assert parse_json('[{"a": 1}, {"a": 2}]') == [{"a": 1}, {"a": 2}]  # the same key in different objects is fine


# -- unknown and missing fields --------------------------------------------------------


def test_unknown_field_in_a_single_head_model(tmp_path, capsys):
    msg = learn(tmp_path, capsys, {"kind": "single-head", "W": [["1"]], "v": ["1"], "extra": 1})
    assert msg == "model: unknown field(s) ['extra']; allowed fields: ['W', 'b', 'c', 'd', 'kind', 'v']"


def test_unknown_field_in_a_multi_head_model(tmp_path, capsys):
    path = write(tmp_path, {"kind": "multi-head", "d": 1, "heads": [], "H": 0})
    rc = main(["counterexample", "--model", str(path)])
    out, err = capsys.readouterr()
    assert rc == 2 and out == ""
    assert one_line(err, path) == "model: unknown field(s) ['H']; allowed fields: ['b', 'd', 'heads', 'kind']"


def test_unknown_field_in_a_sequence():
    with pytest.raises(ShapeError, match=r"^sequence: unknown field\(s\) \['N'\]; allowed fields: \['d', 'rows'\]$"):
        Sequence.from_json({"d": 1, "rows": [{"0": "1"}], "N": 1})
    with pytest.raises(ShapeError, match=r"^sequence: missing field\(s\) \['rows'\]$"):
        Sequence.from_json({"d": 1})


@pytest.mark.parametrize("key", ["01", "١", "１", " 1", "+1", "-1"])
def test_sequence_indices_are_canonical_ascii(key):
    with pytest.raises(ShapeError, match=r"^sequence: expected rows as \{index: value\} objects, got "):
        Sequence.from_json({"d": 3, "rows": [{key: "1"}]})
    with pytest.raises(ShapeError, match=r"^sequence: index with 30 digits out of range for d=3$"):
        Sequence.from_json({"d": 3, "rows": [{"1" * 30: "1"}]})
    with pytest.raises(ShapeError, match=r"^sequence: expected 'rows' as a list of \{index: value\} objects, got an object$"):
        Sequence.from_json({"d": 3, "rows": {"0": "1"}})


def test_check_fields_contract():
    data = {"W": 1, "v": 2}
    assert check_fields(data, where="m", required=("W", "v"), optional=("d",)) is data
    with pytest.raises(InvalidFormat, match=r"^m: unknown field\(s\) \['V'\]; allowed fields: \['W', 'v'\]$"):
        check_fields({"W": 1, "V": 2}, where="m", required=("W", "v"))  # reported before the missing 'v'
    with pytest.raises(InvalidFormat, match=r"^m: missing field\(s\) \['W', 'v'\]$"):
        check_fields({}, where="m", required=("v", "W"))
    with pytest.raises(ShapeError, match=r"^m: expected a JSON object, got a list$"):
        check_fields([], where="m", error=ShapeError)
    many = {f"k{i}": i for i in range(8)}
    with pytest.raises(InvalidFormat, match=r"^m: unknown field\(s\) \['k0', 'k1', 'k2', 'k3', 'k4', and 3 more\]; "):
        check_fields(many, where="m")
    with pytest.raises(InvalidFormat) as info:
        check_fields({"x" * 10_000: 1}, where="m", required=())
    assert len(str(info.value)) < 120
    assert check_kind({}, where="m", default="a") == "a" and check_kind({"kind": "b"}, where="m") == "b"
    assert [describe_json(x) for x in ({}, [], "", 1, 1.5, Fraction(1, 2), True, None)] == [
        "an object", "a list", "a string", "a number", "a number", "a number", "a boolean", "null",
    ]


def test_missing_field_and_wrong_head_content(tmp_path, capsys):
    msg = learn(tmp_path, capsys, {"kind": "single-head", "W": [["1"]]})
    assert msg == "model: missing field(s) ['v']"
    with pytest.raises(InvalidNumber, match=r"^heads\[1\]: W\[0\]\[0\]: expected an integer, 'p/q' or decimal string, got 'x'$"):
        MultiHead.from_json({"kind": "multi-head", "heads": [{"W": [["1"]], "v": ["1"]}, {"W": [["x"]], "v": ["1"]}]})
    with pytest.raises(ShapeError, match=r"^heads\[0\]: W: expected a matrix \(a list of rows\), got an object$"):
        MultiHead.from_json({"kind": "multi-head", "heads": [{"W": {}, "v": ["1"]}]})


# -- other malformed files -------------------------------------------------------------


def test_file_size_limit(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(exact_io, "MAX_FILE_BYTES", 100)
    msg = learn(tmp_path, capsys, {"kind": "single-head", "W": [["1"] * 30], "v": ["1"] * 30})
    assert msg == "the file is larger than the limit of 100 bytes (MAX_FILE_BYTES)"


def test_empty_and_truncated_files(tmp_path, capsys):
    assert learn(tmp_path, capsys, "") == "not valid JSON (Expecting value at line 1, column 1)"
    assert learn(tmp_path, capsys, '{"W": [["1"]') == "not valid JSON (Expecting ',' delimiter at line 1, column 13)"


def test_every_error_is_an_exact_attention_value_error(tmp_path):
    bad = [
        model_text("[" * 200 + "]" * 200), '{"kind": [1]}', model_text('[["' + "1" * 9000 + '"]]'),
        model_text('{"a": 1}'), model_text('[["1_000"]]'), model_text('[["1"]]', extra=', "W": 1'),
        model_text('[["1"]]', extra=', "x": 1'), model_text("[[NaN]]"), b"\xff",
    ]
    for i, content in enumerate(bad):
        path = write(tmp_path, content, f"b{i}.json")
        with pytest.raises(ExactAttentionError) as info:
            load_model(path)
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, (InvalidFormat, InvalidNumber, ShapeError))
        assert str(info.value).startswith(f"{path}: ")
        assert "\n" not in str(info.value) and len(str(info.value)) <= len(str(path)) + MAX_MESSAGE


# -- valid files still load ------------------------------------------------------------


@pytest.mark.parametrize("args", [("--d", "3", "--seed", "1"), ("--d", "2", "--seed", "4", "--grid", "float32")])
def test_files_the_cli_writes_still_load(tmp_path, capsys, args):
    proc = run_module("random", "single-head", *args)
    assert proc.returncode == 0, proc.stderr
    path = write(tmp_path, proc.stdout, "model.json")
    model = load_model(path)
    assert model.to_json() == json.loads(proc.stdout)
    cert = tmp_path / "cert.json"
    assert main(["learn", "single-head", "--model", str(path), "--json", "--certificate", str(cert)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["model"]["W"], result["model"]["v"]) == (model.to_json()["W"], model.to_json()["v"])
    assert load_json(cert)["kind"] == "certificate"
    assert main(["certify", str(cert)]) == 0  # a certificate the CLI wrote reads back
    capsys.readouterr()


def test_multi_head_files_the_cli_writes_still_load(tmp_path, capsys):
    assert main(["counterexample", "--d", "2", "--heads", "2", "--seed", "3", "--json", "--inputs", "1"]) == 0
    data = json.loads(capsys.readouterr().out)
    for name in ("A", "B"):
        path = write(tmp_path, data[name], f"{name}.json")
        assert load_model(path) == MultiHead.from_json(data[name])
        assert main(["counterexample", "--model", str(path), "--inputs", "1"]) == 0
        capsys.readouterr()
