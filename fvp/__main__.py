import sys

from .launch import fvp

sys.exit(fvp())
