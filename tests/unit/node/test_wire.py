"""The wire (collectors/gpudiag_node/wire.py) is the one declaration of what the controller asks and what the node
answers: the node's defaults are the controller's, the controller sends nothing undeclared and the node reads
nothing else, every section written on the node and read by the controller is a row, and docs/probe.md is what
the tables make."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import importlib.util
import json
import re
from enum import Enum
from pathlib import Path

import pytest

from gpudiag.collect.bundle import NODE_MODULES
from gpudiag.collect.remote import call_bound_s, collector_call
from gpudiag.model import CheckSettings
from gpudiag.sweep.runner import SweepOptions, collector_command
from gpudiag_node import wire

ROOT = Path(__file__).resolve().parents[3]
NODE = ROOT / "collectors" / "gpudiag_node"
DATA = ROOT / "tests" / "data"


def _sent(stdin: bytes) -> dict[str, object]:
    """The configuration a bundle carries (``_CONFIG = '...'``), as the node's loader reads it."""
    match = re.search(rb"^_CONFIG = (.*)$", stdin, re.MULTILINE)
    assert match is not None
    config = json.loads(ast.literal_eval(match.group(1).decode()))  # a str literal (repr) holding the JSON
    assert isinstance(config, dict)
    return config


def _default(name: str) -> object:
    value = next(f for f in dataclasses.fields(SweepOptions) if f.name == name).default
    return value.value if isinstance(value, Enum) else value


@pytest.mark.parametrize("key", [k for k in wire.CONFIG if k.setting], ids=lambda k: k.name)
def test_the_node_defaults_are_the_controller_settings(key: wire.Key) -> None:
    assert key.default == _default(key.setting)


def test_the_call_bound_default_is_what_a_default_sweep_sends() -> None:
    options = SweepOptions()
    assert wire.BY_KEY["call_timeout_s"].default == call_bound_s(options.deadline_s, options.samples,
                                                                  options.interval_s)


def test_a_default_sweep_sends_every_key_declared_and_the_node_reads_it_back() -> None:
    sent = _sent(collector_command(SweepOptions()).stdin)
    assert set(sent) == {key.name for key in wire.CONFIG}
    read = wire.read_config(sent)
    assert {name: read[name] for name in sent if sent[name] is not None} == \
           {name: value for name, value in sent.items() if value is not None}
    # The topology gate's thresholds are the check's: the node has none of its own.
    settings = CheckSettings()
    assert read["topology_if"] == {"busy_pct": settings.busy_utilization_pct, "low_power_pct": settings.low_power_pct}
    # What a default sweep sends and what a node run alone reads differ only where the controller decides.
    defaults = wire.read_config({})
    assert {name for name in read if read[name] != defaults[name]} == {"topology_if"}


def test_a_log_search_and_a_watch_say_so_in_declared_keys() -> None:
    search = _sent(collector_call(samples=1, interval_s=0.0, deadline_s=10.0, gpus=False, context=False).stdin)
    assert (search["gpus"], search["dcgm"], search["context"], search["topology_if"]) == (False, False, False, None)
    watch = _sent(collector_call(samples=2, interval_s=0.5, deadline_s=20.0, stream=True, idle_s=0.2).stdin)
    assert (watch["stream"], watch["round_deadline_s"], watch["idle_s"]) == (True, 20.0, 1.0)


def test_the_node_reads_a_wrong_or_missing_value_as_its_default_and_nothing_undeclared() -> None:
    read = wire.read_config({"samples": "9", "interval_s": -3, "gpus": 1, "context": False, "round_deadline_s": 0,
                             "unknown": True, "logs": {"not": "a list"}})
    assert set(read) == {key.name for key in wire.CONFIG}
    assert (read["samples"], read["interval_s"], read["gpus"], read["context"]) == (5, 0.0, True, False)
    assert (read["round_deadline_s"], read["logs"]) == (1.0, None)
    assert wire.read_config("not a mapping") == wire.read_config({})


def test_the_controller_cannot_send_an_undeclared_key_or_a_wrong_kind() -> None:
    with pytest.raises(ValueError, match="'surprise' is not a collector configuration key"):
        wire.make_config(surprise=True)
    with pytest.raises(ValueError, match="active=True is not a dict"):
        wire.make_config(active=True)
    with pytest.raises(ValueError, match="samples='5' is not a int"):
        wire.make_config(samples="5")
    with pytest.raises(ValueError, match="gpus=1 is not a bool"):
        wire.make_config(gpus=1)
    config = wire.make_config(samples=1, interval_s=0)
    assert config == dict(wire.read_config({}), samples=1, interval_s=0)


def _node_sources() -> dict[str, str]:
    return {path.stem: path.read_text() for path in sorted(NODE.glob("*.py"))}


def test_the_node_reads_its_configuration_only_through_the_table() -> None:
    for name, source in _node_sources().items():
        assert "config.get(" not in source, name
        for key in re.findall(r'config\["(\w+)"\]', source):
            assert key in wire.BY_KEY, (name, key)


def test_every_section_the_node_writes_is_declared() -> None:
    written: set[tuple[str, str]] = set()
    for name, source in _node_sources().items():
        written |= {(name, s) for s in re.findall(r'\bdoc\["(\w+)"\]\s*=[^=]', source)}
        written |= {(name, s) for s in re.findall(r'\bdoc\.setdefault\("(\w+)"', source)}
        written |= {(name, s) for s in re.findall(r'\bdoc\["(\w+)"\], doc\["(?:\w+)"\] =', source)}
    assert written, "the scan found no section written"
    assert {section for _, section in written} <= set(wire.BY_SECTION), written


@pytest.mark.parametrize("path", sorted(DATA.glob("*/*.json")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_recorded_documents_hold_only_declared_sections(path: Path) -> None:
    doc = json.loads(path.read_text())
    if isinstance(doc, dict) and doc.get("schema") == wire.SCHEMA:
        assert set(doc) <= set(wire.BY_SECTION), set(doc) - set(wire.BY_SECTION)


@pytest.mark.parametrize("section", [s for s in wire.SECTIONS if s.parser], ids=lambda s: s.name)
def test_each_section_names_its_writer_and_a_parser_that_reads_it(section: wire.Section) -> None:
    assert section.writer in NODE_MODULES
    module, function = section.parser.split(":")
    parser = getattr(importlib.import_module(f"gpudiag.collect.{module}"), function)
    assert callable(parser)
    source = (ROOT / "agent" / "gpudiag" / "collect" / f"{module}.py").read_text()
    assert re.search(f"[\"']{section.name}[\"']", source), f"{module}.py never names the section"


def test_the_controller_reads_only_declared_sections() -> None:
    source = (ROOT / "agent" / "gpudiag" / "collect" / "parse.py").read_text()
    read = set(re.findall(r'\bdoc\.get\("(\w+)"\)', source))
    assert read and read <= set(wire.BY_SECTION), read - set(wire.BY_SECTION)


def test_a_new_document_starts_with_the_declared_sections_and_drops_an_undeclared_one() -> None:
    doc = wire.new_document()
    assert list(doc) == [s.name for s in wire.SECTIONS if s.start is not None]
    assert doc["schema"] == wire.SCHEMA and doc["problems"] == [] and doc["cuda_version"] is None
    doc["surprise"] = 1
    assert "surprise" not in wire.finish(doc)
    assert doc["problems"] == ["undeclared section 'surprise' dropped (collectors/gpudiag_node/wire.py)"]


def test_docs_probe_md_is_what_the_tables_make() -> None:
    spec = importlib.util.spec_from_file_location("probe_doc", ROOT / "ci" / "probe_doc.py")
    assert spec is not None and spec.loader is not None
    probe_doc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe_doc)
    assert (ROOT / "docs" / "probe.md").read_text() == probe_doc.render(), "run: python3 ci/probe_doc.py"
