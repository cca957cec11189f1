"""A ticket's pinned pipeline laid out as a drawing: boxes, arrows, the path it took.

Pure: a record in, coordinates and words out; `pipeline_svg.html` draws them (its
autoescape makes every stage id and outcome text). The stages stand in one row in
the pipeline's order, its ends (done, failed, a question) after them; an arrow to
the next box runs straight between them, one further ahead arcs above the row and
one going back (a return) arcs below, so rework reads as a loop at a glance.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise

from ballet.core.config import ResolvedStage
from ballet.core.record import TERMINAL, Record

ENDS = {"$done": "done", "$failed": "failed", "$question": "question"}
BOX_W, BOX_H, PHASE_H, GAP, END_R = 140, 58, 22, 80, 30
MARGIN, ARC_STEP, LABEL_H = 16, 26, 16
CHAR_W = 6.6  # an estimate of one character at the drawing's 11px font
LONGEST = 28  # characters of a label shown; the whole is in the box's tooltip


@dataclass(frozen=True)
class Phase:
    name: str
    state: str  # "now", "ran" or ""
    x: float
    w: float


@dataclass(frozen=True)
class Box:
    id: str
    label: str
    title: str  # the whole label and what the box is, for the tooltip
    kind: str  # agent, human, platform or end
    detail: str  # "agent · claude-code", "a person", "GitHub · merge"
    x: float
    y: float
    w: float
    h: float
    current: bool
    runs: int  # sessions or steps of this stage the ticket ran (sign-offs apart)
    gate: str  # "sign-off: security ✓" when a sign-off gate stands before it
    phases: tuple[Phase, ...] = ()

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


@dataclass(frozen=True)
class Arrow:
    label: str
    path: str  # SVG path data
    label_x: float
    label_y: float
    label_w: float
    back: bool  # a return: the arrow goes to an earlier stage
    taken: int  # times the ticket went this way


@dataclass(frozen=True)
class Drawing:
    width: float
    height: float
    boxes: tuple[Box, ...]
    arrows: tuple[Arrow, ...]
    title: str
    description: str  # the whole drawing in words, for a screen reader


def short(text: str) -> str:
    return text if len(text) <= LONGEST else text[: LONGEST - 1] + "…"


def text_width(text: str) -> float:
    return len(text) * CHAR_W


def drawing(rec: Record) -> Drawing:
    stages = rec.pipeline.stages
    order = [s.id for s in stages]
    targets = {t for s in stages for t in s.next.values()}
    order += [end for end in ENDS if end in targets or end == "$done"]
    column = {node: i for i, node in enumerate(order)}
    edges = _edges(stages, column)
    above = sorted({(a, b) for a, b in edges if column[b] > column[a] + 1}, key=_span(column))
    below = sorted({(a, b) for a, b in edges if column[b] <= column[a]}, key=_span(column))
    top = MARGIN + LABEL_H + ARC_STEP * len(above) + (LABEL_H if _gated(rec) else 0)
    boxes = _boxes(rec, order, top, edges)
    at = {b.id: b for b in boxes}
    taken = _taken(rec)
    arrows = []
    for (a, b), label in edges.items():
        if (a, b) in above:
            level = above.index((a, b)) + 1
        elif (a, b) in below:
            level = below.index((a, b)) + 1
        else:
            level = 0
        arrows.append(_arrow(at[a], at[b], short(label), level, taken[(a, b)]))
    row_bottom = max(b.y + b.h for b in boxes)
    height = row_bottom + ARC_STEP * len(below) + LABEL_H + MARGIN * 2
    width = max(b.x + b.w for b in boxes) + MARGIN
    return Drawing(
        width=width,
        height=height,
        boxes=tuple(boxes),
        arrows=tuple(arrows),
        title=f"Pipeline {rec.pipeline.name} v{rec.pipeline.version}",
        description=_words(rec, edges),
    )


def _span(column: dict[str, int]) -> Callable[[tuple[str, str]], tuple[int, int]]:
    return lambda edge: (abs(column[edge[1]] - column[edge[0]]), column[edge[0]])


def _edges(stages: tuple[ResolvedStage, ...], column: dict[str, int]) -> dict[tuple[str, str], str]:
    """Each (from, to) once, its outcomes joined; the implicit `done` that repeats a
    named arrow is left out, as the tracking comment's flowchart does."""
    edges: dict[tuple[str, str], list[str]] = {}
    for stage in stages:
        named = {t for outcome, t in stage.next.items() if outcome != "done"}
        for outcome, target in stage.next.items():
            if outcome == "done" and target in named:
                continue
            dest = target if target in column else "$question"
            edges.setdefault((stage.id, dest), []).append(outcome)
    return {edge: " / ".join(outcomes) for edge, outcomes in edges.items()}


def _gated(rec: Record) -> bool:
    return bool(rec.pipeline.signoffs)


def _gate(rec: Record, stage: ResolvedStage | None) -> str:
    if not rec.pipeline.signoffs:
        return ""
    gated = stage is None or (
        stage.kind == "human" or stage.action == "merge" or stage.wait_for in ("review", "merge")
    )
    if not gated:
        return ""
    given = {s.role for s in rec.signoffs_given} | set(rec.signoffs_waived)
    roles = [r + (" ✓" if r in given else "") for r in rec.pipeline.signoffs]
    return "needs sign-off: " + ", ".join(roles)


def _boxes(
    rec: Record, order: list[str], top: float, edges: dict[tuple[str, str], str]
) -> list[Box]:
    live = rec.status not in TERMINAL
    # A stage's phases are one run of it; its attempts and iterations each another.
    once = {(r.stage, r.iteration, r.attempt) for r in rec.history if r.role is None}
    runs = Counter(stage for stage, _, _ in once)
    boxes: list[Box] = []
    x = float(MARGIN)
    gated = False  # the gate is drawn once, before the first box it holds
    for node in order:
        if node in ENDS:
            name = ENDS[node]
            reached = (name == "done" and rec.status == "done") or (
                name == "failed" and rec.status == "failed"
            )
            gate = _gate(rec, None) if name == "done" and not gated else ""
            gated = gated or bool(gate)
            boxes.append(
                Box(node, name, f"the ticket ends: {name}", "end", "", x,
                    top + BOX_H / 2 - END_R, END_R * 2, END_R * 2, reached, 0, gate)
            )  # fmt: skip
            x += END_R * 2 + _gap(node, order, edges)
            continue
        stage = rec.pipeline.stage(node)
        phases = _phases(rec, stage, x)
        need = max(text_width(short(stage.name)) * 1.2, sum(p.w + 4 for p in phases) + 12)
        w = max(float(BOX_W), need + 16)
        if phases:
            phases = tuple(Phase(p.name, p.state, p.x + (w - need) / 2, p.w) for p in phases)
        gate = "" if gated else _gate(rec, stage)
        gated = gated or bool(gate)
        boxes.append(
            Box(
                id=node,
                label=short(stage.name),
                title=f"{stage.name} ({stage.id}): {_detail(rec, stage)}",
                kind=stage.kind,
                detail=_detail(rec, stage),
                x=x,
                y=top,
                w=w,
                h=BOX_H + (PHASE_H if phases else 0),
                current=live and rec.stage == node,
                runs=runs[node],
                gate=gate,
                phases=phases,
            )
        )
        x += w + _gap(node, order, edges)
    return boxes


def _gap(node: str, order: list[str], edges: dict[tuple[str, str], str]) -> float:
    """Room after a box for the label of the arrow to the next one."""
    at = order.index(node)
    label = edges.get((node, order[at + 1]), "") if at + 1 < len(order) else ""
    return max(float(GAP), text_width(short(label) + " ×9") + 24)


def _detail(rec: Record, stage: ResolvedStage) -> str:
    if stage.kind == "human":
        return "a person approves"
    if stage.kind == "platform":
        if stage.action == "merge":
            manual = rec.policy.merge == "manual"
            return "a person merges" if manual else "GitHub · merge"
        if stage.wait_for in ("review", "merge"):
            return f"a person · {stage.wait_for}"
        return "GitHub · checks"
    return f"agent · {stage.runtime}" if stage.runtime else "agent"


def _phases(rec: Record, stage: ResolvedStage, x: float) -> tuple[Phase, ...]:
    ran = {r.phase for r in rec.history if r.stage == stage.id and r.iteration == rec.iteration}
    now = rec.phase if rec.stage == stage.id and rec.status not in TERMINAL else None
    out = []
    left = x + 8
    for name in stage.phases:
        w = text_width(name) * 0.9 + 10
        state = "now" if name == now else ("ran" if name in ran else "")
        out.append(Phase(name, state, left, w))
        left += w + 4
    return tuple(out)


def _taken(rec: Record) -> Counter[tuple[str, str]]:
    """How often the ticket went from one stage to another: its history, sign-offs
    apart and a stage's phases and attempts as one, and its end if it reached one."""
    path: list[str] = []
    for run in rec.history:
        if run.role is None and (not path or path[-1] != run.stage):
            path.append(run.stage)
    if rec.status == "done" and path:
        path.append("$done")
    elif rec.status == "failed" and path:
        path.append("$failed")
    return Counter(pairwise(path))


def _arrow(a: Box, b: Box, label: str, level: int, taken: int) -> Arrow:
    shown = label + (f" ×{taken}" if taken > 1 else "")
    w = text_width(shown) + 8
    if b.x > a.x and level == 0:  # the next box: straight across the row
        y = a.y + BOX_H / 2
        x1, x2 = a.x + a.w, b.x
        return Arrow(shown, f"M{x1:.0f},{y:.0f} L{x2 - 2:.0f},{y:.0f}", (x1 + x2) / 2, y - 10,
                     w, back=False, taken=taken)  # fmt: skip
    rise = ARC_STEP * level + 14
    if b.x > a.x:  # further ahead: an arc above the row
        y1, y2 = a.y, b.y - (4 if b.kind == "end" else 0)
        peak = min(y1, y2) - rise
        x1, x2 = a.cx + 12, b.cx - 12
        d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{peak:.0f} {x2:.0f},{peak:.0f} {x2:.0f},{y2 - 2:.0f}"
        return Arrow(shown, d, (x1 + x2) / 2, min(y1, y2) - rise * 0.75, w, False, taken)
    # A return: an arc below the row, leaving a box's bottom right, reaching one's bottom left.
    y1, y2 = a.y + a.h, b.y + b.h
    low = max(y1, y2) + rise
    x1, x2 = a.cx + 14, b.cx - 14 - 14 * (level - 1)
    d = f"M{x1:.0f},{y1:.0f} C{x1:.0f},{low:.0f} {x2:.0f},{low:.0f} {x2:.0f},{y2 + 2:.0f}"
    return Arrow(shown, d, (x1 + x2) / 2, max(y1, y2) + rise * 0.75 + 4, w, True, taken)


def _words(rec: Record, edges: dict[tuple[str, str], str]) -> str:
    """The drawing said in sentences: each stage, where each outcome leads, where it is."""
    names = {s.id: s.name for s in rec.pipeline.stages} | ENDS
    parts = []
    for stage in rec.pipeline.stages:
        ways = [f"{label} to {names[b]}" for (a, b), label in edges.items() if a == stage.id]
        parts.append(f"{stage.name} ({_detail(rec, stage)}): on {'; on '.join(ways)}.")
    if rec.status in TERMINAL:
        parts.append(f"The ticket ended {rec.status}.")
    elif rec.stage is not None:
        parts.append(f"Now at {names.get(rec.stage, rec.stage)}, iteration {rec.iteration}.")
    return " ".join(parts)
