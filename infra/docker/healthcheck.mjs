// Docker healthchecks without dependencies (node only):
//   node infra/docker/healthcheck.mjs http <url>            2xx within 3 s
//   node infra/docker/healthcheck.mjs tcp <host:port> ...   every address accepts a connection
// The worker's own check (registered and ready in the worker registry) is
// services/worker/src/healthcheck.ts.
import { connect } from 'node:net';

const [kind, ...targets] = process.argv.slice(2);
const fail = (why) => {
  process.stderr.write(`unhealthy: ${why}\n`);
  process.exit(1);
};

if (kind === 'http') {
  const res = await fetch(targets[0], { signal: AbortSignal.timeout(3000) }).catch((e) => fail(e.message));
  if (!res.ok) fail(`HTTP ${res.status}`);
} else if (kind === 'tcp') {
  for (const t of targets) {
    const [host, port] = t.split(':');
    await new Promise((resolve) => {
      const s = connect({ host, port: Number(port), timeout: 3000 }, () => {
        s.end();
        resolve();
      });
      s.on('error', (e) => fail(`${t}: ${e.message}`));
      s.on('timeout', () => fail(`${t}: timeout`));
    });
  }
} else {
  fail(`unknown check '${kind}'`);
}
process.exit(0);
