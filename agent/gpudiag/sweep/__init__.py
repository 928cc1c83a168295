"""The fan-out: every host at once with deadlines and one status per host (:mod:`.runner`), the live rounds of
``gpudiag watch`` (:mod:`.watch`), worker processes (:mod:`.workers`) and shards of a job array (:mod:`.shard`)."""
