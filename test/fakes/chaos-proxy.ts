/**
 * Fault injection in front of a provider fake: the adapter talks to the proxy, the proxy forwards to the
 * fake, or serves a fault instead. The fake never sees a request the proxy answered itself, so "the fake
 * accepted exactly one send per message" is read straight from the fake's own records.
 *
 * Faults (the same five for every provider; `5xx` and `429` in the provider's own error form):
 * - `5xx`     the provider's server error;
 * - `429`     the provider's rate limit, asking for a wait of `retryAfterS` seconds in its own way;
 * - `hang`    the connection is accepted and nothing ever comes back (until `up()` or `stop()`, which
 *             then close it without an answer: the provider never processed it);
 * - `reset`   the connection is reset before any answer byte;
 * - `garbage` an answer that is not the protocol (an HTML page with 200 for HTTP, junk for SMTP).
 *
 * `HttpChaosProxy` works per request; `SmtpChaosProxy` per TCP connection (SMTP has no request without its
 * connection), and switching it to a fault closes the connections the client pooled before, as an outage does.
 */
import type { Socket, TCPSocketListener } from "bun";

export const FAULTS = ["5xx", "429", "hang", "reset", "garbage"] as const;
export type Fault = (typeof FAULTS)[number];

/** How a provider says "server error" and "slow down" over HTTP. */
export interface HttpErrorForms {
  serverError(): Response;
  rateLimited(retryAfterS: number): Response;
}

const GARBAGE_HTML = "<html><head><title>502</title></head><body>upstream connect error or disconnect/reset before headers</body></html>";

interface FaultPlan {
  fault: Fault;
  /** Requests (or connections) left to fail; Infinity while down. */
  left: number;
}

export class HttpChaosProxy {
  /** Faults served, by kind. */
  readonly injected: Record<Fault, number> = { "5xx": 0, "429": 0, hang: 0, reset: 0, garbage: 0 };
  forwarded = 0;
  retryAfterS = 7;
  private plan: FaultPlan | null = null;
  private readonly hung = new Set<() => void>();
  private readonly server: ReturnType<typeof Bun.serve>;

  /** `target`: the fake's base URL (its path prefix, e.g. Graph's `/v23.0`, is kept on `url`). */
  constructor(
    private readonly target: string,
    private readonly forms: HttpErrorForms,
  ) {
    this.server = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: (req) => this.handle(req) });
  }

  /** Use as the adapter's `base_url`. */
  get url(): string {
    return `http://127.0.0.1:${this.server.port}${new URL(this.target).pathname.replace(/\/+$/, "")}`;
  }

  /** The next `times` requests get `fault`. */
  fail(fault: Fault, times = 1): void {
    this.plan = { fault, left: times };
  }

  /** Every request gets `fault` until `up()`. */
  down(fault: Fault): void {
    this.plan = { fault, left: Infinity };
  }

  /** Back to forwarding; hung requests are closed without an answer. */
  up(): void {
    this.plan = null;
    for (const release of [...this.hung]) release();
  }

  get pendingFaults(): number {
    return this.plan?.left ?? 0;
  }

  async stop(): Promise<void> {
    this.up();
    await this.server.stop(true);
  }

  private async handle(req: Request): Promise<Response> {
    const plan = this.plan;
    if (plan && plan.left > 0) {
      plan.left--;
      if (plan.left === 0) this.plan = null;
      this.injected[plan.fault]++;
      switch (plan.fault) {
        case "5xx":
          return this.forms.serverError();
        case "429":
          return this.forms.rateLimited(this.retryAfterS);
        case "garbage":
          return new Response(GARBAGE_HTML, { status: 200, headers: { "content-type": "application/json" } });
        case "reset":
          return resetResponse();
        case "hang":
          await new Promise<void>((resolve) => {
            const release = () => {
              this.hung.delete(release);
              resolve();
            };
            this.hung.add(release);
            req.signal.addEventListener("abort", release, { once: true });
          });
          return resetResponse();
      }
    }
    this.forwarded++;
    const url = new URL(req.url);
    const headers = new Headers(req.headers);
    headers.delete("host");
    headers.delete("content-length");
    const upstream = await fetch(`${new URL(this.target).origin}${url.pathname}${url.search}`, {
      method: req.method,
      headers,
      body: req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer(),
    });
    const out = new Headers(upstream.headers);
    out.delete("content-encoding");
    out.delete("content-length");
    return new Response(await upstream.arrayBuffer(), { status: upstream.status, headers: out });
  }
}

/** Erroring the body stream makes Bun reset the socket before any byte: the client sees ECONNRESET. */
function resetResponse(): Response {
  return new Response(new ReadableStream({ start: (c) => c.error() }));
}

type Side = { peer?: Socket<Side>; pending: Uint8Array[]; fault?: Fault };

/** The SMTP counterpart, per connection. `5xx` is a `421` greeting, `429` a `421 4.7.0` "too many" greeting. */
export class SmtpChaosProxy {
  readonly injected: Record<Fault, number> = { "5xx": 0, "429": 0, hang: 0, reset: 0, garbage: 0 };
  forwarded = 0;
  private plan: FaultPlan | null = null;
  private readonly open = new Set<Socket<Side>>();
  private readonly listener: TCPSocketListener<Side>;

  constructor(private readonly targetPort: number) {
    const proxy = this;
    this.listener = Bun.listen<Side>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open(client) {
          client.data = { pending: [] };
          proxy.open.add(client);
          proxy.accept(client);
        },
        data(client, bytes) {
          if (client.data.peer) client.data.peer.write(bytes);
          else if (!client.data.fault) client.data.pending.push(new Uint8Array(bytes));
        },
        close(client) {
          proxy.open.delete(client);
          client.data.peer?.end();
        },
        error(client) {
          proxy.open.delete(client);
          client.data.peer?.end();
        },
      },
    });
  }

  get port(): number {
    return this.listener.port;
  }

  /** The next `times` connections get `fault`; connections pooled before are closed (they would bypass it). */
  fail(fault: Fault, times = 1): void {
    this.plan = { fault, left: times };
    this.closeAll();
  }

  down(fault: Fault): void {
    this.plan = { fault, left: Infinity };
    this.closeAll();
  }

  up(): void {
    this.plan = null;
    for (const s of [...this.open]) if (s.data.fault === "hang") s.end();
  }

  get pendingFaults(): number {
    return this.plan?.left ?? 0;
  }

  stop(): void {
    this.closeAll();
    this.listener.stop(true);
  }

  private closeAll(): void {
    for (const s of [...this.open]) s.end();
  }

  private accept(client: Socket<Side>): void {
    const plan = this.plan;
    if (plan && plan.left > 0) {
      plan.left--;
      if (plan.left === 0) this.plan = null;
      this.injected[plan.fault]++;
      client.data.fault = plan.fault;
      switch (plan.fault) {
        case "5xx":
          client.write("421 4.3.2 Service not available, closing transmission channel\r\n");
          client.end();
          return;
        case "429":
          client.write("421 4.7.0 Too many connections from your host, try again later\r\n");
          client.end();
          return;
        case "garbage":
          client.write("HTTP/1.1 200 OK\r\ncontent-type: text/html\r\n\r\n" + GARBAGE_HTML + "\r\n");
          return;
        case "reset":
          client.terminate();
          return;
        case "hang":
          return;
      }
    }
    this.forwarded++;
    void Bun.connect<Side>({
      hostname: "127.0.0.1",
      port: this.targetPort,
      socket: {
        open(upstream) {
          upstream.data = { peer: client, pending: [] };
          client.data.peer = upstream;
          for (const chunk of client.data.pending.splice(0)) upstream.write(chunk);
        },
        data(upstream, bytes) {
          upstream.data.peer?.write(bytes);
        },
        close(upstream) {
          upstream.data.peer?.end();
        },
        error(upstream) {
          upstream.data.peer?.end();
        },
      },
    }).catch(() => client.end());
  }
}
