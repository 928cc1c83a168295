"""What runs ON the node: standard library only, Python 3.6+, nothing from the controller.

The controller sends these files as one script (``gpudiag.collectors.bundle``), where each module is
importable under a flat name (``gpudiag_nvml``, ``gpudiag_readings``, ...); imported from the installed
package (tests, ``gpudiag local``) they are ``gpudiag.collectors.node.*``.
"""
