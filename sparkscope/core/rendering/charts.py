"""Terminal charts for progress series: one-line sparklines and small multi-line charts.

Our own ~80 lines rather than a charting library: the dashboard needs plain strings it can place
inside prompt-toolkit windows of any size, and the maintained terminal plotters (plotext,
asciichart) write their own escape codes and size themselves to the whole terminal.
"""

from __future__ import annotations

from collections.abc import Sequence

BLOCKS = " ▁▂▃▄▅▆▇█"
MARKERS = ("●", "○", "◆", "◇")  # one per series in a multi-line chart; where two meet, the first wins


def sparkline(values: Sequence[float], width: int, top: float | None = None) -> str:
    """The last `width` values as block characters scaled 0..top (default: their maximum)."""
    if width <= 0:
        return ""
    tail = [max(0.0, float(v)) for v in list(values)[-width:]]
    if not tail:
        return " " * width
    top = top if top is not None else max(tail)
    if top <= 0:
        return ("▁" * len(tail)).rjust(width)
    steps = len(BLOCKS) - 1
    chars = [BLOCKS[max(1, min(steps, round(v / top * steps)))] for v in tail]
    return "".join(chars).rjust(width)


def compact(value: float) -> str:
    """3-4 character numbers for axis labels: 950, 1.2k, 35M."""
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            scaled = value / limit
            return f"{scaled:.1f}{suffix}" if scaled < 10 else f"{scaled:.0f}{suffix}"
    return f"{value:.1f}" if 0 < abs(value) < 10 and value != int(value) else f"{value:.0f}"


def _stretch(values: list[float], width: int) -> list[float]:
    """Few points on a wide chart: give each point several columns, so the line spans the chart."""
    if not values:
        return values
    repeat = max(1, width // len(values))
    return [v for v in values for _ in range(repeat)]


def line_chart(series: dict[str, Sequence[float]], width: int, height: int = 8, unit: str = "",
               x_labels: tuple[str, str] | None = None) -> list[str]:
    """A multi-line chart of one or more series sharing a y axis from 0 to their maximum."""
    label_width = 6
    plot_width = max(4, width - label_width - 2)
    data = {name: _stretch([max(0.0, float(v)) for v in list(values)[-plot_width:]], plot_width)
            for name, values in series.items()}
    top = max((max(v) for v in data.values() if v), default=0.0) or 1.0
    grid = [[" "] * plot_width for _ in range(height)]
    for index, values in reversed(list(enumerate(data.values()))):
        marker = MARKERS[index % len(MARKERS)]
        offset = plot_width - len(values)
        for x, value in enumerate(values):
            y = min(height - 1, int(round(value / top * (height - 1))))
            grid[height - 1 - y][offset + x] = marker
    lines = []
    for row, cells in enumerate(grid):
        label = compact(top) if row == 0 else (compact(top / 2) if row == height // 2 else "")
        if row == height - 1:
            label = "0"
        lines.append(f"{label.rjust(label_width)} ┤{''.join(cells)}")
    axis = " " * label_width + " └" + "─" * plot_width
    lines.append(axis)
    if x_labels:
        left, right = x_labels
        gap = max(1, plot_width - len(left) - len(right))
        lines.append(" " * (label_width + 2) + left + " " * gap + right)
    legend = "   ".join(f"{MARKERS[i % len(MARKERS)]} {name}" for i, name in enumerate(series))
    lines.append(" " * (label_width + 2) + legend + (f"   ({unit})" if unit else ""))
    return lines


def progress_chart_lines(history: Sequence, width: int, height: int = 8) -> list[str]:
    """Charts of a query's progress history: rates, batch duration, and operation durations."""
    from ...client.monitoring.progress import OPERATION_KEYS

    if not history:
        return ["No progress yet: a query reports after its first batch."]
    x_labels = (f"batch {history[0].batch_id}", f"batch {history[-1].batch_id}")
    lines = [" Rows per second"]
    lines += line_chart({"input": [p.input_rows_per_second for p in history],
                         "processed": [p.processed_rows_per_second for p in history]}, width, height, "rows/s",
                        x_labels)
    lines.append(" Batch duration")
    lines += line_chart({"duration": [p.batch_duration_ms or 0 for p in history]}, width, height, "ms", x_labels)
    lines.append(" Operation durations (ms): last batch, then the trend")
    spark_width = max(6, min(60, width - 26))
    last = history[-1]
    for key in OPERATION_KEYS:
        series = [p.durations_ms.get(key, 0) for p in history]
        lines.append(f"  {key:<14} {last.durations_ms.get(key, 0):>7}  {sparkline(series, spark_width)}")
    if any(p.state for p in history):  # a stateful query: what its state holds, over time
        lines.append(" State: last batch, then the trend")
        lines.append(f"  {'rows':<14} {last.state_rows:>9,}  {sparkline([p.state_rows for p in history], spark_width)}")
        lines.append(f"  {'memory':<14} {compact(last.state_memory_bytes) + 'B':>9}  "
                     f"{sparkline([p.state_memory_bytes for p in history], spark_width)}")
    return lines


def watermark_chart_lines(history: Sequence, width: int, height: int = 6) -> list[str]:
    """How a query's watermark moved, batch by batch: event time after its first watermark (the epoch, which
    Spark reports before any event, is left out). No lines until it has moved."""
    from datetime import datetime

    points = [(p.batch_id, datetime.fromisoformat(p.watermark.replace("Z", "+00:00"))) for p in history
              if p.watermark and not p.watermark.startswith("1970-01-01T00:00:00")]
    if len({moment for _, moment in points}) < 2:
        return []
    first = points[0][1]
    span = (points[-1][1] - first).total_seconds()
    scale, unit = (3600, "hours") if span >= 3 * 3600 else (60, "minutes") if span >= 180 else (1, "seconds")
    after = [(moment - first).total_seconds() / scale for _, moment in points]
    lines = [" Watermark"]
    lines += line_chart({"watermark": after}, width, height, f"{unit} after {first:%Y-%m-%d %H:%M:%S}",
                        (f"batch {points[0][0]}", f"batch {points[-1][0]}"))
    return lines
