/**
 * Before/after in one run: the mesh of this checkout next to the mesh of
 * another checkout (a `git worktree` of an earlier revision, with its
 * dependencies installed), both on one model (`tiny` by default), windows interleaved at each load
 * so the machine's noise falls on both alike. Prints and writes latency,
 * throughput and CPU per request (every mesh process, RabbitMQ and Redis).
 *
 *   git worktree add /tmp/base <rev> && (cd /tmp/base && pnpm install --offline)
 *   node --import tsx test/bench/compare-revisions.ts --base /tmp/base [--model tiny] [--rounds 3] [--window 3000] [--warmup 10000]
 *
 * Each side gets `--warmup` ms of load first, unmeasured, across the loads (the benchmark's rule):
 * at c=1 a mesh keeps compiling hot code for tens of seconds, and without it the first rounds
 * compare JIT warm-up rather than code.
 *
 * `--base-node-args="--some-v8-flag"` starts the base side's services with extra node flags, and
 * `--base-env="GEMESH_X=1 GEMESH_Y=2"` with extra environment; with `--base .` either compares two
 * settings on this tree.
 *
 * `--model clip_sim` runs the benchmark's simulated NPU (one device, 8 streams, the simulator's timing mode).
 */
import { execFileSync } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { ROOT } from '@ge-mesh/launcher';
import { startTestMesh } from '../support/mesh-harness.js';
import { type Load, meshSide, type Side, type SideRow, sideBySide } from './side-by-side.js';
import { CLIP_SIM, writeSimRepository } from './sim-models.js';

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    model: { type: 'string', default: 'tiny' },
    rounds: { type: 'string', default: '3' },
    window: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '10000' },
    /** V8/node flags for the base side only (appended, so they override the launcher's): an A/B of flags on one tree. */
    'base-node-args': { type: 'string', default: '' },
    /** Environment for the base side only (`K=V` pairs, space-separated): an A/B of settings on one tree. */
    'base-env': { type: 'string', default: '' },
    out: { type: 'string', default: join(ROOT, 'test/bench/results') },
  },
});
if (!values.base) throw new Error('--base <checkout of the revision to compare with> is required');
const ROUNDS = Number(values.rounds);
const WINDOW_MS = Number(values.window);
const WARMUP_MS = Number(values.warmup);
const log = (s: string) => process.stderr.write(`${s}\n`);

type Harness = { startTestMesh: typeof startTestMesh };
// A file URL, so that `--base .` (a relative path) is not read as a package name.
const base = (await import(pathToFileURL(join(resolve(values.base), 'test/support/mesh-harness.ts')).href)) as Harness;

const model = values.model;
const simulated = model === CLIP_SIM.name;
const opts = simulated
  ? {
      modelRepository: await writeSimRepository(CLIP_SIM),
      models: [model],
      logLevel: 'warn',
      env: { GEMESH_SIM_DEVICES: '1' },
      flags: { worker: ['--runtime', 'ge'] },
    }
  : {
      models: [model],
      logLevel: 'warn',
      flags: { batcher: ['--models', model], worker: ['--models', model] },
    };
const baseNodeArgs = values['base-node-args'].split(' ').filter(Boolean);
const baseEnv = Object.fromEntries(
  values['base-env']
    .split(' ')
    .filter(Boolean)
    .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
);
const baseOpts = {
  ...opts,
  ...(baseNodeArgs.length ? { nodeArgs: baseNodeArgs } : {}),
  env: { ...('env' in opts ? opts.env : {}), ...baseEnv },
};
const meshes = { before: await base.startTestMesh(baseOpts), after: await startTestMesh(opts) };
const sides: Side[] = Object.entries(meshes).map(([label, mesh]) => meshSide(label, mesh, model));
// tiny measures the mesh's own cost; a real model (resnet18) is bound by compute and tensor bytes.
const LOADS: Array<{ name: string; load: Load }> =
  model === 'tiny'
    ? [
        { name: 'c=1', load: { kind: 'concurrency', concurrency: 1 } },
        { name: '300 req/s', load: { kind: 'rate', perSec: 300 } },
        { name: 'c=16', load: { kind: 'concurrency', concurrency: 16 } },
        { name: 'c=64', load: { kind: 'concurrency', concurrency: 64 } },
      ]
    : simulated
      ? [
          { name: 'c=64', load: { kind: 'concurrency', concurrency: 64 } },
          { name: 'c=256', load: { kind: 'concurrency', concurrency: 256 } },
        ]
      : [
          { name: 'c=1', load: { kind: 'concurrency', concurrency: 1 } },
          { name: 'c=4', load: { kind: 'concurrency', concurrency: 4 } },
          { name: 'c=16', load: { kind: 'concurrency', concurrency: 16 } },
        ];

let rows: SideRow[] = [];
try {
  rows = await sideBySide(sides, LOADS, { rounds: ROUNDS, windowMs: WINDOW_MS, warmupMs: WARMUP_MS, log });
} finally {
  for (const mesh of Object.values(meshes)) await mesh.teardown();
}

/** The commit a checkout is at (and whether it has changes on top), for the report's header. */
function revisionOf(dir: string): string {
  const git = (args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).trim();
  try {
    return `${git(['log', '-1', '--format=%h %s'])}${git(['status', '--porcelain', '--untracked-files=no']) ? ' (with local changes)' : ''}`;
  } catch {
    return 'unknown revision';
  }
}

const lines = [
  `# Before / after: ${model} through the whole mesh, one run, windows interleaved`,
  '',
  `before: ${revisionOf(resolve(values.base))}${baseNodeArgs.length || Object.keys(baseEnv).length ? ` with ${[...baseNodeArgs, ...Object.entries(baseEnv).map(([k, v]) => `${k}=${v}`)].join(' ')}` : ''}; after: ${revisionOf(ROOT)}.`,
  '',
  `${ROUNDS} rounds of ${WINDOW_MS} ms per load and side, after ${WARMUP_MS / 1000} s of warm-up each; CPU = every mesh process + RabbitMQ + Redis.`,
  '',
  '| load | side | infer/s | p50 ms | p99 ms | CPU ms / request | errors |',
  '|---|---|---|---|---|---|---|',
  ...rows.map(
    (r) =>
      `| ${r.load} | ${r.side} | ${r.inferPerSec.toFixed(0)} | ${r.p50Ms.toFixed(2)} | ${r.p99Ms.toFixed(2)} | ${r.cpuMsPerRequest.toFixed(3)} | ${r.errors} |`,
  ),
];
await mkdir(values.out, { recursive: true });
const stem = model === 'tiny' ? 'before-after' : `before-after-${model}`;
await writeFile(join(values.out, `${stem}.md`), `${lines.join('\n')}\n`);
await writeFile(join(values.out, `${stem}.json`), `${JSON.stringify(rows, null, 2)}\n`);
process.stdout.write(`${lines.join('\n')}\n`);
