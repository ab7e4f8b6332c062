import assert from 'node:assert/strict';
import { valuesOf } from '@ge-mesh/client';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { type AmqpSent, driveAmqp } from './amqp-load.js';
import { driveHttp, type HttpSent } from './http-load.js';
import type { TestMesh } from './mesh-harness.js';
import { type Reference, toleranceRatio } from './reference.js';

/**
 * A dependency fault under steady load, and what every request got: the
 * shared core of the fault suites (dependency-faults: faults injected by a
 * TCP proxy; dependency-restarts: private RabbitMQ and Redis really
 * restarted). The load runs 3 s, the fault starts and lasts `ms`, ends, and
 * the load goes on 14 s past its end; then every answer is checked against
 * the same bar: answered by its deadline + 1 s, 200 with the right outputs or
 * a typed 503, 200s again from 10 s after, readiness back within 10 s.
 */

export interface ScenarioSetup {
  mesh: TestMesh;
  ref: Reference;
  /** HTTP requests per second. */
  rate: number;
  /** The gateway's --request-timeout-ms. */
  requestTimeoutMs: number;
  /** AMQP ingress load alongside the HTTP load: the broker's URL and requests per second. */
  amqp?: { url: string; rate: number };
}

export interface Fault {
  name: string;
  /** Starts the fault; the outage is timed from when it resolves. */
  begin(): unknown;
  /** Ends it; resolves once the dependency is back (a restart may take a while). */
  end(): unknown;
  /** How long the fault lasts, ms. */
  ms: number;
}

export interface Phases {
  /** When the fault started. */
  faultAt: number;
  /** When it ended (the dependency back). */
  healAt: number;
}

export interface HttpCounts {
  ok: number;
  typed: number;
  lost: number;
  wrong: number;
  okBefore: number;
  okAfter: number;
  after: number;
  codes: Record<string, number>;
}

export interface AmqpCounts extends HttpCounts {
  sent: number;
  /** Requests that got more than one reply. */
  duplicate: number;
  /** Never handed to the broker (it was down). */
  unsent: number;
  /** Lost with the producer's own connection (no reply can reach it). */
  cutOff: number;
  /** Replies that matched no request. */
  foreign: number;
  /** Times the producer had to connect again. */
  reconnects: number;
}

export interface ScenarioResult {
  name: string;
  sent: number;
  phases: Phases;
  /** How long begin() and end() took, ms (a restart's own duration). */
  beginMs: number;
  endMs: number;
  /** Time from the fault's end until the gateway reported ready again, ms (∞: not within 10 s). */
  readyMs: number;
  http: HttpCounts;
  amqp?: AmqpCounts;
}

const LOAD_BEFORE_MS = 3_000;
/** Load after the fault ends: 10 s to recover, then 4 s that must be all 200s. */
const LOAD_AFTER_MS = 14_000;
const AFTER_WINDOW_MS = 10_000;
const READY_WITHIN_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Time from `from` until the gateway reports ready again (polled every 100 ms). */
export async function readyAfter(url: string, from: number, withinMs: number): Promise<number> {
  while (Date.now() - from < withinMs) {
    const res = await fetch(`${url}/v2/health/ready`).catch(() => null);
    await res?.arrayBuffer().catch(() => undefined);
    if (res?.status === 200) return Date.now() - from;
    await sleep(100);
  }
  return Number.POSITIVE_INFINITY;
}

/** No service exited and the launcher restarted none. */
export function assertNoExits(mesh: TestMesh): void {
  for (const s of mesh.services) assert.equal(s.child.exitCode, null, `${s.name} exited`);
  assert.equal(mesh.restarts(), 0);
}

function bump(codes: Map<string, number>, key: string): void {
  codes.set(key, (codes.get(key) ?? 0) + 1);
}

/** The reference outputs of tiny for a seed (batch 1). */
async function expected(ref: Reference, seed: number): Promise<Float32Array | undefined> {
  return (await ref.run('tiny', sampleInputs(demoModel('tiny'), 1, seed))).y?.data;
}

/** Checks every HTTP answer and returns the counts per phase. */
export async function checkHttp(
  sent: HttpSent[],
  p: Phases,
  ref: Reference,
  requestTimeoutMs: number,
): Promise<HttpCounts> {
  const lostAfterMs = requestTimeoutMs + 1_000;
  const count = { ok: 0, typed: 0, lost: 0, wrong: 0, okBefore: 0, okAfter: 0, after: 0 };
  const codes = new Map<string, number>();
  for (const s of sent) {
    const late = s.at === undefined || s.at - s.sentAt > lostAfterMs;
    if (s.failure || late) {
      count.lost++;
      bump(
        codes,
        `lost: sent ${((s.sentAt - p.faultAt) / 1000).toFixed(1)} s after the fault, ${s.failure ?? `answered after ${s.at === undefined ? '∞' : s.at - s.sentAt} ms (${s.status})`}`,
      );
      continue;
    }
    const afterWindow = s.sentAt >= p.healAt + AFTER_WINDOW_MS;
    if (afterWindow) count.after++;
    if (s.status === 200) {
      const y = JSON.parse(s.body ?? '{}').outputs?.find((o: { name: string }) => o.name === 'y')?.data as number[];
      const want = await expected(ref, s.seed);
      if (!want || !y || toleranceRatio(y, want, 1e-4, 1e-3) > 1) {
        count.wrong++;
        bump(codes, '200 with wrong outputs');
        continue;
      }
      count.ok++;
      if (s.sentAt < p.faultAt) count.okBefore++;
      if (afterWindow) count.okAfter++;
    } else if (s.status === 503 && typeof JSON.parse(s.body ?? '{}').error === 'string') {
      count.typed++;
      bump(codes, JSON.parse(s.body ?? '{}').error as string);
    } else {
      count.wrong++;
      bump(codes, `${s.status}: ${s.body?.slice(0, 120)}`);
    }
  }
  return { ...count, codes: Object.fromEntries(codes) };
}

/**
 * Checks every AMQP request: exactly one reply each (by correlation id), by the deadline + 1 s,
 * the right outputs or a typed 503. Requests the producer could not hand to the broker, or whose
 * reply could no longer reach it (its own connection dropped), are counted apart: no mesh could
 * answer them.
 */
export async function checkAmqp(
  load: { sent: AmqpSent[]; foreign: number; reconnects: number },
  p: Phases,
  ref: Reference,
  requestTimeoutMs: number,
): Promise<AmqpCounts> {
  const lostAfterMs = requestTimeoutMs + 1_000;
  const count = { ok: 0, typed: 0, lost: 0, wrong: 0, okBefore: 0, okAfter: 0, after: 0 };
  let duplicate = 0;
  let unsent = 0;
  let cutOff = 0;
  const codes = new Map<string, number>();
  for (const s of load.sent) {
    if (s.unsent) {
      unsent++;
      continue;
    }
    const first = s.replies[0];
    if (!first && s.cutOff) {
      cutOff++;
      continue;
    }
    if (s.replies.length > 1) {
      duplicate++;
      bump(codes, `${s.replies.length} replies to one request`);
    }
    if (!first || first.at - s.sentAt > lostAfterMs) {
      count.lost++;
      bump(
        codes,
        `lost: sent ${((s.sentAt - p.faultAt) / 1000).toFixed(1)} s after the fault, ${first ? `answered after ${first.at - s.sentAt} ms` : 'no reply'}`,
      );
      continue;
    }
    const afterWindow = s.sentAt >= p.healAt + AFTER_WINDOW_MS;
    if (afterWindow) count.after++;
    const reply = first.reply;
    if (reply && 'outputs' in reply) {
      const y = reply.outputs.find((o) => o.name === 'y');
      const want = await expected(ref, s.seed);
      const got = y ? (valuesOf(y) as Float32Array) : undefined;
      if (!want || !got || reply.id !== s.id || toleranceRatio(got, want, 1e-4, 1e-3) > 1) {
        count.wrong++;
        bump(codes, 'result with wrong outputs');
        continue;
      }
      count.ok++;
      if (s.sentAt < p.faultAt) count.okBefore++;
      if (afterWindow) count.okAfter++;
    } else if (reply && 'error' in reply && reply.status === 503 && typeof reply.code === 'string') {
      count.typed++;
      bump(codes, `${reply.code}: ${reply.error}`);
    } else {
      count.wrong++;
      bump(codes, reply ? JSON.stringify(reply).slice(0, 120) : 'undecodable reply');
    }
  }
  return {
    ...count,
    codes: Object.fromEntries(codes),
    sent: load.sent.length,
    duplicate,
    unsent,
    cutOff,
    foreign: load.foreign,
    reconnects: load.reconnects,
  };
}

/**
 * Runs one fault under load: 3 s of load, the fault for `fault.ms`, then load until 14 s after the
 * fault ended. Prints one line with what was measured and returns it; assertRecovered() holds it to
 * the bar.
 */
export async function runFaultScenario(setup: ScenarioSetup, fault: Fault): Promise<ScenarioResult> {
  const start = Date.now();
  const phases: Phases = { faultAt: Number.POSITIVE_INFINITY, healAt: Number.POSITIVE_INFINITY };
  let beginMs = 0;
  let endMs = 0;
  let readyMs = Number.POSITIVE_INFINITY;
  let done = false;
  const timeline = (async () => {
    try {
      await sleep(LOAD_BEFORE_MS - (Date.now() - start));
      phases.faultAt = Date.now();
      await fault.begin();
      beginMs = Date.now() - phases.faultAt;
      await sleep(fault.ms);
      const endAt = Date.now();
      await fault.end();
      phases.healAt = Date.now();
      endMs = phases.healAt - endAt;
      readyMs = await readyAfter(setup.mesh.url, phases.healAt, READY_WITHIN_MS);
      await sleep(phases.healAt + LOAD_AFTER_MS - Date.now());
    } finally {
      done = true;
    }
  })();
  const until = () => done;
  const [httpSent, amqpLoad] = await Promise.all([
    driveHttp(setup.mesh.url, setup.rate, until),
    setup.amqp
      ? driveAmqp({
          url: setup.amqp.url,
          namespace: setup.mesh.namespace,
          rate: setup.amqp.rate,
          until,
          graceMs: setup.requestTimeoutMs + 1_000,
        })
      : undefined,
    timeline,
  ]);
  const http = await checkHttp(httpSent, phases, setup.ref, setup.requestTimeoutMs);
  const amqp = amqpLoad ? await checkAmqp(amqpLoad, phases, setup.ref, setup.requestTimeoutMs) : undefined;
  const result: ScenarioResult = {
    name: fault.name,
    sent: httpSent.length,
    phases,
    beginMs,
    endMs,
    readyMs,
    http,
    ...(amqp ? { amqp } : {}),
  };
  process.stderr.write(
    `${fault.name}: fault began in ${beginMs} ms, ended in ${endMs} ms; ready again ${readyMs} ms after it ended; ` +
      `HTTP ${httpSent.length} sent ${JSON.stringify(http)}` +
      (amqp ? `; AMQP ${JSON.stringify(amqp)}` : '') +
      '\n',
  );
  return result;
}

/** The bar every fault scenario is held to. */
export function assertRecovered(mesh: TestMesh, r: ScenarioResult): void {
  const t = r.http;
  assert.equal(t.lost, 0, 'every request answered by its deadline + 1 s');
  assert.equal(t.wrong, 0, 'every answer right or a typed 503');
  assert.ok(t.okBefore >= 100, `${t.okBefore} 200s before the fault`);
  assert.ok(t.okAfter >= 100, `${t.okAfter} 200s from 10 s after the fault`);
  assert.ok(t.okAfter >= 0.99 * t.after, `${t.okAfter} of ${t.after} 200s from 10 s after the fault`);
  assert.ok(r.readyMs < READY_WITHIN_MS, 'ready again within 10 s of the fault ending');
  const a = r.amqp;
  if (a) {
    assert.equal(a.duplicate, 0, 'no AMQP request answered twice');
    assert.equal(a.lost, 0, 'every AMQP request answered by its deadline + 1 s');
    assert.equal(a.wrong, 0, 'every AMQP reply right or a typed 503');
    assert.ok(a.okBefore > 0, `${a.okBefore} AMQP results before the fault`);
    assert.ok(a.okAfter > 0 && a.okAfter >= 0.99 * a.after, `${a.okAfter} of ${a.after} AMQP results from 10 s after`);
  }
  assertNoExits(mesh);
}
