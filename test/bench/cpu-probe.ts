/**
 * Which service is busy under load: CPU seconds each mesh process used during
 * a closed-loop run of one model (a quick profile, not a benchmark).
 *   node --import tsx test/bench/cpu-probe.ts [model] [concurrency] [seconds]
 */
import { readFileSync } from 'node:fs';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { runClosedLoop } from '@ge-mesh/loadgen';
import { Pool } from 'undici';
import { startTestMesh } from '../support/mesh-harness.js';
import { jsonInferBody } from '../support/reference.js';

const [model = 'tiny', conc = '16', secs = '8'] = process.argv.slice(2);
const cpuSeconds = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) / 100;
};
const mesh = await startTestMesh({
  workers: 1,
  logLevel: 'warn',
  flags: { worker: ['--models', model], batcher: ['--models', model] },
});
try {
  const m = demoModel(model);
  const bodies = Array.from({ length: 16 }, (_, i) => jsonInferBody(sampleInputs(m, 1, i)));
  const pool = new Pool(mesh.url, { connections: 64 });
  const before = mesh.services.map((s) => cpuSeconds(s.child.pid ?? 0));
  const selfBefore = process.cpuUsage();
  const r = await runClosedLoop({
    concurrency: Number(conc),
    durationMs: Number(secs) * 1000,
    send: async (_l, seq) => {
      const res = await pool.request({
        path: `/v2/models/${model}/infer`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: bodies[seq % bodies.length],
      });
      await res.body.arrayBuffer();
      return res.statusCode === 200;
    },
  });
  const after = mesh.services.map((s) => cpuSeconds(s.child.pid ?? 0));
  const self = process.cpuUsage(selfBefore);
  console.log(
    `${model} c=${conc}: ${r.inferPerSec.toFixed(0)} infer/s p50 ${(r.p50Us / 1000).toFixed(2)} ms p99 ${(r.p99Us / 1000).toFixed(2)} ms errors ${r.errors}`,
  );
  for (const [i, s] of mesh.services.entries()) {
    console.log(`  ${s.name}: ${(((after[i] ?? 0) - (before[i] ?? 0)) / Number(secs)).toFixed(2)} cores`);
  }
  console.log(`  load generator: ${((self.user + self.system) / 1e6 / Number(secs)).toFixed(2)} cores`);
  await pool.close();
} finally {
  await mesh.teardown();
}
