"""The collector, in two halves (shipped as ``gpudiag.collectors``).

* ``node/`` runs ON the GPU node: Python 3.6+ and its standard library only (the NVML binding travels with
  it), imports nothing from the controller, prints one JSON document. ``node/readings.py`` is the table of
  GPU readings that both halves walk.
* ``bundle.py`` and ``prune.py`` run on the controller: they pack ``node/`` into the one script a node runs.
"""
