#!/usr/bin/env node
// (A copy of the workplace's shared/tools/latency-proxy.mjs, so the fault tests and benches need nothing outside
// the repository.)
// A TCP proxy that makes a loopback server look like one across a network: every chunk is held DELAY ms
// in each direction (so a round trip costs 2 × DELAY more), and on SIGUSR1 it turns into a black hole
// (connections stay open, nothing is forwarded, new connections are accepted and left silent — what a
// client sees when the server's host drops off the network); SIGUSR2 turns forwarding back on.
//
//   node latency-proxy.mjs --listen 127.0.0.1:6543 --to 127.0.0.1:5432 --delay-ms 0.5
//
// Used to measure PostgreSQL scale-out on one small machine: with the database a few hundred µs away,
// a design whose instances take turns on one lock cannot go faster with a second instance, and a design
// that waits without blocking can. Prints "ready" once listening. Stops on SIGTERM/SIGINT.
import net from "node:net";

const argv = process.argv.slice(2);
const args = Object.fromEntries(argv.flatMap((v, i) => (v.startsWith("--") ? [[v.slice(2), argv[i + 1]]] : [])));
const [lh, lp] = (args.listen ?? "127.0.0.1:6543").split(":");
const [th, tp] = (args.to ?? "127.0.0.1:5432").split(":");
const delay = Number(args["delay-ms"] ?? 0.5);
let blackhole = false;
const held = []; // chunks waiting while black-holed: [socket, chunk]

// Sub-millisecond delays: setTimeout rounds to 1 ms, so a due-time queue is drained by setImmediate — which
// spins: while anything is in flight the proxy takes most of a core, as a network would not. `--wait sleep`
// (this copy's addition) waits without spinning instead: a worker thread sleeps until the queue's first due
// time (Atomics.wait, which takes sub-millisecond timeouts) and wakes the main thread with a message.
const queue = [];
let pumping = false;
let later = (fn) => {
  queue.push([performance.now() + delay, fn]);
  if (!pumping) {
    pumping = true;
    setImmediate(pump);
  }
};
function pump() {
  const now = performance.now();
  while (queue.length && queue[0][0] <= now) queue.shift()[1]();
  if (queue.length) {
    const wait = queue[0][0] - now;
    if (wait > 1.5) setTimeout(pump, Math.floor(wait) - 1);
    else setImmediate(pump);
  } else pumping = false;
}
if (args.wait === "sleep") {
  const { Worker } = await import("node:worker_threads");
  const clock = () => performance.timeOrigin + performance.now(); // the same on both threads
  const generation = new Int32Array(new SharedArrayBuffer(4));
  const dueAt = new Float64Array(new SharedArrayBuffer(8)).fill(Infinity);
  const sleeper = new Worker(
    `const { workerData, parentPort } = require("node:worker_threads");
     const generation = new Int32Array(workerData.generation), dueAt = new Float64Array(workerData.dueAt);
     for (;;) {
       const g = Atomics.load(generation, 0), t = dueAt[0];
       if (t === Infinity) { Atomics.wait(generation, 0, g); continue; }
       const wait = t - (performance.timeOrigin + performance.now());
       if (wait > 0 && Atomics.wait(generation, 0, g, wait) !== "timed-out") continue;
       parentPort.postMessage(0);
       Atomics.wait(generation, 0, g); // until the main thread has drained and set the next due time
     }`,
    { eval: true, workerData: { generation: generation.buffer, dueAt: dueAt.buffer } },
  );
  sleeper.unref();
  const arm = (t) => {
    dueAt[0] = t;
    Atomics.add(generation, 0, 1);
    Atomics.notify(generation, 0);
  };
  sleeper.on("message", () => {
    const now = clock();
    while (queue.length && queue[0][0] <= now) queue.shift()[1]();
    arm(queue.length ? queue[0][0] : Infinity);
  });
  later = (fn) => {
    queue.push([clock() + delay, fn]);
    if (queue.length === 1) arm(queue[0][0]); // else the first one's time is set already (or being drained)
  };
}

function pipe(from, to) {
  from.on("data", (chunk) => {
    if (blackhole) {
      held.push([to, chunk]);
      return;
    }
    later(() => {
      if (!to.destroyed) to.write(chunk);
    });
  });
  from.on("end", () => later(() => to.end()));
  from.on("error", () => to.destroy());
  from.on("close", () => later(() => to.destroy()));
}

const server = net.createServer((client) => {
  client.setNoDelay(true);
  const upstream = net.connect(Number(tp), th);
  upstream.setNoDelay(true);
  pipe(client, upstream);
  pipe(upstream, client);
});
server.listen(Number(lp), lh, () => console.log("ready"));
process.on("SIGUSR1", () => {
  blackhole = true;
});
process.on("SIGUSR2", () => {
  blackhole = false;
  for (const [to, chunk] of held.splice(0))
    later(() => {
      if (!to.destroyed) to.write(chunk);
    });
});
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => process.exit(0));
