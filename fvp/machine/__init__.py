"""The simulated machine: platform, bus and memory, simulated time, the Cortex-M55 cost model, the devices and
the Ethos-U. It is built from a ``BoardSpec`` (``fvp.boards``) and never imports the host (``fvp.host``)."""
