"""What the host knows about the programs users bring, before anything runs: the firmware image a board names
(``firmware_image``), which board a program runs on (``program_board`` from its compile specs, ``tflm_board``
for a ``.tflite`` from its Vela command streams; the rule they share in ``resolution``), what ExecuTorch's scripts
fix per target (``et_build``), compiling a ``.tflite`` with Vela (``vela``), and the prebuilt model zoo (``zoo``,
package data)."""
