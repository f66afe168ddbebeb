"""Figure titles that wrap instead of being clipped, shared by the figure modules."""

from __future__ import annotations

import textwrap

TITLE_FONTSIZE = 9  # titles and panel titles (points)


def title(fig, title: str, ax=None) -> None:
    """The figure's title (``ax``'s when given, else the figure's suptitle), on several lines instead
    of clipped at the figure's edge: lines of at most as many characters as fit in 80 % of the figure's
    width (a character of DejaVu Sans is 0.6 em wide at most for letters and digits)."""
    width = int(0.8 * fig.get_figwidth() * 72 / (0.6 * TITLE_FONTSIZE))
    text = textwrap.fill(title, max(width, 20))
    if ax is None:
        fig.suptitle(text, fontsize=TITLE_FONTSIZE)
    else:
        ax.set_title(text, fontsize=TITLE_FONTSIZE)
