"""Board descriptions: YAML loading with ``extends:``, FVP-style ``-C`` overrides, validation, typed spec."""

from .build import NPU_VARIANTS, layout_firmware
from .loader import (CONFIG_DIR, DEFAULT_BOARD, ConfigProblems, Layer, available_boards, board_for_target,
                     find_board, load_board)
from .schema import BoardSpec, as_written

__all__ = ["load_board", "find_board", "available_boards", "board_for_target", "layout_firmware", "BoardSpec",
           "ConfigProblems", "CONFIG_DIR", "DEFAULT_BOARD", "Layer", "NPU_VARIANTS", "as_written"]
