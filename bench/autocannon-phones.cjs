// autocannon with a send's recipient varied per request: `to.phone` walks `phones` numbers (+1415600000n), so a
// POST /messages load spreads over that many contacts instead of one. Args: a JSON of autocannon's options
// plus `phones`. Prints autocannon's JSON result, as its CLI's --json does.
const autocannon = require("autocannon");
const opts = JSON.parse(process.argv[2]);
const body = JSON.parse(opts.body);
let n = 0;
const instance = autocannon({
  ...opts,
  requests: [
    {
      setupRequest: (req) => {
        body.to = { phone: `+1415${String(6_000_000 + (n++ % opts.phones)).padStart(7, "0")}` };
        return { ...req, body: JSON.stringify(body) };
      },
    },
  ],
});
instance.on("done", (r) => process.stdout.write(JSON.stringify(r)));
