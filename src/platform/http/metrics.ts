/**
 * Prometheus text exposition for /metrics: request counters and durations per route (the route pattern,
 * never the raw path, so label cardinality stays bounded), plus gauges that callers add at scrape time.
 */
export interface Gauge {
  name: string;
  help: string;
  samples: { labels?: Record<string, string>; value: number }[];
}

const escape = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const labelText = (labels: Record<string, string> = {}) => {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
};

export function createMetrics() {
  const requests = new Map<string, { labels: Record<string, string>; count: number; seconds: number }>();
  return {
    observeRequest(method: string, route: string, status: number, seconds: number): void {
      const key = `${method} ${route} ${status}`;
      let r = requests.get(key);
      if (!r) requests.set(key, (r = { labels: { method, route, status: String(status) }, count: 0, seconds: 0 }));
      r.count++;
      r.seconds += seconds;
    },
    render(gauges: Gauge[]): string {
      const lines: string[] = [
        "# HELP switchboard_http_requests_total HTTP requests by method, route pattern and status.",
        "# TYPE switchboard_http_requests_total counter",
        ...[...requests.values()].map((r) => `switchboard_http_requests_total${labelText(r.labels)} ${r.count}`),
        "# HELP switchboard_http_request_duration_seconds Time to answer, by method, route pattern and status.",
        "# TYPE switchboard_http_request_duration_seconds summary",
        ...[...requests.values()].flatMap((r) => [
          `switchboard_http_request_duration_seconds_sum${labelText(r.labels)} ${r.seconds.toFixed(6)}`,
          `switchboard_http_request_duration_seconds_count${labelText(r.labels)} ${r.count}`,
        ]),
      ];
      for (const g of gauges) {
        lines.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`);
        for (const s of g.samples) lines.push(`${g.name}${labelText(s.labels)} ${s.value}`);
      }
      return lines.join("\n") + "\n";
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
