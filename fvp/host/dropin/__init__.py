"""The FVP drop-ins (``FVP_Corstone_SSE-300_Ethos-U55``/``-U65``, ``FVP_Corstone_SSE-320``): the FVP's command line
(``command``), the application ELF it is given with ``-a`` (``elf_image``), and ``fvp elf``, which writes one
(``elf_writer``)."""
