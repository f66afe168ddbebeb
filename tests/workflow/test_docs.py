"""docs/architecture.md names modules, functions and files; each must exist, so the map stays true
when the code moves."""

import importlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FILE_EXT = (".py", ".yaml", ".md", ".csv", ".tsv", ".json", ".smk", ".rst", ".toml")
PREFIXES = ("mkclust.", "mkclust.repro.", "mkclust.algorithms.", "mkclust.datasets.", "mkclust.kernels.")


def _resolves(dotted: str) -> bool:
    """Some prefix + ``dotted`` is an importable module followed by attributes."""
    for prefix in PREFIXES:
        parts = (prefix + dotted).split(".")
        for cut in range(len(parts), 1, -1):
            try:
                obj = importlib.import_module(".".join(parts[:cut]))
            except ImportError:
                continue
            try:
                for name in parts[cut:]:
                    obj = getattr(obj, name)
                return True
            except AttributeError:
                break
    return False


def test_every_module_function_and_file_architecture_md_names_exists():
    text = (REPO / "docs" / "architecture.md").read_text()
    missing = []
    for token in sorted(set(re.findall(r"`([^`\s]+)`", text))):
        if any(c in token for c in "<>*{}()=") or token.startswith("."):
            continue                                          # a pattern, an expression or an extension
        path, _, test = token.partition("::")
        if "/" in path or path.endswith(FILE_EXT):
            target = REPO / path
            if not target.exists():
                missing.append(token)
            elif test and f"def {test}(" not in target.read_text():
                missing.append(token)
        elif re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+", token) and not _resolves(token):
            missing.append(token)
    assert not missing, f"docs/architecture.md names what does not exist: {missing}"
