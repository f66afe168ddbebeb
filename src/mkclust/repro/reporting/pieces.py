"""The archive's pieces as a markdown table, for the documents that list them (``mkclust archive pieces
[--write FILE]``): from the manifests alone (:func:`mkclust.repro.archive.pieces`)."""

from __future__ import annotations

from pathlib import Path

from mkclust._io import atomic_open
from mkclust.repro.archive import pieces, require


PIECES_BEGIN, PIECES_END = "<!-- archive-pieces:begin -->", "<!-- archive-pieces:end -->"


def pieces_markdown(archive: str | Path) -> str:
    """Every piece of the archive as a markdown table, from the manifests alone (what each piece holds
    and why is its manifest's ``note``): commit, date archived, run groups, runs, fit CPU, and the
    groups dropped from it or marked stale since; a last row sums them. A folder without pieces (most
    likely a mistyped path) is an error."""
    mans = pieces(require(archive))
    if not mans:
        raise FileNotFoundError(2, "no piece there (a results archive holds folders with a manifest.json each)",
                                str(archive))
    rows = ["| piece | commit | archived | run groups | runs | fit CPU h | since |", "|---|---|---|---|---|---|---|"]
    for man in mans:
        dropped = sum(len(d["groups"]) for d in man.get("dropped", []))
        stale = sum(1 for e in man.get("stale", []) for g in e["groups"] if g in man["groups"])
        since = ", ".join(x for x in (f"{dropped} dropped" if dropped else "", f"{stale} stale" if stale else "") if x)
        rows.append(f"| `{man['piece']}` | {man['commit'][:7]} | {man['archived'][:10]} | {len(man['groups'])} | "
                    f"{man['runs']:,} | {man['fit_cpu_seconds'] / 3600:.2f} | {since or '-'} |")
    groups, runs = sum(len(m["groups"]) for m in mans), sum(m["runs"] for m in mans)
    hours = sum(m["fit_cpu_seconds"] for m in mans) / 3600
    return "\n".join([*rows, f"| {len(mans)} pieces | | | {groups} | {runs:,} | {hours:.2f} | |"])


def write_pieces_block(archive: str | Path, path: str | Path) -> None:
    """Replace the text between :data:`PIECES_BEGIN` and :data:`PIECES_END` in ``path`` with
    :func:`pieces_markdown` (an error if the file has no such block)."""
    text = Path(path).read_text(encoding="utf-8")
    head, sep, rest = text.partition(PIECES_BEGIN)
    _, sep2, tail = rest.partition(PIECES_END)
    if not (sep and sep2):
        raise ValueError(f"{path} has no {PIECES_BEGIN} ... {PIECES_END} block")
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(f"{head}{PIECES_BEGIN}\n{pieces_markdown(archive)}\n{PIECES_END}{tail}")
