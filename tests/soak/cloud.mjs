// The soak's shared fake cloud: tests/fakes/e2b.mjs, letting in any API key
// that starts with `soak-` (each soak process has its own, so every request
// says who sent it) and appending one JSON line per DELETE to a log:
//
//   {"at": <epoch ms, this process's clock>, "id": ..., "apiKey": ..., "alive": bool, "status": 204|404|500|...}
//
//   node tests/soak/cloud.mjs --log FILE [--fail-delete-every N] [--list-lag-ms MS]
//
// Prints one JSON line {"url": ...} and serves until stdin closes. Sandboxes
// are created through the fake's control route (POST /_fake/sandboxes, with
// the owner metadata `ownerLabels` gives), faults changed through
// POST /_fake/faults and the alive set read from GET /_fake/state. This
// process runs without a clock offset: its clock is the cloud's.
import fs from 'node:fs';

import { startFakeE2b } from '../fakes/e2b.mjs';

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at > 0 ? process.argv[at + 1] : fallback;
}

const logPath = option('--log');
if (!logPath) {
  process.stderr.write('usage: cloud.mjs --log FILE [--fail-delete-every N] [--list-lag-ms MS]\n');
  process.exit(2);
}
const log = fs.openSync(logPath, 'a');
const fake = await startFakeE2b({
  acceptKey: (apiKey) => typeof apiKey === 'string' && apiKey.startsWith('soak-'),
  // Written synchronously, before the answer goes out: the log is complete
  // whenever the orchestrator reads it after the clients have stopped.
  onDestroy: (event) => fs.writeSync(log, `${JSON.stringify(event)}\n`),
});
fake.setFaults({
  failDeleteEvery: Number(option('--fail-delete-every', '0')),
  failAliveOnly: true,
  deletedStayListedMs: Number(option('--list-lag-ms', '0')),
});
process.stdout.write(`${JSON.stringify({ url: fake.url })}\n`);
process.stdin.resume();
process.stdin.on('end', () => fake.close().then(() => process.exit(0)));
