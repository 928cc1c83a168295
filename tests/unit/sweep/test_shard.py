"""--shard I/N splits hosts stably by name; merge joins the shards' reports and refuses overlaps."""

from __future__ import annotations

import pytest
from builders import finding, host_report, sweep

from gpudiag.model import Host, HostStatus, Severity, SweepReport
from gpudiag.sweep.shard import ShardError, merge, parse_shard, select_shard, shard_of

HOSTS = tuple(Host(name=f"gpu{i:04d}") for i in range(1000))


@pytest.mark.parametrize("text, expected", [("1/4", (1, 4)), ("4/4", (4, 4)), ("1/1", (1, 1))])
def test_parse(text: str, expected: tuple[int, int]) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "a/b", "1-4", "", "1/", "/4", "-1/4"])
def test_bad_shards_are_one_line_errors(text: str) -> None:
    with pytest.raises(ShardError, match=r"expected I/N with 1 <= I <= N"):
        parse_shard(text)


def test_shards_cover_every_host_exactly_once_and_are_balanced() -> None:
    parts = [select_shard(HOSTS, i, 4) for i in range(1, 5)]
    names = [h.name for part in parts for h in part]
    assert sorted(names) == sorted(h.name for h in HOSTS)
    assert all(200 <= len(part) <= 300 for part in parts), [len(p) for p in parts]
    assert list(parts[0]) == sorted(parts[0], key=HOSTS.index)  # original order kept


def test_a_hosts_shard_depends_on_its_name_only() -> None:
    before = {h.name: shard_of(h.name, 8) for h in HOSTS}
    fewer = HOSTS[::3]
    assert all(shard_of(h.name, 8) == before[h.name] for h in fewer)
    assert shard_of("gpu0001", 8) == shard_of("gpu0001", 8)


def test_merge_joins_and_keeps_the_worst() -> None:
    a = sweep(host_report("gpu01"), started_at="2026-01-01T00:00:05+00:00", duration_s=3.0)
    lost = finding(code="HOST_UNREACHABLE", severity=Severity.CRITICAL, host="gpu02", gpu=None)
    b = sweep(host_report("gpu02", status=HostStatus.UNREACHABLE, findings=[lost]),
              started_at="2026-01-01T00:00:01+00:00", duration_s=7.5)
    merged = merge([("a.json", a), ("b.json", b)])
    assert [h.host for h in merged.hosts] == ["gpu01", "gpu02"]
    assert (merged.started_at, merged.duration_s) == ("2026-01-01T00:00:01+00:00", 7.5)
    assert (a.exit_code, b.exit_code, merged.exit_code) == (0, 2, 2)


def test_merge_refuses_a_host_in_two_reports() -> None:
    with pytest.raises(ShardError, match="host gpu01 is in both a.json and b.json"):
        merge([("a.json", sweep(host_report("gpu01"))), ("b.json", sweep(host_report("gpu01")))])
    with pytest.raises(ShardError, match="nothing to merge"):
        merge([])


def test_merge_keeps_the_settings_the_shards_agree_on() -> None:
    import dataclasses

    from gpudiag.model import CheckSettings

    def shard(host: str, settings: CheckSettings | None) -> SweepReport:
        return dataclasses.replace(sweep(host_report(host)), settings=settings)

    forty = CheckSettings(low_power_pct=40.0)
    assert merge([("a", shard("gpu01", forty)), ("b", shard("gpu02", forty))]).settings == forty
    # Runs judged by different thresholds, or one that does not say (a gpudiag.sweep/2 shard): not one set.
    assert merge([("a", shard("gpu01", forty)), ("b", shard("gpu02", CheckSettings()))]).settings is None
    assert merge([("a", shard("gpu01", forty)), ("b", shard("gpu02", None))]).settings is None


def test_a_schema_2_shard_merges_with_a_schema_3_one() -> None:
    import dataclasses
    import json

    from gpudiag.model import CheckSettings
    from gpudiag.report.json_report import from_document, render_json

    new = dataclasses.replace(sweep(host_report("gpu01")), settings=CheckSettings())
    old = json.loads(render_json(sweep(host_report("gpu02"))))
    old["schema"] = "gpudiag.sweep/2"
    del old["settings"]
    for g in old["hosts"][0]["gpus"]:
        g["power_pct_of_limit"] = g["power"]["pct_of_limit"]  # /2 said the share twice
    merged = merge([("new.json", from_document(json.loads(render_json(new)))), ("old.json", from_document(old))])
    assert [h.host for h in merged.hosts] == ["gpu01", "gpu02"] and merged.settings is None
    assert merged.hosts[1].gpus == sweep(host_report("gpu02")).hosts[0].gpus
