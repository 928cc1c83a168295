"""The application, without typer: one :class:`~gpudiag.model.request.SweepRequest` carried out.

:mod:`.request` checks the request and turns it into what the sweep takes (the hosts every source gives, the
check settings, the SSH options, each host's log plan), :mod:`.execute` carries it out: the event loop, the
signals that stop it, and one executor (in this process or in ``--workers`` processes) whose host reports
:func:`gpudiag.sweep.assemble.assemble_report` puts together; ``watch`` and the exporter keep their
connections through it too. The command line (:mod:`gpudiag.cli`) parses the options into the request and
prints; it never sweeps itself. Nothing here prints.
"""
