"""What every front end shares to run a program: the run itself (``session``: inputs read first, the machine
built and run, the FVP's trailer and exit status), and the reports of a finished run (``report``: ``--profile`` and
``--trace``; ``pmu_trace``: the drop-in's ``--pmu-trace``). ``fvp run`` itself is ``command``."""
