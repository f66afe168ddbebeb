"""The command line: ``mkclust <tool> ...`` (a console script) or ``python -m mkclust <tool> ...``. One
module per tool holds its ``main(argv)``; the domain modules keep functions. Tools are imported when
called, so ``mkclust datasets`` (the library's own tool) needs none of the workflow's packages.

    mkclust check my_config.yaml                                # the checks the workflow makes before any job
    mkclust estimate workflow/configs/paper.yaml --cores 8     # what a configuration costs, before it runs
    mkclust datasets --list                                     # the registered data sets: n, d, classes
    mkclust archive missing results/paper workflow/configs/paper.yaml   # the reference run's gaps
    mkclust results --figures <run>/figures                     # a run's results page
"""

from __future__ import annotations

import importlib
import sys

from mkclust._cli import run_tool

#: tool -> (module with a ``main(argv)``, one line of help)
TOOLS = {
    "check": ("mkclust.repro.cli.check", "check configuration files as the workflow does before any job (a YAML "
              "error's line and column)"),
    "estimate": ("mkclust.repro.cli.estimate", "what a configuration will cost, before it runs"),
    "datasets": ("mkclust.datasets.__main__",
                 "the registered data sets: list them (n, d, classes) or show what is known of one"),
    "archive": ("mkclust.repro.cli.archive", "results archives: add a piece, list missing run groups, compare a rerun"),
    "results": ("mkclust.repro.cli.results", "a run's results page and the README's results summary"),
}


def usage() -> str:
    width = max(map(len, TOOLS))
    return ("usage: mkclust <tool> [options]   (mkclust <tool> --help for a tool's options)\n\ntools:\n"
            + "\n".join(f"  {name:<{width}}  {text}" for name, (_, text) in TOOLS.items()))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    tool, rest = argv[0], argv[1:]
    if tool not in TOOLS:
        print(f"mkclust: unknown tool {tool!r} (tools: {', '.join(TOOLS)}; see mkclust --help)", file=sys.stderr)
        return 2
    module = importlib.import_module(TOOLS[tool][0])
    sys.argv[0] = f"mkclust {tool}"
    return run_tool(module.main, rest, f"mkclust {tool}")   # a user's error: one line (mkclust._cli)
