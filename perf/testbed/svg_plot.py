"""plot.svg of a scenario, drawn with the standard library: per collective, busbw over time of every
system (the capacity limit dashed, the events as labelled vertical lines), then PReCCL's per-VT share of
the bytes over time, with the VTs' state changes (masked, probing, live) marked in red. leg_files writes it."""
import math
from xml.sax.saxutils import escape

W, H_PANEL, LEFT, RIGHT, TOP, BOTTOM = 960, 250, 70, 190, 30, 40
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


class _Panel:
    def __init__(self, y0, title, t_max, y_max, y_label):
        t_step, y_step = _nice_step(t_max, 8), _nice_step(y_max)
        self.y0 = y0
        self.t_max, self.y_max = t_step * math.ceil(t_max / t_step), y_step * math.ceil(y_max / y_step)
        self.w, self.h = W - LEFT - RIGHT, H_PANEL - TOP - BOTTOM
        self.out = [f'<text x="{LEFT}" y="{y0 + 18}" font-size="14" font-weight="bold">{escape(title)}</text>',
                    f'<rect x="{LEFT}" y="{y0 + TOP}" width="{self.w}" height="{self.h}" fill="none" stroke="#000"/>',
                    f'<text x="14" y="{y0 + TOP + self.h / 2}" font-size="11" transform="rotate(-90 14 '
                    f'{y0 + TOP + self.h / 2})" text-anchor="middle">{escape(y_label)}</text>',
                    f'<text x="{LEFT + self.w / 2}" y="{y0 + H_PANEL - 6}" font-size="11" '
                    f'text-anchor="middle">seconds after the launch of the ranks</text>']
        for i in range(round(self.t_max / t_step) + 1):
            t = t_step * i
            self.out.append(f'<text x="{self.x(t):.1f}" y="{y0 + TOP + self.h + 14}" font-size="10" '
                            f'text-anchor="middle">{_num(t)}</text>')
        for i in range(round(self.y_max / y_step) + 1):
            v = y_step * i
            y = self.y(v)
            self.out.append(f'<text x="{LEFT - 4}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{_num(v)}</text>')
            self.out.append(f'<line x1="{LEFT}" x2="{LEFT + self.w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
        self.legend = 0

    def x(self, t):
        return LEFT + self.w * min(max(t, 0), self.t_max) / self.t_max

    def y(self, v):
        return self.y0 + TOP + self.h * (1 - min(max(v, 0), self.y_max) / self.y_max)

    def line(self, pts, color, name, dash=None, dots=True):
        if not pts:
            return
        d = " ".join(f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in pts)
        style = f' stroke-dasharray="{dash}"' if dash else ""
        self.out.append(f'<polyline points="{d}" fill="none" stroke="{color}" stroke-width="1.5"{style}/>')
        if dots:
            self.out += [f'<circle cx="{self.x(t):.1f}" cy="{self.y(v):.1f}" r="2.5" fill="{color}"/>' for t, v in pts]
        self._legend_entry(f'<line x1="{W - RIGHT + 10}" x2="{W - RIGHT + 30}" y1="{{y}}" y2="{{y}}" '
                           f'stroke="{color}" stroke-width="2"{style}/>', name, 0)

    def band(self, upper, lower, color, name):
        """A filled band between two lines with the same times (one VT of a stacked share plot)."""
        pts = upper + lower[::-1]
        d = " ".join(f"{self.x(t):.1f},{self.y(v):.1f}" for t, v in pts)
        self.out.append(f'<polygon points="{d}" fill="{color}" fill-opacity="0.55" stroke="{color}"/>')
        self._legend_entry(f'<rect x="{W - RIGHT + 10}" y="{{y}}" width="20" height="8" fill="{color}" '
                           f'fill-opacity="0.55"/>', name, -4)

    def note(self, name):
        """A legend line without a curve: a system that was skipped or produced no iteration."""
        self._legend_entry("", name, 0)

    def _legend_entry(self, mark, name, dy):
        ly = self.y0 + TOP + 12 + 16 * self.legend
        self.legend += 1
        if mark:
            self.out.append(mark.replace("{y}", str(ly + dy)))
        self.out.append(f'<text x="{W - RIGHT + 34}" y="{ly + 4}" font-size="11">{escape(name)}</text>')

    def events(self, marks, color="#888", first_row=0):
        """Labelled vertical lines: the scenario's events (grey), PReCCL's VT state changes (red, labels
        below the events')."""
        for i, (t, text) in enumerate(marks):
            x = self.x(t)
            self.out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{self.y0 + TOP}" y2="{self.y0 + TOP + self.h}" '
                            f'stroke="{color}" stroke-dasharray="3,3"/>')
            self.out.append(f'<text x="{x + 2:.1f}" y="{self.y0 + TOP + 10 + 11 * (first_row + i % 4)}" '
                            f'font-size="9" fill="{color}">{escape(text)}</text>')


def _num(v):
    return f"{v:.0f}" if v == int(v) else f"{v:.2f}".rstrip("0")


def _nice_step(span, ticks=5):
    """A tick step of 1, 2 or 5 x 10^k giving about `ticks` intervals."""
    raw = max(span, 1e-9) / ticks
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)


def _steps(steps, t_max):
    """(t, value) breakpoints -> a staircase polyline up to t_max."""
    pts = []
    for i, (t, v) in enumerate(steps):
        if v is None:
            continue
        if pts:
            pts.append((t, pts[-1][1]))
        pts.append((t, v))
    if pts:
        pts.append((t_max, pts[-1][1]))
    return pts


def render(scenario_name, legs):
    """The SVG text of the legs' plot."""
    panels, y0 = [], 0
    for coll in dict.fromkeys(l["collective"] for l in legs):
        mine = [l for l in legs if l["collective"] == coll]
        iters = {l["system"]: [(x["t"], x["busbw"]) for x in l.get("timeline", [])
                               if x["kind"] == "iter" and x["busbw"] is not None] for l in mine}
        ref = next((l for l in mine if l["system"] == "preccl-static" and l.get("capacity_steps")),
                   next((l for l in mine if l.get("capacity_steps")), None))
        t_max = max([t for pts in iters.values() for t, _ in pts] + [t for l in mine for t, _ in
                                                                      l.get("capacity_marks", [])] + [1.0])
        caps = ref["capacity_steps"] if ref else []
        y_max = max([v for pts in iters.values() for _, v in pts] + [v for _, v in caps if v] + [1.0]) * 1.05
        p = _Panel(y0, f"{scenario_name}: {coll}, busbw per iteration", t_max, y_max, "busbw (Mbit/s)")
        p.events(ref["capacity_marks"] if ref else [])
        p.line(_steps(caps, t_max), "#000", "capacity limit", dash="6,4", dots=False)
        for i, (system, pts) in enumerate(iters.items()):
            leg = next(l for l in mine if l["system"] == system)
            status = " (skipped)" if leg.get("note") else ("" if leg.get("ok") else " (failed)")
            if pts:
                p.line(pts, COLORS[i % len(COLORS)], system + status)
            else:
                p.note(f"{system}{status or ' (no iteration)'}")
        panels.append(p)
        y0 += H_PANEL
        for l in mine:
            if not l["system"].startswith("preccl-") or not l.get("vt_share"):
                continue
            q = _Panel(y0, f"{coll}: {l['system']} share of the bytes per VT (stacked)", t_max, 1.0, "share")
            q.events(l.get("capacity_marks", []))
            q.events(l.get("vt_marks", []), color="#c00", first_row=4)
            times = sorted({v["t"] for v in l["vt_share"]})
            share = {(v["t"], v["vt"]): v for v in l["vt_share"]}
            lower = [(t, 0.0) for t in times]
            for j, vt in enumerate(sorted({v["vt"] for v in l["vt_share"]})):
                upper = [(t, lo + (share[(t, vt)]["share"] if (t, vt) in share else 0.0))
                         for t, lo in lower]
                nic = next(v["nic"] for v in l["vt_share"] if v["vt"] == vt)
                q.band(upper, lower, COLORS[j % len(COLORS)], f"vt{vt} (nic {nic})")
                lower = upper
            panels.append(q)
            y0 += H_PANEL
    body = "\n".join(s for p in panels for s in p.out)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{max(y0, H_PANEL)}" '
            f'font-family="sans-serif">\n<rect width="100%" height="100%" fill="#fff"/>\n{body}\n</svg>\n')
