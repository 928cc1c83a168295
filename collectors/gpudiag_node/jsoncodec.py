"""JSON in and out of the collector without ``import json`` (``gpudiag_node.jsoncodec``; Python 3.6+).

The ``json`` package imports ``re``, and ``re`` imports ``enum``, ``functools`` and ``collections``: about 8 ms
of an H200 node's CPU at every sweep (15 ms here), a fifth of what the whole collector may cost, when the
collector reading NVML needs no regular expression at all. ``json.dumps`` and ``json.loads`` hand the work to
the C accelerator ``_json`` anyway; this module calls the same two C functions the same way, so the text is
byte for byte what ``json.dumps(obj, separators=(",", ":"))`` writes. Where ``_json`` is missing or differs
(another interpreter), the ``json`` package does it.
"""

_NAN = float("nan")
_INF = float("inf")
_CONSTANTS = {"NaN": _NAN, "Infinity": _INF, "-Infinity": -_INF}


def _not_serializable(obj):
    raise TypeError("Object of type %s is not JSON serializable" % type(obj).__name__)


class _Options(object):
    """What ``json.JSONDecoder`` gives the C scanner, with json.loads's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _c_dumps(obj):
    # json.encoder's one-shot path: markers (a fresh dict: cycle detection), default, the ASCII string
    # encoder, indent, key and item separators, sort_keys, skipkeys, allow_nan.
    encode = _json.make_encoder({}, _not_serializable, _json.encode_basestring_ascii, None, ":", ",",
                                False, False, True)
    return "".join(encode(obj, 0))


def _c_loads(text):
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    start = len(text) - len(text.lstrip())
    try:
        obj, end = _scanner(text, start)
    except StopIteration as exc:  # what the scanner raises for a value it cannot start
        raise ValueError("Expecting value: char %s" % exc.value) from None
    if text[end:].strip():
        raise ValueError("Extra data: char %d" % end)
    return obj


try:
    import _json

    _scanner = _json.make_scanner(_Options())  # type: ignore[arg-type]
    if _c_dumps({"a": [1, 2.5, None, True, "\u00e9\n"]}) != '{"a":[1,2.5,null,true,"\\u00e9\\n"]}' \
            or _c_loads('{"a": [1, 2.5, null]}') != {"a": [1, 2.5, None]}:
        raise ImportError("_json differs from CPython's")
    dumps, loads = _c_dumps, _c_loads
except Exception:  # no _json (another interpreter), or one that takes other arguments
    import json as _json_package

    def dumps(obj):
        return _json_package.dumps(obj, separators=(",", ":"))

    loads = _json_package.loads
