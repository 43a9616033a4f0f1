/**
 * Prometheus text exposition for /metrics: request counters and durations per route (the route pattern,
 * never the raw path, so label cardinality stays bounded), plus gauges that callers add at scrape time.
 */
export interface Gauge {
  name: string;
  help: string;
  samples: { labels?: Record<string, string>; value: number }[];
}

const escapeLabel = (v: string) => v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
const labelText = (labels: Record<string, string> = {}) => {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
};

/** Counters and histograms that features record into (`count`, `observe`); HELP text per name. */
const HELP: Record<string, string> = {
  switchboard_dispatch_total: "Provider sends by channel and outcome (sent; retry: a transient failure, tried again; failed).",
  switchboard_dispatch_duration_seconds: "Duration of one provider send call, by channel.",
  switchboard_webhook_deliveries_total: "Webhook delivery attempts by outcome (success: a 2xx answer; failure: anything else).",
};
/** Seconds; from a fast provider call on loopback to a slow one near its timeout. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function createMetrics() {
  const requests = new Map<string, { labels: Record<string, string>; count: number; seconds: number }>();
  const counters = new Map<string, { name: string; labels: Record<string, string>; value: number }>();
  const histograms = new Map<string, { name: string; labels: Record<string, string>; buckets: number[]; sum: number; count: number }>();
  // A map key, not exposition text (that is built at scrape time): no escaping on the dispatch path.
  const keyOf = (name: string, labels: Record<string, string>) => {
    let key = name;
    for (const k in labels) key += `\u0000${k}\u0001${labels[k]}`;
    return key;
  };
  return {
    count(name: keyof typeof HELP, labels: Record<string, string>, by = 1): void {
      const key = keyOf(name, labels);
      const c = counters.get(key);
      if (c) c.value += by;
      else counters.set(key, { name, labels, value: by });
    },
    observe(name: keyof typeof HELP, labels: Record<string, string>, seconds: number): void {
      const key = keyOf(name, labels);
      let h = histograms.get(key);
      if (!h) histograms.set(key, (h = { name, labels, buckets: BUCKETS.map(() => 0), sum: 0, count: 0 }));
      for (let i = 0; i < BUCKETS.length; i++) if (seconds <= BUCKETS[i]!) h.buckets[i]!++;
      h.sum += seconds;
      h.count++;
    },
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
      for (const name of new Set([...counters.values()].map((c) => c.name))) {
        lines.push(`# HELP ${name} ${HELP[name]}`, `# TYPE ${name} counter`);
        for (const c of counters.values()) if (c.name === name) lines.push(`${name}${labelText(c.labels)} ${c.value}`);
      }
      for (const name of new Set([...histograms.values()].map((h) => h.name))) {
        lines.push(`# HELP ${name} ${HELP[name]}`, `# TYPE ${name} histogram`);
        for (const h of histograms.values()) {
          if (h.name !== name) continue;
          BUCKETS.forEach((le, i) => lines.push(`${name}_bucket${labelText({ ...h.labels, le: String(le) })} ${h.buckets[i]}`));
          lines.push(
            `${name}_bucket${labelText({ ...h.labels, le: "+Inf" })} ${h.count}`,
            `${name}_sum${labelText(h.labels)} ${h.sum.toFixed(6)}`,
            `${name}_count${labelText(h.labels)} ${h.count}`,
          );
        }
      }
      for (const g of gauges) {
        lines.push(`# HELP ${g.name} ${g.help}`, `# TYPE ${g.name} gauge`);
        for (const s of g.samples) lines.push(`${g.name}${labelText(s.labels)} ${s.value}`);
      }
      return lines.join("\n") + "\n";
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;
