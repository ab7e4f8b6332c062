import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import {
  BatchStore,
  isCluster,
  ModelOverrides,
  type NewBatch,
  type RedisConnection,
  ResponseCache,
  SCRIPT_NAMES,
  type ScriptName,
  scriptSource,
  type WorkerInfo,
  WorkerRegistry,
} from '@ge-mesh/store';
import type { Cluster, Command } from 'ioredis';
import { freePort, REDIS_URL, uniqueNamespace } from '../support/mesh-harness.js';

/**
 * Every store script on a Redis Cluster of the test's own (3 masters on
 * loopback ports, data in a temp folder), through BatchStore and
 * WorkerRegistry connected with a redis+cluster:// URL, with models whose
 * keys live on different masters. The same scenario runs on the shared
 * single Redis first: both give exactly the same answers. Every script call
 * issued to the cluster is recorded, and its keys must share one slot.
 */

const run = promisify(execFile);

/** Why the cluster cannot be started here (a skip reason), or undefined when it can. */
function serversMissing(): string | undefined {
  const dirs = (process.env.PATH ?? '').split(delimiter);
  for (const bin of ['redis-server', 'redis-cli']) {
    const found = dirs.some((d) => {
      try {
        accessSync(join(d, bin), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    if (!found) return `${bin} not installed`;
  }
  return undefined;
}

/** Three redis-server processes in cluster mode, and the folder holding their configs and logs. */
class LocalCluster {
  dir = '';
  readonly children: ChildProcess[] = [];
  ports: number[] = [];

  get url(): string {
    return `redis+cluster://${this.ports.map((p) => `127.0.0.1:${p}`).join(',')}`;
  }

  async cli(port: number, ...args: string[]): Promise<string> {
    const { stdout } = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(port), ...args], { timeout: 30_000 });
    return stdout.trim();
  }

  async start(): Promise<void> {
    this.dir = mkdtempSync(join(tmpdir(), 'gemesh-cluster-'));
    for (let i = 0; i < 3; i++) {
      // freePort() releases the port it found, so take distinct ones.
      let port = await freePort();
      while (this.ports.includes(port)) port = await freePort();
      this.ports.push(port);
    }
    for (const port of this.ports) {
      const log = openSync(join(this.dir, `redis-${port}.log`), 'a');
      const child = spawn(
        'redis-server',
        [
          '--port',
          String(port),
          '--bind',
          '127.0.0.1',
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          join(this.dir, `nodes-${port}.conf`),
          '--dir',
          this.dir,
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        { cwd: this.dir, stdio: ['ignore', log, log] },
      );
      this.children.push(child);
    }
    for (const port of this.ports) await this.until(port, async () => (await this.cli(port, 'PING')) === 'PONG');
    await run(
      'redis-cli',
      ['--cluster', 'create', ...this.ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'],
      { timeout: 60_000 },
    );
    for (const port of this.ports) {
      await this.until(port, async () => (await this.cli(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok'));
    }
  }

  private async until(port: number, ok: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + 30_000;
    while (!(await ok().catch(() => false))) {
      if (this.children.some((c) => c.exitCode !== null) || Date.now() > deadline) {
        const log = readFileSync(join(this.dir, `redis-${port}.log`), 'utf8')
          .split('\n')
          .slice(-20)
          .join('\n');
        throw new Error(`redis-server on port ${port} not ready:\n${log}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Kills every server and removes the folder; safe to call twice, and from an exit handler. */
  stop(): void {
    for (const c of this.children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A script call as the cluster client issued it. */
interface Issued {
  script: ScriptName | string;
  keys: string[];
}

/** Records every EVALSHA/EVAL the cluster client sends (auto-pipelined or not, it goes through sendCommand). */
function recordScripts(redis: RedisConnection): Issued[] {
  const names = new Map(SCRIPT_NAMES.map((n) => [createHash('sha1').update(scriptSource(n)).digest('hex'), n]));
  const issued: Issued[] = [];
  const cluster = redis as unknown as Cluster & { sendCommand(c: Command, ...rest: unknown[]): unknown };
  const send = cluster.sendCommand.bind(cluster);
  cluster.sendCommand = (command: Command, ...rest: unknown[]) => {
    if (command.name === 'evalsha' || command.name === 'eval') {
      const sha = String(command.args[0]);
      issued.push({ script: names.get(sha) ?? sha, keys: command.getKeys().map(String) });
    }
    return send(command, ...rest);
  };
  return issued;
}

const member = (id: string) => ({ id, rows: 1, replyTo: 'q', correlationId: id, deadline: Date.now() + 60_000 });
const batch = (batchId: string, model: string, ids: string[]): NewBatch => ({
  batchId,
  model,
  version: '1',
  tier: 4,
  rows: ids.length,
  members: ids.map(member),
});
const worker = (id: string, devices: number[]): WorkerInfo => ({
  id,
  node: 'n1',
  host: 'h',
  pid: 1,
  runtime: 'ort',
  kind: 'cpu',
  devices,
  state: 'ready',
  eligible: '*',
  models: [],
  startedAt: 0,
  beatAt: 0,
});

/**
 * Every script, through the store's public methods, with each answer checked
 * exactly; returns the answers in order so two runs can be compared.
 */
async function scenario(store: BatchStore, registry: WorkerRegistry, [a, b, c]: string[]): Promise<unknown[]> {
  assert.ok(a && b && c);
  const transcript: unknown[] = [];
  const expect = async <T>(what: string, p: Promise<T>, want: T): Promise<void> => {
    const got = await p;
    transcript.push([what, got]);
    assert.deepEqual(got, want, what);
  };

  // Notifications: the models' lanes channels and the registry channel, on a duplicate connection.
  const sub = store.redis.duplicate();
  const heard: string[] = [];
  // Channels without the namespace, so that runs in two namespaces compare equal.
  sub.on('message', (channel: string, msg: string) =>
    heard.push(`${channel.slice(store.namespace.length + 1)}:${msg}`),
  );
  await sub.subscribe(store.lanesChannel(c), registry.channel);

  // create-batch, set-batch-state; a claim held by a published batch is taken (claim rule).
  await expect('create a1', store.createBatch(batch('a1', a, ['r1', 'r2'])), { ok: true });
  await expect('publish a1', store.setState('a1', a, 'formed', 'published'), true);
  await expect('publish a1 again', store.setState('a1', a, 'formed', 'published'), false);
  await expect('create a2', store.createBatch(batch('a2', a, ['r3', 'r2'])), {
    ok: false,
    reason: 'claimed',
    claimedIds: ['r2'],
  });
  // A batch left 'formed' by a dead batcher is taken over; its worker runs only what it kept (start-batch).
  await expect('create b1', store.createBatch(batch('b1', b, ['s1', 's2']), { maxInFlight: 1 }), { ok: true });
  await expect('create b2 (take-over)', store.createBatch(batch('b2', b, ['s2']), { maxInFlight: 1 }), { ok: true });
  await expect('claim of s2', store.redis.get(store.claimKey(b, 's2')), 'b2');
  await expect('b in flight', store.inFlight(b), 1);
  await expect('start b1', store.startBatch('b1', b, ['s1', 's2']), { kind: 'run', members: [0] });
  // Lane slots, finish-batch (tier costs, notification) and fail-batch.
  await expect('create c1', store.createBatch(batch('c1', c, ['t1']), { maxInFlight: 1 }), { ok: true });
  await expect('create c2 (no lane)', store.createBatch(batch('c2', c, ['t2']), { maxInFlight: 1 }), {
    ok: false,
    reason: 'no-lane',
    inFlight: 1,
  });
  // A large request kept beside its message, read back by the worker, deleted by finish-batch.
  await store.storeRequestBody(c, 't1', Buffer.from('request t1'), 60_000);
  await expect(
    'stored t1',
    store.requestBodies(c, ['t1']).then((b) => b.map((x) => x?.toString() ?? null)),
    ['request t1'],
  );
  await expect('finish c1', store.finishBatch('c1', c, { tier: 4, ms: 10 }, ['t1']), true);
  await expect(
    'stored t1 after finish',
    store.requestBodies(c, ['t1']).then((b) => b.map((x) => x?.toString() ?? null)),
    [null],
  );
  await expect('tier costs of c', store.tierCosts(c), new Map([[4, 10]]));
  await expect('start c1 again', store.startBatch('c1', c, ['t1']), { kind: 'done' });
  await expect('create c2', store.createBatch(batch('c2', c, ['t2']), { maxInFlight: 1 }), { ok: true });
  await expect('start c2', store.startBatch('c2', c, ['t2']), { kind: 'run', members: [0] });
  await expect('fail c2', store.failBatch('c2', c, ['t2']), [0]);
  await expect('fail c2 again', store.failBatch('c2', c, ['t2']), null);
  await expect('start c2 after its failure', store.startBatch('c2', c, ['t2']), { kind: 'done' });
  await expect(
    'c2 state',
    store.manifest('c2', c).then((m) => m?.state),
    'failed',
  );
  await expect('c in flight', store.inFlight(c), 0);
  // expire-request: once; never for a request a published batch carries.
  await expect('expire x1', store.expireRequest('x1', a, 'timeout', { deadline: Date.now() + 60_000 }), true);
  await expect('expire x1 again', store.expireRequest('x1', a, 'timeout', { deadline: Date.now() + 60_000 }), false);
  await expect(
    'expire r1 (published)',
    store.expireRequest('r1', a, 'timeout', { deadline: Date.now() + 60_000 }),
    false,
  );
  // reclaim-request: free, retry (unconfirmed batch, its slot freed), drop (started).
  await expect('reclaim f1', store.reclaimRequest('f1', b), 'free');
  await expect('create b3', store.createBatch(batch('b3', b, ['f1'])), { ok: true });
  await expect('reclaim f1 (formed)', store.reclaimRequest('f1', b), 'retry');
  await expect('start b3', store.startBatch('b3', b, ['f1']), { kind: 'run', members: [0] });
  await expect('reclaim f1 (started)', store.reclaimRequest('f1', b), 'drop');
  // admit-request, leave-queue; create-batch and expire-request take members out of the queue.
  const q = store.queueKey(a, 1);
  await expect('admit p1', store.queues.admit(q, 'p1', Date.now() + 60_000, 2), { admitted: true, size: 1 });
  await expect('admit p2', store.queues.admit(q, 'p2', Date.now() + 60_000, 2), { admitted: true, size: 2 });
  await expect('admit p3 (full)', store.queues.admit(q, 'p3', Date.now() + 60_000, 2), { admitted: false, size: 2 });
  await expect('leave p2', store.queues.leave(q, ['p2', 'unknown']), 1);
  await expect('create a3 from the queue', store.createBatch(batch('a3', a, ['p1']), { queueKeys: [q] }), { ok: true });
  await expect('admit p4', store.queues.admit(q, 'p4', Date.now() + 60_000, 2), { admitted: true, size: 1 });
  await expect(
    'expire p4',
    store.expireRequest('p4', a, 'timeout', { deadline: Date.now() + 60_000, queueKey: q }),
    true,
  );
  await expect('queue size', store.queues.size(q), 0);
  // lead-model.
  await expect('lead x', store.leads.take(a, 'x', 5_000), true);
  await expect('lead y', store.leads.take(a, 'y', 5_000), false);
  await expect('give up x', store.leads.take(a, 'x', 0), true);
  // Worker registry: claim-devices, heartbeat-worker, set-model-control, release-worker.
  await expect('claim 2 devices', registry.claimDevices('w1', 'n1', 'cpu', [0, 1, 2], 2, 5_000), [0, 1]);
  await expect('claim 2 more', registry.claimDevices('w2', 'n1', 'cpu', [0, 1, 2], 2, 5_000), null);
  await expect('claim device 2', registry.claimDevices('w2', 'n1', 'cpu', [0, 1, 2], 1, 5_000), [2]);
  const beat = { ttlMs: 5_000, leaseTtlMs: 5_000, changed: true, wanted: [a] };
  await expect('beat w1', registry.heartbeat(worker('w1', [0, 1]), beat), { ok: true });
  await expect('beat w3 on w2 lease', registry.heartbeat(worker('w3', [1, 2]), beat), {
    ok: false,
    lostDevices: [1, 2],
  });
  await expect(
    'live workers',
    registry.liveWorkers().then((ws) => ws.map((w) => w.id)),
    ['w1'],
  );
  await expect('unload a', registry.setControl(a, 'unload'), 1);
  await expect('controls', registry.controls().then(Object.fromEntries), { [a]: { action: 'unload', generation: 1 } });
  await expect('release w1', registry.release(worker('w1', [0, 1])), 2);
  await expect('lease 0 free', registry.leaseHolder('n1', 'cpu', 0), null);
  await expect('alive mark', registry.markAlive(), true);
  await expect('alive mark again', registry.markAlive(), false);

  // The response cache: its keys share the namespace cache's slot.
  const cache = new ResponseCache(store.redis, store.namespace, { maxBytes: 20, ttlMs: 60_000 });
  await expect('cache put', cache.put('k1', Buffer.from([0, 1, 255, 2, 3, 4, 5, 6, 7, 8]), 1), {
    stored: true,
    evicted: 0,
  });
  await expect('cache put 2', cache.put('k2', Buffer.alloc(12, 9), 2), { stored: true, evicted: 1 });
  await expect('cache get evicted', cache.get('k1', 3), null);
  await expect(
    'cache get',
    cache.get('k2', 3).then((v) => v?.toString('hex')),
    '090909090909090909090909',
  );

  // A pushed model's override: stored, read back byte for byte, removed.
  const overrides = new ModelOverrides(store.redis, store.namespace);
  await overrides.put(a, {
    id: 'o1',
    config: 'backend: "onnxruntime"',
    files: new Map([['1/m.onnx', Buffer.from([0, 255, 7])]]),
  });
  await expect(
    'override get',
    overrides
      .get(a)
      .then((o) => o && [o.id, o.config, [...o.files].map(([k, v]) => `${k}=${Buffer.from(v).toString('hex')}`)]),
    ['o1', 'backend: "onnxruntime"', ['1/m.onnx=00ff07']],
  );
  await overrides.clear(a);
  await expect('override cleared', overrides.get(a), undefined);

  // Every model's manifests are found (on a Cluster: on every master).
  await expect(
    'manifests',
    store.manifests().then((ms) => ms.map((m) => `${m.model}/${m.batchId}:${m.state}`).sort()),
    [`${a}/a1:published`, `${a}/a3:formed`, `${b}/b1:running`, `${b}/b2:formed`, `${b}/b3:running`]
      .concat([`${c}/c1:done`, `${c}/c2:failed`])
      .sort(),
  );
  // finish-batch and fail-batch (each time) wake the model's batchers; heartbeats, control and release the gateways.
  for (let i = 0; i < 100 && heard.length < 6; i++) await new Promise((r) => setTimeout(r, 20));
  await expect(
    'notifications',
    Promise.resolve([...heard].sort()),
    [
      `registry:control:${a}`,
      'registry:worker:w1',
      'registry:worker:w1',
      // '<batchId> <batches still in flight>'
      `lanes:${c}:c1 0`,
      `lanes:${c}:c2 0`,
      `lanes:${c}:c2 0`,
    ].sort(),
  );
  await sub.quit();
  return transcript;
}

describe('store scripts on a 3-master Redis Cluster', { skip: serversMissing() }, () => {
  const cluster = new LocalCluster();
  const exitGuard = () => cluster.stop();
  const ns = uniqueNamespace('cluster');
  let store: BatchStore | undefined;
  let single: BatchStore | undefined;
  let models: string[] = [];
  let singleTranscript: unknown[] = [];

  before(async () => {
    // The servers go even if the test process ends without reaching after().
    process.once('exit', exitGuard);
    await cluster.start();
    store = BatchStore.connect(cluster.url, ns);
    // Models whose keys live on three different masters: each script call goes to its model's node.
    await store.redis.ping();
    const slotOwners = (store.redis as Cluster).slots;
    const owners = new Map<string, string>();
    for (let i = 0; owners.size < 3 && i < 1_000; i++) {
      const model = `model-${i}`;
      const slot = Number(await store.redis.cluster('KEYSLOT', store.modelTag(model)));
      const node = String(slotOwners[slot]?.[0]);
      if (![...owners.values()].includes(node)) owners.set(model, node);
    }
    models = [...owners.keys()];
    assert.equal(models.length, 3, 'models on three masters');
  });

  after(async () => {
    await store?.purgeNamespace().catch(() => 0);
    await store?.close();
    await single?.purgeNamespace().catch(() => 0);
    await single?.close();
    cluster.stop();
    process.removeListener('exit', exitGuard);
  });

  it('on the single Redis, every script gives the expected answers', async () => {
    single = BatchStore.connect(REDIS_URL, uniqueNamespace('cluster-ref'));
    singleTranscript = await scenario(single, new WorkerRegistry(single.redis, single.namespace), models);
  });

  it('on the Cluster, every script gives the same answers, each call within one slot', async () => {
    assert.ok(store);
    assert.ok(isCluster(store.redis), 'a redis+cluster:// URL gives a Cluster client');
    const issued = recordScripts(store.redis);
    const transcript = await scenario(store, new WorkerRegistry(store.redis, ns), models);
    assert.deepEqual(transcript, singleTranscript);

    // Every script ran on the cluster, and every call's keys are in one slot (as the cluster computes it).
    assert.deepEqual([...new Set(issued.map((i) => i.script))].sort(), [...SCRIPT_NAMES].sort());
    const slotOf = new Map<string, number>();
    for (const call of issued) {
      const slots = new Set<number>();
      for (const key of call.keys) {
        let slot = slotOf.get(key);
        if (slot === undefined) {
          slot = Number(await store.redis.cluster('KEYSLOT', key));
          slotOf.set(key, slot);
        }
        slots.add(slot);
      }
      assert.equal(slots.size, 1, `${call.script}: keys ${call.keys.join(' ')} in ${slots.size} slots`);
    }
    // The models' keys spread over the masters.
    const modelSlots = await Promise.all(models.map((m) => store?.redis.cluster('KEYSLOT', store.inFlightKey(m))));
    assert.equal(new Set(modelSlots).size, 3);
    // The health probe sees the cluster client as connected.
    assert.equal(store.health?.connected, true);
  });

  it('never issues a script over keys of two models; the Cluster would refuse one (CROSSSLOT)', async () => {
    assert.ok(store);
    const [a, b] = models as [string, string];
    const issued = recordScripts(store.redis);
    await assert.rejects(
      store.createBatch(batch('x1', a, ['y1']), { queueKeys: [store.queueKey(b, 1)] }),
      /script create-batch: keys of different hash slots/,
    );
    assert.deepEqual(issued, [], 'refused before it was sent');
    // Sent to a node itself: the cluster client would refuse it before sending.
    const node = (store.redis as Cluster).nodes('master')[0];
    assert.ok(node);
    await assert.rejects(node.eval('return 1', 2, store.inFlightKey(a), store.inFlightKey(b)), /CROSSSLOT/);
  });
});
