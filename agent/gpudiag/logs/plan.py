"""Which logs each host's node scans, and for what: inventory ``logs:`` and ``--log`` → a :class:`LogPlan`.

A host's ``logs`` entries (from the inventory, carried raw) are a path, or a mapping::

    logs:
      - ~/sglang-glm5.log                          # built-in packs for files (all but xid)
      - {path: /var/log/vllm.log, packs: [vllm, nccl, ./site-pack.yaml], tail_mib: 32, since_hours: 12}
      - "@kernel"                                  # the kernel log (journalctl -k, else dmesg): Xids

``--log PATH`` adds a path to every host; ``--pack FILE`` adds a user pack (used by every file log that
does not name its packs). Everything is checked here, before any connection; an error is one line
(:class:`LogConfigError`) naming the host and the entry.

Hosts whose plans are equal share one collector command (:attr:`LogPlan.key`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpudiag.logs.packs import Echo, Expectation, Pack, PackError, Registry, Signature, load_pack
from gpudiag.logs.words import required_words
from gpudiag.model import Host
from gpudiag.model.request import LogOptions

KERNEL = "@kernel"
MAX_TAIL_MIB = 1024.0
DEFAULT_KERNEL_SINCE_HOURS = 24.0
MAX_FILES = 4  # the log and three rotations
_ENTRY_KEYS = ("packs", "path", "since_hours", "tail_mib")


class LogConfigError(ValueError):
    """A log entry or pack cannot be used; the message is one line naming the host and the entry."""



@dataclass(frozen=True, slots=True, kw_only=True)
class LogSource:
    """One log a node scans, with everything it looks for."""

    path: str
    tail_bytes: int
    since_hours: float | None = None
    packs: tuple[str, ...] = ()
    signatures: tuple[Signature, ...] = ()
    echoes: tuple[Echo, ...] = ()
    expectations: tuple[Expectation, ...] = ()
    keep: int = 3

    def node_config(self) -> dict[str, object]:
        """The source as the node's scanner reads it (collectors/gpudiag_node/logscan.py): data, never shell text."""
        return {"path": self.path, "tail_bytes": self.tail_bytes, "since_hours": self.since_hours,
                "max_files": MAX_FILES, "keep": self.keep,
                "signatures": [s.node_spec() for s in self.signatures],
                "echoes": [{"name": e.name, "regex": e.regex} for e in self.echoes]}


@dataclass(frozen=True, slots=True, kw_only=True)
class LogPlan:
    """Every log one host's node scans."""

    sources: tuple[LogSource, ...] = ()
    # The logs a node finds by itself: the stdout/stderr of a GPU process whose command line matches a
    # server's launch echo (``servers``: (server, regex)), scanned as ``discovered`` says (its path unset).
    discovered: LogSource | None = None
    servers: tuple[tuple[str, str], ...] = ()

    def node_config(self) -> list[dict[str, object]]:
        return [s.node_config() for s in self.sources]

    def discover_config(self) -> dict[str, object] | None:
        """What the node needs to find and scan servers' logs itself (collectors/gpudiag_node/processes.py)."""
        if self.discovered is None or not self.servers:
            return None
        source = self.discovered.node_config()
        del source["path"]
        # "words": the node compiles a pattern only for a command line that holds one of them (logs/words.py)
        return {"servers": [{"server": name, "regex": regex, "words": list(required_words(regex))}
                            for name, regex in self.servers], "source": source}

    @property
    def key(self) -> str:
        """Equal for plans that need the same collector command."""
        return json.dumps([self.node_config(), self.discover_config()], sort_keys=True)

    def source(self, path: str) -> LogSource | None:
        return next((s for s in self.sources if s.path == path), None)

    def source_of(self, scan_path: str, found_server: str | None) -> LogSource | None:
        """The source a scan was made for: the configured one of its path, else (a log the node found
        through a server process) the discovered logs' source."""
        return self.source(scan_path) or (self.discovered if found_server else None)

    def echo(self, name: str) -> Echo | None:
        sources = self.sources + ((self.discovered,) if self.discovered is not None else ())
        return next((e for s in sources for e in s.echoes if e.name == name), None)


NO_LOGS = LogPlan()


def _number(value: object, where: str, key: str, limit: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= limit:
        raise LogConfigError(f"{where}: {key}: expected a number above 0 and at most {limit:g}, got {value!r}")
    return float(value)


class Planner:
    """Builds plans against one registry; user pack files are loaded once each.

    The registry (the built-in packs, parsed from YAML: ~0.1 s) is loaded when a log first needs it, so a
    sweep with no logs never pays for it; ``--pack`` files and ``--signature`` are checked at once, before
    any connection."""

    def __init__(self, options: LogOptions) -> None:
        self.options = options
        self._registry: Registry | None = None
        self._discovered: LogSource | None = None
        self._common: LogPlan | None = None  # the plan of every host without logs of its own (most hosts)
        self._defaults: dict[str, list[Pack]] = {}
        self.loaded: dict[str, Pack] = {}
        if options.pack_files or options.only_signature is not None:
            self._load()
        if options.only_signature is not None and options.only_signature not in self.registry.signatures:
            known = ", ".join(sorted(self.registry.signatures))
            raise LogConfigError(f"--signature {options.only_signature}: no such signature (known: {known})")

    def _load(self) -> Registry:
        if self._registry is None:
            try:
                self._registry = Registry.with_builtins(self.options.pack_files)
            except PackError as exc:
                raise LogConfigError(f"--pack {exc}") from exc
            # What a log that names no packs gets: chosen now, so packs an inventory entry loads by path later
            # apply only where they are named.
            self._defaults = {kind: [p for p in self._registry.packs.values() if p.applies_to == kind]
                              for kind in ("files", "kernel")}
        return self._registry

    @property
    def registry(self) -> Registry:
        return self._load()

    @property
    def defaults(self) -> dict[str, list[Pack]]:
        self._load()
        return self._defaults

    def pack(self, name: str, where: str) -> Pack:
        if name in self.registry.packs:
            return self.registry.packs[name]
        if "/" in name or name.endswith((".yaml", ".yml")):
            if name not in self.loaded:
                try:
                    self.loaded[name] = self.registry.add(load_pack(name))
                except PackError as exc:
                    raise LogConfigError(f"{where}: {exc}") from exc
            return self.loaded[name]
        raise LogConfigError(f"{where}: no pack {name!r} (known: {', '.join(self.registry.packs)}; "
                             "or give a path to a pack file)")

    def source(self, entry: object, where: str) -> LogSource:
        """One ``logs`` entry (a path or a mapping) → a source."""
        if isinstance(entry, str):
            body: Mapping[str, object] = {"path": entry}
        elif isinstance(entry, Mapping):
            body = entry
            unknown = sorted(str(k) for k in body if k not in _ENTRY_KEYS)
            if unknown:
                raise LogConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(_ENTRY_KEYS)})")
        else:
            raise LogConfigError(f"{where}: expected a log path or a mapping, got {type(entry).__name__}")
        path = body.get("path")
        if not isinstance(path, str) or not path.strip():
            raise LogConfigError(f"{where}: missing key 'path' (a log file, or {KERNEL} for the kernel log)")
        if path.startswith("@") and path != KERNEL:
            raise LogConfigError(f"{where}: {path!r}: the only special source is {KERNEL} (the kernel log)")
        if "\x00" in path or "\n" in path:
            raise LogConfigError(f"{where}: the path holds a NUL or newline character")
        kernel = path == KERNEL
        raw_packs = body.get("packs")
        if raw_packs is None:
            packs = self.defaults["kernel" if kernel else "files"]
        elif isinstance(raw_packs, (list, tuple)) and all(isinstance(p, str) for p in raw_packs) and raw_packs:
            packs = [self.pack(p, f"{where}: packs") for p in raw_packs]
        else:
            raise LogConfigError(f"{where}: packs: expected a list of pack names or pack files")
        tail = body.get("tail_mib", self.options.tail_mib)
        tail_mib = _number(tail, where, "tail_mib", MAX_TAIL_MIB)
        since = body.get("since_hours")
        if since is not None:
            since_hours: float | None = _number(since, where, "since_hours", 24.0 * 3650)
        else:
            defaults = [p.since_hours for p in packs if p.since_hours is not None]
            since_hours = max(defaults) if defaults else (DEFAULT_KERNEL_SINCE_HOURS if kernel else None)
        return self.assemble(path, packs, round(tail_mib * 1024 * 1024), since_hours)

    def assemble(self, path: str, packs: Sequence[Pack], tail_bytes: int, since_hours: float | None) -> LogSource:
        registry = self.registry
        if self.options.only_signature is not None:
            signatures: list[Signature] = [registry.signatures[self.options.only_signature]]
            expectations: list[Expectation] = []
        else:
            signatures = [s for p in packs for s in p.signatures]
            expectations = [e for p in packs for e in p.expectations]
            for exp in expectations:  # an expectation needs its signatures scanned, whichever pack has them
                for name in (*exp.expect, *exp.after):
                    if all(s.name != name for s in signatures):
                        signatures.append(registry.signatures[name])
        # Every echo, always: a configuration dump must never count as a match, whichever packs are chosen.
        return LogSource(path=path, tail_bytes=tail_bytes, since_hours=since_hours,
                         packs=tuple(p.name for p in packs), signatures=tuple(signatures),
                         echoes=tuple(registry.echoes.values()), expectations=tuple(expectations),
                         keep=self.options.keep)

    def plan(self, host: Host) -> LogPlan:
        """``host``'s plan. Hosts without logs of their own share one (the options' alone): one object, so that
        a sweep builds it, and its collector command, once for them all."""
        if not host.logs:
            if self._common is None:
                self._common = self._plan_of(host)
            return self._common
        return self._plan_of(host)

    def _plan_of(self, host: Host) -> LogPlan:
        sources: dict[str, LogSource] = {}
        entries: list[tuple[object, str]] = [(e, f"host {host.name}: logs[{i}]") for i, e in enumerate(host.logs)]
        entries += [(p, f"--log {p}") for p in self.options.paths]
        for entry, where in entries:
            source = self.source(entry, where)
            sources.setdefault(source.path, source)  # a path given twice is scanned once (first wins)
        if not self.options.discover:
            return LogPlan(sources=tuple(sources.values()))
        return LogPlan(sources=tuple(sources.values()), discovered=self.discovered(), servers=self.servers())

    def discovered(self) -> LogSource:
        """How a server's log found on the node is scanned: as a log path given with no packs."""
        if self._discovered is None:
            self._discovered = self.source({"path": "(found on the node)"}, "a server's log found on the node")
        return self._discovered

    def servers(self) -> tuple[tuple[str, str], ...]:
        """(server, regex) of every launch-command echo (format argv) of the packs: how a GPU process's
        command line is recognized as an inference server's."""
        return tuple((e.server, e.regex) for e in self.registry.echoes.values() if e.format == "argv" and e.server)


def build_plans(hosts: Iterable[Host], options: LogOptions | None = None, *,
                planner: Planner | None = None) -> dict[str, LogPlan]:
    """Each host's plan, by host name (``planner``: the one built for ``options`` already); raises
    :class:`LogConfigError` (one line) before any connection."""
    planner = planner or Planner(options or LogOptions())
    return {host.name: planner.plan(host) for host in hosts}
