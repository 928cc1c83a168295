"""Where the hosts come from: gpudiag's inventory YAML, Ansible inventories, Slurm, ClusterShell groups and host
patterns (``gpu[01-16]``), all read through one YAML loader with one set of limits. Each answers with
:class:`gpudiag.model.Host` values; nothing here connects to a host."""
