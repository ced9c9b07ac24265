"""How the console draws the dashboard's board (forge/runs/reads/dashboard.py reads it): the runs-per-day chart,
each day's bar stacked by how its runs stand, drawn to the busiest day, with its legend's words."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from forge.runs.reads.dashboard import Board, RunsPerDay, board_for

# Each day's bar, bottom to top: the class it is drawn with (lists.css) and the words of its legend.
SHARES = (("completed", "completed"), ("failed", "failed"), ("cancelled", "cancelled"), ("in_flight", "in flight"))
# The chart's grid: DAYS columns across CHART_W units, drawn as percentages of the card's width (the SVG has no
# viewBox, so its text stays at its size in px at any width); heights are px. TOP leaves room for each total.
CHART_W, CHART_H, BAR_W, TOP = 700, 120, 30, 14
BAR_PCT = round(100 * BAR_W / CHART_W, 3)


def _pct(units: float) -> float:
    return round(100 * units / CHART_W, 3)


@dataclass(frozen=True)
class Piece:
    share: str  # completed, failed, cancelled or in_flight
    count: int
    y: float
    height: float


@dataclass(frozen=True)
class Day:
    day: date
    total: int
    pieces: list[Piece]
    x: float

    @property
    def x_pct(self) -> float:
        return _pct(self.x)

    @property
    def center_pct(self) -> float:
        return _pct(self.x + BAR_W / 2)

    @property
    def bar_pct(self) -> float:
        return BAR_PCT

    @property
    def top(self) -> float:
        """Where the day's total is written: just above its bar."""
        return min([p.y for p in self.pieces] + [CHART_H]) - 2

    @property
    def label(self) -> str:
        return ", ".join(f"{p.count} {dict(SHARES)[p.share]}" for p in self.pieces) or "no run"


@dataclass(frozen=True)
class Chart:
    days: list[Day]
    ended: int  # runs of these days that ended
    completed: int
    success_pct: int | None


def chart(per_day: RunsPerDay) -> Chart:
    """The days' bars, each share's piece stacked in SHARES' order, drawn to the busiest day's scale."""
    columns = len(per_day.days) or 1
    busiest = max([d.total for d in per_day.days] + [1])
    scale = (CHART_H - TOP) / busiest
    days = []
    for n, counted in enumerate(per_day.days):
        pieces, bottom = [], CHART_H
        for share, _ in SHARES:
            if count := counted.counts.get(share, 0):
                height = count * scale
                bottom -= height
                pieces.append(Piece(share, count, round(bottom, 2), round(height, 2)))
        days.append(Day(counted.day, counted.total, pieces,
                        n * CHART_W / columns + (CHART_W / columns - BAR_W) / 2))
    return Chart(days, per_day.ended, per_day.completed, per_day.success_pct)


def page_for(user) -> dict:
    """The dashboard template's context: the board as read for `user`, and its chart as drawn."""
    board: Board = board_for(user)
    return {"board": board, "chart": chart(board.per_day)}
