"""``python -m fvp.host.dropin [--flavour=u65|u85] ...``: the drop-in without installing its console scripts."""

import sys

from .command import main

sys.exit(main())
