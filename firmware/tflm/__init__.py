"""A second firmware image: TFLite Micro's inference runner (MLEK's ``inference_runner``) in Python.

``runner.main`` is the image (registered as ``tflm_inference_runner``); ``model`` reads the ``.tflite`` with
the generated TFLite schema classes (PyPI ``tflite``), ``planner`` plans the tensor arena as TFLM does,
``kernels`` are TFLM's reference kernels, ``ethosu_op`` runs the ``ethos-u`` custom operator through the
firmware's Ethos-U driver. See docs/tflm.md.
"""

from .runner import check_config, main  # noqa: F401
