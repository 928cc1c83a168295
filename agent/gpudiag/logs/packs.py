"""Signature packs: YAML files of signatures, configuration echoes and expectations (see ``gpudiag.logs``).

The pack format (every key but ``pack`` optional)::

    pack: sglang                          # a name: lowercase letters, digits, "_"
    description: SGLang server logs
    applies_to: files                     # files (default) or kernel (the @kernel source)
    since_hours: 24                       # default time window for the logs that use this pack
    references: [https://...]             # where the line formats come from
    echoes:
      - name: sglang_server_args
        regex: 'server_args=ServerArgs\\('
        format: python_kwargs             # python_kwargs, python_dict or argv
        server: SGLang
        facts: [tp_size, ep_size, moe_runner_backend]
        aliases: {tp: tp_size}            # argv flags that mean a fact
    signatures:
      - name: sglang_kv_cache_full
        regex: 'KV cache pool is full\\. Retract requests\\.'
        severity: warning                 # info, warning, critical
        meaning: the KV cache ran out, so running requests were retracted and will be recomputed
        action: lower --mem-fraction-static pressure (fewer running requests) or raise the cache
        exclude: null                     # lines that match this too do not count
        ignore_case: false
        group_by: []                      # named groups: one match per distinct value (Xid: [pci, xid])
        report: signature                 # signature (LOG_SIGNATURE) or xid (XID findings)
    expectations:
      - name: flashinfer_autotuner_ran
        echo: sglang_server_args          # the configuration this applies to (its last server start)
        when: {disable_flashinfer_autotune: false}   # a value, or a list of accepted values
        after: [sglang_ready]             # judge only once these were seen after that start
        expect: [flashinfer_autotune_start]          # any of these must follow that start
        severity: warning
        meaning: 'no [Autotuner] line since {moe_runner_backend} ...'   # {fact}, {lines_after}, {path}
        action: ...

Every error is a :class:`PackError` whose message is one line naming the file and the entry. PyYAML is
imported here as well as in ``gpudiag.sources.inventory``: a pack is not an inventory, and routing its YAML through
the inventory module would only tie the two together.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpudiag.logs.regex_lint import backtracking_risk
from gpudiag.model import FactValue
from gpudiag.sources.yaml_file import YamlFileError, load, read_text

PACKS_DIR = Path(__file__).resolve().parent / "packs"
# The built-in packs, in the order they are listed and applied: an explicit registry, no discovery.
BUILTIN = ("sglang", "vllm", "flashinfer", "nccl", "cuda", "sm120", "xid")
SEVERITIES = ("info", "warning", "critical")
FORMATS = ("python_kwargs", "python_dict", "argv")
REPORTS = ("signature", "xid")
APPLIES = ("files", "kernel")
NAME = re.compile(r"[a-z][a-z0-9_]*")

_PACK_KEYS = ("applies_to", "description", "echoes", "expectations", "pack", "references", "signatures",
              "since_hours")
_SIGNATURE_KEYS = ("action", "exclude", "group_by", "ignore_case", "meaning", "name", "regex", "report", "severity")
_ECHO_KEYS = ("aliases", "facts", "format", "name", "regex", "server")
_EXPECTATION_KEYS = ("action", "after", "echo", "expect", "meaning", "name", "severity", "when")


class PackError(ValueError):
    """A pack cannot be used; the message is one line naming the file and the entry."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Signature:
    """A named regex for a line that means something."""

    name: str
    pack: str
    regex: str
    severity: str = "warning"  # info (no finding), warning, critical
    meaning: str = ""
    action: str = ""
    exclude: str | None = None
    ignore_case: bool = False
    group_by: tuple[str, ...] = ()
    report: str = "signature"  # "signature": LOG_SIGNATURE findings; "xid": XID findings

    def node_spec(self) -> dict[str, object]:
        """What the node needs to find it (collectors/gpudiag_node/logscan.py)."""
        spec: dict[str, object] = {"name": self.name, "regex": self.regex}
        if self.exclude:
            spec["exclude"] = self.exclude
        if self.ignore_case:
            spec["ignore_case"] = True
        if self.group_by:
            spec["group_by"] = list(self.group_by)
        return spec


@dataclass(frozen=True, slots=True, kw_only=True)
class Echo:
    """A line that echoes configuration: parsed into facts, never counted as a match."""

    name: str
    pack: str
    regex: str
    format: str = "python_kwargs"
    server: str | None = None
    facts: tuple[str, ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """When the configuration says X, lines matching Y are expected after startup."""

    name: str
    pack: str
    echo: str
    when: tuple[tuple[str, tuple[FactValue, ...]], ...] = ()
    after: tuple[str, ...] = ()
    expect: tuple[str, ...] = ()
    severity: str = "warning"
    meaning: str = ""
    action: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Pack:
    """One pack, as loaded and checked."""

    name: str
    origin: str  # "built-in" or the file it came from
    description: str = ""
    applies_to: str = "files"
    since_hours: float | None = None
    references: tuple[str, ...] = ()
    signatures: tuple[Signature, ...] = ()
    echoes: tuple[Echo, ...] = ()
    expectations: tuple[Expectation, ...] = ()


class _Checker:
    """Reads one pack document, naming the file and entry in every error."""

    def __init__(self, origin: str) -> None:
        self.origin = origin

    def fail(self, where: str, message: str) -> PackError:
        return PackError(f"{self.origin}: {where + ': ' if where else ''}{message}")

    def mapping(self, value: object, where: str, known: Iterable[str]) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(where, f"expected a mapping, got {type(value).__name__}")
        unknown = sorted(str(k) for k in value if k not in known)
        if unknown:
            raise self.fail(where, f"unknown key {unknown[0]!r} (known: {', '.join(sorted(known))})")
        return value

    def text(self, body: Mapping[str, object], key: str, where: str, *, required: bool = False) -> str:
        value = body.get(key)
        if value is None:
            if required:
                raise self.fail(where, f"missing key {key!r}")
            return ""
        if not isinstance(value, str):
            raise self.fail(where, f"{key}: expected a string, got {type(value).__name__}")
        return " ".join(value.split())

    def name(self, body: Mapping[str, object], where: str) -> str:
        name = self.text(body, "name", where, required=True)
        if not NAME.fullmatch(name):
            raise self.fail(where, f"name {name!r}: use lowercase letters, digits and '_'")
        return name

    def choice(self, body: Mapping[str, object], key: str, choices: tuple[str, ...], default: str, where: str) -> str:
        value = body.get(key, default)
        if value not in choices:
            raise self.fail(where, f"{key}: {value!r} is not one of {', '.join(choices)}")
        return str(value)

    def regex(self, body: Mapping[str, object], key: str, where: str, *,
              required: bool = True) -> re.Pattern[str] | None:
        value = body.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(where, f"{key}: expected a regular expression (a string)")
        try:
            compiled = re.compile(value)
        except re.error as exc:
            raise self.fail(where, f"{key} does not compile: {exc}") from exc
        why = backtracking_risk(value)
        if why is not None:
            shown = value if value.isprintable() else repr(value)
            raise self.fail(where, f"{key} '{shown}' is refused: {why}")
        return compiled

    def names(self, body: Mapping[str, object], key: str, where: str) -> tuple[str, ...]:
        value = body.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and NAME.fullmatch(v) for v in value):
            raise self.fail(where, f"{key}: expected a list of names")
        return tuple(value)


def _fact(value: object) -> FactValue:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def parse_pack(data: object, origin: str) -> Pack:
    """A pack from its YAML data; raises :class:`PackError` (one line) on any problem."""
    check = _Checker(origin)
    body = check.mapping(data, "", _PACK_KEYS)
    name = check.text(body, "pack", "", required=True)
    if not NAME.fullmatch(name):
        raise check.fail("pack", f"{name!r}: use lowercase letters, digits and '_'")
    since = body.get("since_hours")
    if since is not None and (isinstance(since, bool) or not isinstance(since, (int, float)) or since <= 0):
        raise check.fail("since_hours", "expected a positive number of hours")
    signatures = []
    for i, raw in enumerate(body.get("signatures") or []):
        where = f"signatures[{i}]"
        entry = check.mapping(raw, where, _SIGNATURE_KEYS)
        sig_name = check.name(entry, where)
        where = f"{where} ({sig_name})"
        pattern = check.regex(entry, "regex", where)
        check.regex(entry, "exclude", where, required=False)
        group_by = check.names(entry, "group_by", where)
        missing = [g for g in group_by if pattern is not None and g not in pattern.groupindex]
        if missing:
            raise check.fail(where, f"group_by: the regex has no named group {missing[0]!r}")
        signatures.append(Signature(
            name=sig_name, pack=name, regex=entry["regex"], exclude=entry.get("exclude"),
            severity=check.choice(entry, "severity", SEVERITIES, "warning", where),
            meaning=check.text(entry, "meaning", where), action=check.text(entry, "action", where),
            ignore_case=bool(entry.get("ignore_case", False)), group_by=group_by,
            report=check.choice(entry, "report", REPORTS, "signature", where)))
    echoes = []
    for i, raw in enumerate(body.get("echoes") or []):
        where = f"echoes[{i}]"
        entry = check.mapping(raw, where, _ECHO_KEYS)
        echo_name = check.name(entry, where)
        where = f"{where} ({echo_name})"
        check.regex(entry, "regex", where)
        aliases = entry.get("aliases") or {}
        if not isinstance(aliases, Mapping) or not all(isinstance(v, str) for v in aliases.values()):
            raise check.fail(where, "aliases: expected a mapping of flag → fact name")
        echoes.append(Echo(name=echo_name, pack=name, regex=entry["regex"],
                           format=check.choice(entry, "format", FORMATS, "python_kwargs", where),
                           server=check.text(entry, "server", where) or None,
                           facts=check.names(entry, "facts", where),
                           aliases=tuple((str(k), v) for k, v in aliases.items())))
    expectations = []
    for i, raw in enumerate(body.get("expectations") or []):
        where = f"expectations[{i}]"
        entry = check.mapping(raw, where, _EXPECTATION_KEYS)
        exp_name = check.name(entry, where)
        where = f"{where} ({exp_name})"
        when = entry.get("when") or {}
        if not isinstance(when, Mapping):
            raise check.fail(where, "when: expected a mapping of fact → value (or list of values)")
        conditions = tuple((str(k), tuple(_fact(x) for x in (v if isinstance(v, list) else [v])))
                           for k, v in when.items())
        expect = check.names(entry, "expect", where)
        if not expect:
            raise check.fail(where, "expect: name at least one signature")
        expectations.append(Expectation(
            name=exp_name, pack=name, echo=check.text(entry, "echo", where, required=True), when=conditions,
            after=check.names(entry, "after", where), expect=expect,
            severity=check.choice(entry, "severity", ("warning", "critical"), "warning", where),
            meaning=check.text(entry, "meaning", where), action=check.text(entry, "action", where)))
    references = body.get("references") or []
    return Pack(name=name, origin=origin, description=check.text(body, "description", ""),
                applies_to=check.choice(body, "applies_to", APPLIES, "files", ""),
                since_hours=float(since) if since is not None else None,
                references=tuple(str(r) for r in references), signatures=tuple(signatures), echoes=tuple(echoes),
                expectations=tuple(expectations))


def load_pack(path: str | Path) -> Pack:
    """Read and check a pack file; raises :class:`PackError` (one line)."""
    origin = str(path)
    try:  # the same reader, and limits, as the inventory's (gpudiag.sources.yaml_file)
        data = load(origin, read_text(Path(path).expanduser(), "pack"))
    except YamlFileError as exc:
        raise PackError(str(exc)) from exc
    return parse_pack(data, origin)


@functools.cache
def builtin_packs() -> tuple[Pack, ...]:
    """The packs shipped with gpudiag (``agent/gpudiag/logs/packs/<name>.yaml``), in ``BUILTIN`` order."""
    packs = []
    for name in BUILTIN:
        pack = load_pack(PACKS_DIR / f"{name}.yaml")
        packs.append(Pack(**{**{f: getattr(pack, f) for f in Pack.__dataclass_fields__}, "origin": "built-in"}))
    return tuple(packs)


class Registry:
    """The packs available to a sweep: the built-in ones and the user's, names unique across all."""

    def __init__(self, packs: Iterable[Pack] = ()) -> None:
        self.packs: dict[str, Pack] = {}
        self.signatures: dict[str, Signature] = {}
        self.echoes: dict[str, Echo] = {}
        for pack in packs:
            self.add(pack)

    def add(self, pack: Pack) -> Pack:
        """Add ``pack``; a pack or signature name already taken is a :class:`PackError`."""
        if pack.name in self.packs:
            if self.packs[pack.name] == pack:
                return pack
            raise PackError(f"{pack.origin}: pack {pack.name!r} is already defined by {self.packs[pack.name].origin}")
        for sig in pack.signatures:
            if sig.name in self.signatures:
                raise PackError(f"{pack.origin}: signature {sig.name!r} is already defined in pack "
                                f"{self.signatures[sig.name].pack!r}")
        for echo in pack.echoes:
            if echo.name in self.echoes:
                raise PackError(f"{pack.origin}: echo {echo.name!r} is already defined in pack "
                                f"{self.echoes[echo.name].pack!r}")
        for exp in pack.expectations:
            for ref in (*exp.expect, *exp.after):
                if ref not in self.signatures and ref not in {s.name for s in pack.signatures}:
                    raise PackError(f"{pack.origin}: expectation {exp.name!r}: no signature {ref!r} in this pack "
                                    "or one loaded before it")
            if exp.echo not in self.echoes and exp.echo not in {e.name for e in pack.echoes}:
                raise PackError(f"{pack.origin}: expectation {exp.name!r}: no echo {exp.echo!r}")
        self.packs[pack.name] = pack
        self.signatures.update((s.name, s) for s in pack.signatures)
        self.echoes.update((e.name, e) for e in pack.echoes)
        return pack

    @classmethod
    def with_builtins(cls, pack_files: Iterable[str] = ()) -> Registry:
        """The built-in packs, then each user pack file (raises :class:`PackError`)."""
        registry = cls(builtin_packs())
        for path in pack_files:
            registry.add(load_pack(path))
        return registry
