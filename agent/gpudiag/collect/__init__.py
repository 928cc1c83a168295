"""What the controller sends to a node and what it makes of the answer: the remote command line and the collector
bundle (:mod:`.remote`, :mod:`.bundle`, the NVML binding's cut :mod:`.prune`), and the parsers of the node's
document (:mod:`.parse`, :mod:`.parse_logs`, :mod:`.parse_processes`), which treat every byte as untrusted
(:mod:`.untrusted`)."""
