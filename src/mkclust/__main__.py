"""``python -m mkclust <tool> ...``, the same as the ``mkclust`` console script: the command line is
:mod:`mkclust.repro.cli` (the tools, and how they are dispatched)."""

from __future__ import annotations

import sys

from mkclust.repro.cli import TOOLS, main, run_tool, usage  # noqa: F401  (the console script's entry point)

if __name__ == "__main__":
    sys.exit(main())
