"""What runs ON the node: standard library only, Python 3.6+, nothing from the controller.

The controller sends these files as one script (``gpudiag.collect.bundle``), in which they are this same package,
``gpudiag_node``, so the modules import each other with plain relative imports wherever they run: on the node,
and from the installed package (tests, ``gpudiag local``).
"""
