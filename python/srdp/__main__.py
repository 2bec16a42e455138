"""``python -m srdp``: srdp's command line (see :mod:`srdp.cli`)."""

from __future__ import annotations

import sys

from srdp.cli import main

sys.exit(main())
