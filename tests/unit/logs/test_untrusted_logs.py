"""Node-supplied log text never costs the controller unbounded time (issue 14, item 1): the echo's facts are
read from where the node's match ended (no regex runs on the controller), the facts parser is linear on
crafted input, the built-in regexes are linear on the texts that made them quadratic, and a user pack with a
nested quantifier is refused at load time in one line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gpudiag.collect.parse_logs import parse_log_scan
from gpudiag.logs.echo import facts_of
from gpudiag.logs.packs import Echo, PackError, builtin_packs, load_pack
from gpudiag.logs.plan import LogPlan, LogSource
from gpudiag_node import logscan

# Generous: each of these took from 37 s to minutes of CPU before the fix, and takes milliseconds after it.
# CPU seconds of this process (time.process_time), not wall time: other load on the machine does not count.
BOUND_S = 5.0


def _plan(echo: Echo) -> LogPlan:
    return LogPlan(sources=(LogSource(path="/l", tail_bytes=1024, echoes=(echo,)),))


def test_the_controller_reads_facts_from_where_the_node_matched() -> None:
    echo = Echo(name="evil", pack="user", regex="(a+)+b", facts=("tp_size",))
    text = "a" * 30_000 + " ServerArgs(tp_size=8)"  # (a+)+b on it ran for minutes
    start = text.index("(") + 1
    raw = {"path": "/l", "status": "ok", "echoes": {"evil": {"count": 1, "seq": 3, "text": text, "start": start}}}
    began = time.process_time()
    scan = parse_log_scan(raw, _plan(echo))
    assert time.process_time() - began < BOUND_S
    assert scan.facts[0].values == (("tp_size", 8),)


def test_an_echo_without_a_valid_start_gives_no_facts() -> None:
    echo = Echo(name="e", pack="p", regex="x", facts=("tp_size",))
    for start in (None, -1, 10**9, "3", True):
        raw = {"echoes": {"e": {"count": 1, "seq": 1, "text": "S(tp_size=8)", "start": start}}}
        assert parse_log_scan(raw, _plan(echo)).facts[0].values == ()


def test_the_node_sends_where_its_echo_match_ended(tmp_path: Path) -> None:
    log = tmp_path / "s.log"
    log.write_text("x server_args=ServerArgs(tp_size=8)\n")
    out = logscan.scan({"path": str(log), "echoes": [{"name": "e", "regex": r"server_args=ServerArgs\("}]})
    assert out["echoes"]["e"]["start"] == len("x server_args=ServerArgs(")


@pytest.mark.scale
@pytest.mark.parametrize("fmt", ["python_kwargs", "python_dict", "argv"])
@pytest.mark.parametrize("unit", ["(", "[", "{", "'", "\\", "a=", "a=(", ",", ":", "--a ", "x" * 100 + "="])
def test_facts_parsing_is_bounded_on_a_crafted_mebibyte(fmt: str, unit: str) -> None:
    text = "S(" + unit * ((1 << 20) // len(unit))
    began = time.process_time()
    facts_of(fmt, text, 2, ("a", "tp_size"))
    assert time.process_time() - began < BOUND_S


CRAFTED = {  # the built-in regexes that were quadratic, and the text that showed it (1 MiB)
    "vllm_engine_config": "Initializing a V1 LLM engine (",
    "nccl_p2p_transport": "NCCL INFO Channel ",
    "nccl_shm_transport": "NCCL INFO Channel ",
    "nccl_socket_transport": "NCCL INFO Channel ",
    "flashinfer_configs_loaded": "[Autotuner]: Loading configs for ",
    "flashinfer_default_configs": "[AutoTuner]: ",
}


def _builtin_regexes() -> dict[str, str]:
    return {e.name: e.regex for p in builtin_packs() for e in (*p.signatures, *p.echoes)}


@pytest.mark.scale
@pytest.mark.parametrize("name", sorted(CRAFTED))
def test_the_builtin_regexes_are_linear_on_crafted_text(name: str) -> None:
    import re

    regex = _builtin_regexes()[name]
    text = CRAFTED[name] * ((1 << 20) // len(CRAFTED[name]))
    began = time.process_time()
    re.search(regex, text)
    assert time.process_time() - began < BOUND_S, regex


def test_no_builtin_regex_has_a_nested_quantifier() -> None:
    from gpudiag.logs.regex_lint import nested_quantifier

    assert {name: r for name, r in _builtin_regexes().items() if nested_quantifier(r)} == {}


@pytest.mark.parametrize("regex", ["(a+)+b", "(a*)*", "(?:x|y+)*z", "((ab)+c?)+", r"(\w+\s?)*$", "(a{1,9}){2,}"])
def test_a_user_pack_with_a_nested_quantifier_is_refused_in_one_line(tmp_path: Path, regex: str) -> None:
    pack = tmp_path / "site.yaml"
    pack.write_text(f"pack: site\nsignatures:\n  - name: evil\n    regex: '{regex}'\n")
    with pytest.raises(PackError) as info:
        load_pack(pack)
    message = str(info.value)
    assert "\n" not in message and str(pack) in message and "evil" in message and regex in message
    assert "nested" in message


@pytest.mark.parametrize("regex", ["a+b+", "(ab)+", "(?:x|y)*z", "(a+)?", "(a{2})+", r"(\d+\.)?\d+"])
def test_ordinary_quantifiers_pass_the_lint(regex: str) -> None:
    from gpudiag.logs.regex_lint import nested_quantifier

    assert nested_quantifier(regex) is None
