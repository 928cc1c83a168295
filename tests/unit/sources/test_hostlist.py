"""Host pattern expansion and folding: tables of patterns, their names, and the errors for bad ones."""

from __future__ import annotations

import pytest
from ClusterShell.NodeSet import NodeSet

from gpudiag.sources.hostlist import MAX_NAMES, HostPatternError, expand, fold


def _names(prefix: str, numbers: range, width: int = 0) -> tuple[str, ...]:
    return tuple(f"{prefix}{str(n).zfill(width)}" for n in numbers)


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        ("gpu01", ("gpu01",)),
        ("gpu-spare", ("gpu-spare",)),
        ("  gpu01  ", ("gpu01",)),
        ("gpu[01-16]", _names("gpu", range(1, 17), 2)),
        ("gpu[001-128]", _names("gpu", range(1, 129), 3)),
        ("gpu[1-10]", _names("gpu", range(1, 11))),
        ("gpu[1,3,5-7]", ("gpu1", "gpu3", "gpu5", "gpu6", "gpu7")),
        ("gpu[7]", ("gpu7",)),
        ("gpu[1-3]-ib", ("gpu1-ib", "gpu2-ib", "gpu3-ib")),
        (
            "rack[1-2]-gpu[1-3]",
            ("rack1-gpu1", "rack1-gpu2", "rack1-gpu3", "rack2-gpu1", "rack2-gpu2", "rack2-gpu3"),
        ),
        ("a,b,gpu[1-2]", ("a", "b", "gpu1", "gpu2")),
        ("a, b ,gpu[1-2]", ("a", "b", "gpu1", "gpu2")),
        ("gpu[1-2],gpu[4,6]", ("gpu1", "gpu2", "gpu4", "gpu6")),
        ("10.0.0.[1-4]", ("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4")),
        ("node_a.example.com", ("node_a.example.com",)),
        # Order of appearance, not sorted; duplicates dropped where they first repeat.
        ("gpu3,gpu1,gpu[1-3],gpu2", ("gpu3", "gpu1", "gpu2")),
        ("gpu[1,1-2]", ("gpu1", "gpu2")),
        # Zero padding follows the lower bound's width (Slurm), even when the range grows wider.
        ("gpu[01-100]", _names("gpu", range(1, 10), 2) + _names("gpu", range(10, 101))),
        ("gpu[8-10]", ("gpu8", "gpu9", "gpu10")),
        ("gpu[098-101]", ("gpu098", "gpu099", "gpu100", "gpu101")),
        ("gpu[01-02,3]", ("gpu01", "gpu02", "gpu3")),
        ("gpu[00-01]", ("gpu00", "gpu01")),
    ],
)
def test_expand(pattern: str, names: tuple[str, ...]) -> None:
    assert expand(pattern) == names


def test_expand_mixed_width_ends_at_the_wide_name() -> None:
    names = expand("gpu[01-100]")
    assert (len(names), names[0], names[8], names[9], names[98], names[99]) == (
        100,
        "gpu01",
        "gpu09",
        "gpu10",
        "gpu99",
        "gpu100",
    )


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "bad host pattern '': it is empty"),
        ("   ", "bad host pattern '   ': it is empty"),
        ("gpu[1-", "bad host pattern 'gpu[1-': '[' is never closed"),
        ("gpu1]", "bad host pattern 'gpu1]': ']' without '['"),
        ("gpu[[1-2]]", "bad host pattern 'gpu[[1-2]]': brackets cannot nest"),
        ("gpu[5-1]", "bad host pattern 'gpu[5-1]': range '5-1' runs backwards"),
        ("gpu[a-b]", "bad host pattern 'gpu[a-b]': 'a-b' is not a number or a range like 1-8"),
        ("gpu[1-2-3]", "bad host pattern 'gpu[1-2-3]': '1-2-3' is not a number or a range like 1-8"),
        ("gpu[1,,2]", "bad host pattern 'gpu[1,,2]': '' is not a number or a range like 1-8"),
        ("gpu[-2]", "bad host pattern 'gpu[-2]': '-2' is not a number or a range like 1-8"),
        ("gpu[]", "bad host pattern 'gpu[]': empty brackets"),
        ("gpu[1-010]", "bad host pattern 'gpu[1-010]': range '1-010' pads its ends differently"),
        ("a,,b", "bad host pattern 'a,,b': empty name between commas"),
        ("a,b,", "bad host pattern 'a,b,': empty name between commas"),
        ("ubuntu@gpu01", "bad host pattern 'ubuntu@gpu01': unexpected character '@'"),
        ("gpu01:2222", "bad host pattern 'gpu01:2222': unexpected character ':'"),
        ("gpu 01", "bad host pattern 'gpu 01': unexpected character ' '"),
        ("gpu[1-200000]", f"bad host pattern 'gpu[1-200000]': it expands to more than {MAX_NAMES} names"),
        (
            "a[1-1000]b[1-1000]",
            f"bad host pattern 'a[1-1000]b[1-1000]': it expands to more than {MAX_NAMES} names",
        ),
    ],
)
def test_expand_rejects(pattern: str, message: str) -> None:
    with pytest.raises(HostPatternError) as excinfo:
        expand(pattern)
    assert str(excinfo.value) == message


def test_host_pattern_error_is_a_value_error() -> None:
    assert issubclass(HostPatternError, ValueError)


@pytest.mark.parametrize(
    ("names", "folded"),
    [
        ((), ""),
        (("gpu01",), "gpu01"),
        (("gpu01", "gpu02", "gpu03", "gpu05"), "gpu[01-03,05]"),
        (("gpu05", "gpu01", "gpu03", "gpu02", "gpu01"), "gpu[01-03,05]"),
        (("gpu2", "gpu10", "gpu1"), "gpu[1-2,10]"),
        (_names("gpu", range(1, 10), 2) + _names("gpu", range(10, 101)), "gpu[01-100]"),
        (("gpu9", "gpu10", "gpu11"), "gpu[9-11]"),
        # The same number written two ways is two hosts, and each keeps its spelling.
        (("gpu1", "gpu01", "gpu2", "gpu02"), "gpu[1-2,01-02]"),
        (("gpu007", "gpu08"), "gpu[007,08]"),
        (("rack1-gpu1", "rack1-gpu2", "rack2-gpu1", "rack2-gpu2"), "rack[1-2]-gpu[1-2]"),
        (("rack1-gpu1", "rack1-gpu2", "rack2-gpu1"), "rack1-gpu[1-2],rack2-gpu1"),
        (("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"), "10.0.0.[1-4]"),
        (("login", "gpu2", "gpu1", "gpu-spare"), "gpu[1-2],gpu-spare,login"),
        (("gpu1-ib", "gpu2-ib", "gpu1"), "gpu1,gpu[1-2]-ib"),
    ],
)
def test_fold(names: tuple[str, ...], folded: str) -> None:
    assert fold(names) == folded


@pytest.mark.parametrize(
    "names",
    [
        _names("gpu", range(1, 101), 2),
        _names("gpu", range(1, 129), 3) + ("gpu7", "gpu0070", "login"),
        expand("rack[1-3]-gpu[01-08],rack4-gpu[01-05],10.0.[0-1].[1-3],gpu[8-12]"),
        ("gpu1", "gpu01", "gpu001", "gpu2", "gpu002", "gpu0", "gpu00"),
    ],
)
def test_fold_round_trips(names: tuple[str, ...]) -> None:
    assert sorted(expand(fold(names))) == sorted(set(names))


@pytest.mark.parametrize("name", ["", "gpu[1]", "a,b", "gpu 1"])
def test_fold_rejects_names_no_pattern_gives_back(name: str) -> None:
    with pytest.raises(HostPatternError, match="cannot fold host name"):
        fold(["gpu1", name])


@pytest.mark.parametrize(
    "pattern",
    ["gpu[01-16]", "gpu[001-128]", "rack[1-2]-gpu[1-8]", "a,b,gpu[1-2]", "gpu[1,3,5-7]", "10.0.0.[1-4]"],
)
def test_expand_agrees_with_clustershell_where_it_can(pattern: str) -> None:
    # ClusterShell sorts and refuses mixed widths; on same-width patterns it is a good second opinion.
    assert set(expand(pattern)) == set(NodeSet(pattern))
    assert set(expand(fold(expand(pattern)))) == set(NodeSet(str(NodeSet.fromlist(expand(pattern)))))
