"""The scheduled audit: the history store (:mod:`.history`), what changed since the last run (:mod:`.changes`),
notifications (:mod:`.notify`), Slurm's drain (:mod:`.drain`), the Prometheus exporter (:mod:`.exporter`), and
what one audited run does after its sweep (:mod:`.scheduled`)."""
