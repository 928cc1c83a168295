"""The action ladder: what to do about a finding, from leaving it alone to replacing the GPU, in one order.

Standard library only; see :mod:`gpudiag.model`. Every :class:`~gpudiag.model.Finding` carries one
:class:`Action`; a host's action is the highest of its findings' (:func:`highest`). Which action a finding
gets is decided in one table, :data:`gpudiag.checks.actions.ACTIONS`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from gpudiag.model.labelled import Labelled


class Action(Labelled, enum.Enum):
    """One rung of the ladder; its value is the word the JSON, the drain reason and ``--drain-on`` use.

    A plain Enum, not an IntEnum, as :class:`~gpudiag.model.Severity` is: how far up the ladder one is, is
    :attr:`rank`; combine with :func:`highest`, never with ``max()`` on the values (they are words)."""

    NONE = "none"  # nothing to do to the GPU (nothing is known to be wrong with it, or it is information)
    WATCH = "watch"  # keep an eye on it: look again next sweep, look at the workload
    RESTART_WORKLOAD = "restart_workload"  # the application faulted; the GPU keeps working
    RESET_GPU = "reset_gpu"  # stop its processes and reset the GPU (nvidia-smi -r)
    # the node did not answer: nothing is known of its GPUs, and a node nobody watches must alert (rank 4,
    # above a reset); look at it from its console or BMC, reboot it if it hangs. A host's rung, never a GPU's
    # need: a repeat of a GPU's need skips it (:meth:`raised`).
    CHECK_NODE = "check_node"
    REBOOT_NODE = "reboot_node"  # the node needs a reboot (a GPU off the bus, a wedged driver)
    DRAIN_AND_INSPECT = "drain_and_inspect"  # take the node out of service and have someone look at it
    REPLACE_GPU = "replace_gpu"  # the GPU is failing: service or replace it

    @property
    def label(self) -> str:
        return str(self.value)

    @property
    def rank(self) -> int:
        """How far up the ladder: NONE 0 ... REPLACE_GPU 7. Every ordering of actions uses this."""
        return _RANK[self]

    @property
    def noun(self) -> str:
        """The action as a thing a GPU needed: "a reset", "a reboot" ("needed a reset 3 times this week")."""
        return _NOUN[self]

    def raised(self) -> Action:
        """One step up the ladder (REPLACE_GPU stays itself): what a repeat of the same need asks for. A GPU
        that needed a reset again needs a reboot: CHECK_NODE (a node that did not answer) is skipped."""
        up = _BY_RANK[min(self.rank + 1, len(_BY_RANK) - 1)]
        return up.raised() if up is Action.CHECK_NODE else up

    def at_least(self, other: Action) -> bool:
        """Whether this action is ``other`` or higher on the ladder."""
        return self.rank >= other.rank



_BY_RANK = tuple(Action)  # declaration order is the ladder's order
_RANK = {action: rank for rank, action in enumerate(_BY_RANK)}
_NOUN = {Action.NONE: "nothing", Action.WATCH: "watching", Action.RESTART_WORKLOAD: "a workload restart",
         Action.RESET_GPU: "a reset", Action.CHECK_NODE: "a check of the node", Action.REBOOT_NODE: "a reboot",
         Action.DRAIN_AND_INSPECT: "a drain and inspection", Action.REPLACE_GPU: "a replacement"}


def highest(actions: Iterable[Action]) -> Action:
    """The highest of ``actions`` on the ladder (NONE when there are none): the one way to combine them."""
    return max(actions, key=lambda a: a.rank, default=Action.NONE)


# The evidence key of a finding whose action repeats raised: the action it asked for before (a label).
BEFORE_REPEATS = "action_before_repeats"


def needed(action: Action, evidence: Mapping[str, object]) -> Action:
    """What a finding needed before repeats raised its action (``action`` itself when they did not): what the
    history counts as "needed a reset"."""
    before = evidence.get(BEFORE_REPEATS)
    return Action.from_label(before) if isinstance(before, str) else action
