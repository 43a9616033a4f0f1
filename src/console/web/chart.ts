/**
 * Charts as inline SVG, drawn here (no chart library: a few hundred bytes of code cover what the console
 * shows). Colours come from CSS classes (`c-<name>`); sizes from the viewBox, so a chart scales to its box.
 */
import { h, s } from "./dom";

export interface Series {
  name: string;
  /** [time in ms, value] in time order. */
  points: [number, number][];
}

const W = 640;
const H = 220;
const PAD = { l: 44, r: 12, t: 12, b: 28 };

/** 0, a round step, …, ≥ max: at most ~5 ticks. */
function ticks(max: number): number[] {
  if (max <= 0) return [0, 1];
  const raw = max / 4;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * mag).find((st) => st >= raw) ?? raw;
  const out: number[] = [];
  for (let v = 0; v < max + step; v += step) out.push(Math.round(v * 1e6) / 1e6);
  return out;
}

const legend = (names: string[]) =>
  h(
    "div",
    { class: "legend" },
    names.map((n) => h("span", { class: `key c-${n}` }, n)),
  );

const frame = (title: string, svg: SVGSVGElement, names: string[]) => h("figure", { class: "chart" }, h("figcaption", null, title), svg, legend(names));

function axes(yMax: number, xLabels: [number, string][], xOf: (v: number) => number) {
  const yt = ticks(yMax);
  const top = yt[yt.length - 1];
  const yOf = (v: number) => H - PAD.b - (v / top) * (H - PAD.t - PAD.b);
  const g = s(
    "g",
    { class: "axes" },
    yt.map((v) => [
      s("line", { x1: PAD.l, x2: W - PAD.r, y1: yOf(v), y2: yOf(v), class: "grid" }),
      s("text", { x: PAD.l - 6, y: yOf(v) + 4, "text-anchor": "end" }, String(v)),
    ]),
    // The first and last labels hug the plot's edges so they are not cut off.
    xLabels.map(([x, label], i) =>
      s(
        "text",
        { x: xOf(x), y: H - 8, "text-anchor": xLabels.length > 2 && i === 0 ? "start" : xLabels.length > 2 && i === xLabels.length - 1 ? "end" : "middle" },
        label,
      ),
    ),
  );
  return { g, yOf };
}

/** Lines over time, one per series; `title` is also the SVG's accessible name. */
export function lineChart(title: string, series: Series[], opts: { empty?: string } = {}): HTMLElement {
  const all = series.flatMap((x) => x.points);
  if (all.length < 2)
    return frame(
      title,
      s(
        "svg",
        { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title },
        s("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, opts.empty ?? "Not enough data yet"),
      ),
      series.map((x) => x.name),
    );
  const t0 = Math.min(...all.map((p) => p[0]));
  const t1 = Math.max(...all.map((p) => p[0]), t0 + 1);
  const xOf = (t: number) => PAD.l + ((t - t0) / (t1 - t0)) * (W - PAD.l - PAD.r);
  const fmt = (t: number) => new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: t1 - t0 < 300_000 ? "2-digit" : undefined });
  const { g, yOf } = axes(
    Math.max(...all.map((p) => p[1])),
    [t0, (t0 + t1) / 2, t1].map((t) => [t, fmt(t)]),
    xOf,
  );
  const lines = series.map((x) =>
    s("polyline", { class: `line c-${x.name}`, fill: "none", points: x.points.map(([t, v]) => `${xOf(t).toFixed(1)},${yOf(v).toFixed(1)}`).join(" ") }),
  );
  return frame(
    title,
    s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title }, g, lines),
    series.map((x) => x.name),
  );
}

/** Stacked columns: one column per bucket (e.g. an hour), one layer per name. */
export function stackedColumns(title: string, buckets: { label: string; values: Record<string, number> }[], names: string[]): HTMLElement {
  const totals = buckets.map((b) => names.reduce((a, n) => a + (b.values[n] ?? 0), 0));
  const n = Math.max(buckets.length, 1);
  const slot = (W - PAD.l - PAD.r) / n;
  const xOf = (i: number) => PAD.l + slot * (i + 0.5);
  const every = Math.ceil(n / 8); // at most ~8 labels under the columns
  const { g, yOf } = axes(
    Math.max(0, ...totals),
    buckets.map((b, i) => [i, b.label] as [number, string]).filter(([i]) => i % every === 0),
    xOf,
  );
  const cols = buckets.map((b, i) => {
    let acc = 0;
    return names.map((name) => {
      const v = b.values[name] ?? 0;
      if (!v) return null;
      const y0 = yOf(acc);
      acc += v;
      return s(
        "rect",
        { class: `bar c-${name}`, x: xOf(i) - slot * 0.35, width: slot * 0.7, y: yOf(acc), height: Math.max(0, y0 - yOf(acc)) },
        s("title", null, `${b.label} ${name}: ${v}`),
      );
    });
  });
  return frame(title, s("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title }, g, cols), names);
}

/** A funnel: one horizontal bar per step, its length relative to the first (or `of`). */
export function funnel(title: string, steps: { name: string; value: number; label?: string }[], of?: number): HTMLElement {
  const max = Math.max(of ?? 0, ...steps.map((x) => x.value)) || 1;
  const rowH = 30;
  const height = steps.length * rowH + 8;
  const labelW = 110;
  const barW = W - labelW - 70;
  const rows = steps.map((x, i) =>
    s(
      "g",
      null,
      s("text", { x: labelW - 8, y: i * rowH + 22, "text-anchor": "end" }, x.name),
      s("rect", { class: `bar c-${x.name}`, x: labelW, y: i * rowH + 6, height: rowH - 10, width: Math.max(x.value ? 2 : 0, (x.value / max) * barW) }),
      s("text", { x: labelW + (x.value / max) * barW + 6, y: i * rowH + 22 }, x.label ?? `${x.value}${of ? ` (${Math.round((x.value / max) * 100)}%)` : ""}`),
    ),
  );
  return h("figure", { class: "chart" }, h("figcaption", null, title), s("svg", { viewBox: `0 0 ${W} ${height}`, role: "img", "aria-label": title }, rows));
}
