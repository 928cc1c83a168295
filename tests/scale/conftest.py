"""The scale tests: bounds on large inputs (linear time, bounded memory), in CPU seconds measured in the test
(tests/unit/cpu_cost.py) and ratios, never wall time. Pure as the unit tests are (the same guard: no process, no
network), and apart from them so that the unit suite stays a quick loop: seconds of CPU each. The README's test
command and CI run them; the helpers they share with the unit tests (many_hosts, cpu_cost) are in tests/unit,
which pyproject.toml puts on ``sys.path``."""

from __future__ import annotations

from no_io import no_process_no_network  # noqa: F401 - the autouse guard: no process, no network
