"""``python -m kgparser`` (and ``torchrun -m kgparser``): the ``kgparser`` command."""
import sys

from .cli import main

sys.exit(main())
