/**
 * What tier padding buys: resnet18 through the whole mesh (HTTP binary
 * tensors → gateway → batcher → one CPU worker) at fixed offered loads
 * (open loop, Poisson arrivals, the same schedules for every variant), the
 * variants side by side in one run:
 *
 *   tiers + padding        tiers 1, 4, 8, 16 (the demo config); a batch between two tiers is
 *                          padded up to the next; the tier-aware policy (default)
 *   tiers + padding,       the same tiers and padding with Triton's rules only (--policy triton):
 *   Triton's rules         what the tier-aware choice adds
 *   no padding             every batch size 1..16 is a tier, i.e. one static graph per size, as
 *                          the GE backend requires (its docs tell users to list every size as a
 *                          gear); batches are never padded
 *
 * Figures per variant: achieved throughput, p50/p99 latency (from the
 * scheduled send, so a server that falls behind shows it), batches and
 * their mean rows, and the padding waste = padded rows / computed rows,
 * read from the batch manifests in Redis (tier and real rows of every batch
 * formed in the measurement window). Prints a table and writes
 * bench-results/padding.{json,md}. Other processes on the machine make the
 * figures noisy; compare the variants of one run.
 *
 *   node --import tsx test/bench/padding.ts [--rate 12,18] [--seconds 10] [--rounds 3] [--warmup 3]
 *
 * --rate takes one or more offered loads (req/s). At each, the variants take
 * turns for `rounds` windows each (all meshes stay up), so load from other
 * processes falls on every variant alike; a variant's figures pool its windows.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ensureDemoModels } from '@ge-mesh/demo-models';
import { ROOT } from '@ge-mesh/launcher';
import { type HttpTarget, httpTarget, LoadDriver } from '@ge-mesh/loadgen';
import { BatchStore } from '@ge-mesh/store';
import { DEMO_REPOSITORY, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';

const { values } = parseArgs({
  options: {
    rate: { type: 'string', default: '12,18' },
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '3' },
  },
});
const rates = values.rate.split(',').map(Number);
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const warmupS = Number(values.warmup);
const log = (s: string) => process.stderr.write(`${s}\n`);

const IO = `max_batch_size: 16
input [ { name: "input" data_type: TYPE_FP32 format: FORMAT_NCHW dims: [ 3, 224, 224 ] } ]
output [ { name: "logits" data_type: TYPE_FP32 dims: [ 1000 ] } ]
instance_group [ { count: 1 } ]`;
const every = Array.from({ length: 16 }, (_, i) => i + 1).join(', ');
const VARIANTS = [
  {
    name: 'tiers 1,4,8,16 + padding (tier-aware policy)',
    config: `${IO}\ndynamic_batching { preferred_batch_size: [ 1, 4, 8, 16 ] max_queue_delay_microseconds: 5000 }`,
    batcher: [] as string[],
  },
  {
    name: "tiers 1,4,8,16 + padding (Triton's rules only)",
    config: `${IO}\ndynamic_batching { preferred_batch_size: [ 1, 4, 8, 16 ] max_queue_delay_microseconds: 5000 }`,
    batcher: ['--policy', 'triton'],
  },
  {
    name: 'no padding: every size 1..16 a tier (16 graphs)',
    config: `${IO}\ndynamic_batching { preferred_batch_size: [ ${every} ] max_queue_delay_microseconds: 5000 }`,
    batcher: [] as string[],
  },
];

const results: Result[] = [];

interface Result {
  variant: string;
  offeredPerSec: number;
  inferPerSec: number;
  p50Ms: number;
  p99Ms: number;
  requests: number;
  errors: number;
  batches: number;
  meanRows: number;
  computedRows: number;
  paddedRows: number;
  paddingWaste: number;
}

/** What one variant gathered at one rate over its windows. */
interface Tally {
  latenciesUs: number[];
  seconds: number;
  errors: number;
  batches: number;
  rows: number;
  computed: number;
}

await ensureDemoModels(DEMO_REPOSITORY);
// Every variant's mesh is up at once (an idle one costs next to nothing), so the windows can be
// interleaved: whatever else runs on the machine then weighs on every variant alike.
const running: Array<{
  v: (typeof VARIANTS)[number];
  mesh: TestMesh;
  store: BatchStore;
  target: HttpTarget;
  dir: string;
}> = [];
try {
  for (const v of VARIANTS) {
    const dir = await mkdtemp(join(tmpdir(), 'gemesh-padding-'));
    await mkdir(join(dir, 'resnet18', '1'), { recursive: true });
    await copyFile(join(DEMO_REPOSITORY, 'resnet18', '1', 'model.onnx'), join(dir, 'resnet18', '1', 'model.onnx'));
    await writeFile(join(dir, 'resnet18', 'config.pbtxt'), `name: "resnet18"\nbackend: "onnxruntime"\n${v.config}\n`);
    log(`== ${v.name}: starting its mesh (compiling every tier)`);
    const mesh = await startTestMesh({
      modelRepository: dir,
      models: ['resnet18'],
      logLevel: 'warn',
      flags: { batcher: v.batcher },
    });
    const store = BatchStore.connect(REDIS_URL, mesh.namespace);
    const target = await httpTarget({
      url: mesh.url,
      model: 'resnet18',
      batch: 1,
      inputData: 'random',
      binary: true,
      variants: 8,
      connections: 512,
    });
    running.push({ v, mesh, store, target, dir });
  }
  for (const rate of rates) {
    const tallies = running.map(
      (): Tally => ({ latenciesUs: [], seconds: 0, errors: 0, batches: 0, rows: 0, computed: 0 }),
    );
    for (let round = 1; round <= rounds; round++) {
      for (const [i, r] of running.entries()) {
        const t = tallies[i] as Tally;
        log(`   ${rate} req/s, round ${round}/${rounds}: ${r.v.name}`);
        const driver = new LoadDriver(r.target.send, {
          kind: 'rate',
          perSec: rate,
          distribution: 'poisson',
          seed: round,
        });
        driver.start();
        await new Promise((res) => setTimeout(res, warmupS * 1000));
        const from = Date.now();
        const w = await driver.window(seconds * 1000, 50);
        const to = Date.now();
        await driver.stop();
        const batches = (await r.store.manifests()).filter((m) => m.createdAt >= from && m.createdAt < to);
        t.latenciesUs.push(...w.latenciesUs);
        t.seconds += w.seconds;
        t.errors += w.errors;
        t.batches += batches.length;
        t.rows += batches.reduce((n, b) => n + b.rows, 0);
        t.computed += batches.reduce((n, b) => n + b.tier, 0);
      }
    }
    for (const [i, r] of running.entries()) {
      const t = tallies[i] as Tally;
      const sorted = Float64Array.from(t.latenciesUs).sort();
      const at = (p: number) => (sorted[Math.round((p / 100) * (sorted.length - 1))] ?? Number.NaN) / 1000;
      results.push({
        variant: r.v.name,
        offeredPerSec: rate,
        inferPerSec: t.latenciesUs.length / t.seconds,
        p50Ms: at(50),
        p99Ms: at(99),
        requests: t.latenciesUs.length,
        errors: t.errors,
        batches: t.batches,
        meanRows: t.batches ? t.rows / t.batches : 0,
        computedRows: t.computed,
        paddedRows: t.computed - t.rows,
        paddingWaste: t.computed ? (t.computed - t.rows) / t.computed : 0,
      });
    }
  }
} finally {
  for (const r of running) {
    await r.target.close();
    await r.store.close();
    await r.mesh.teardown();
    await rm(r.dir, { recursive: true, force: true });
  }
}

const f = (x: number, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : '-');
const header =
  '| variant | offered req/s | infer/s | p50 ms | p99 ms | requests | errors | batches | mean rows | computed rows | padded rows | padding waste |\n|---|---|---|---|---|---|---|---|---|---|---|---|';
const table = [...results]
  .sort((a, b) => a.offeredPerSec - b.offeredPerSec)
  .map(
    (r) =>
      `| ${r.variant} | ${r.offeredPerSec} | ${f(r.inferPerSec)} | ${f(r.p50Ms)} | ${f(r.p99Ms)} | ${r.requests} | ${r.errors} | ${r.batches} | ${f(r.meanRows, 2)} | ${r.computedRows} | ${r.paddedRows} | ${f(100 * r.paddingWaste)} % |`,
  )
  .join('\n');
const md = `# Tier padding: resnet18 at a fixed offered load

Measured ${new Date().toISOString()} on this machine: one CPU worker (onnxruntime), batch-1 requests over HTTP with binary tensors, Poisson arrivals at ${rates.join(' and ')} req/s (the same schedules for every variant); at each rate the variants take turns, ${rounds} windows of ${seconds} s each (after ${warmupS} s of warmup per window), pooled per variant. Padding waste = padded rows / computed rows, from the batch manifests. Other processes share the CPU, so the figures are noisy: compare the variants of one run.

${header}
${table}
`;
process.stdout.write(`\n${md}`);
const out = join(ROOT, 'bench-results');
await mkdir(out, { recursive: true });
await writeFile(join(out, 'padding.json'), JSON.stringify(results, null, 2));
await writeFile(join(out, 'padding.md'), md);
