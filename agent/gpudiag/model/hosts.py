"""A host to sweep, as the host sources give it.

Standard library only; see :mod:`gpudiag.model`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Host:
    """One target of a sweep, with its effective connection settings."""

    name: str
    address: str | None = None  # None: connect to ``name`` (resolved by ~/.ssh/config, then DNS)
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    jump: str | None = None  # a bastion, "[user@]host[:port]"
    # Carried for the log-evidence checks. Left out of the hash: an inventory's entry is a mapping
    # ({path, packs}), and the transports and watch key their connections and backoff by Host.
    logs: tuple[object, ...] = field(default=(), hash=False)
    groups: tuple[str, ...] = ()

    @property
    def target(self) -> str:
        """The address to connect to."""
        return self.address or self.name

    @property
    def is_local(self) -> bool:
        return self.target in ("localhost", "local") and self.port is None and self.jump is None
