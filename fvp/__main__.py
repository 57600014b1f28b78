import sys

from .host.launch import fvp

sys.exit(fvp())
