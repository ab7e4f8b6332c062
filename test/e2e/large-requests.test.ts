import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { Redis } from 'ioredis';
import { DURABILITY, REDIS_URL, startTestMesh, type TestMesh } from '../support/mesh-harness.js';
import { inferTiny, Reference } from '../support/reference.js';

/**
 * Requests from --large-request-bytes on travel beside their messages: the
 * gateway stores each in Redis, RabbitMQ and the batcher carry its envelope,
 * the worker reads it back and deletes it once answered. Here every request
 * qualifies (the threshold is 1 byte). The durable mode keeps requests whole
 * in their messages, so there nothing is stored.
 */
const REQUESTS = 40;

describe('large requests travel beside their messages', { timeout: 120_000 }, () => {
  let mesh: TestMesh;
  let monitor: Awaited<ReturnType<Redis['monitor']>>;
  let redis: Redis;
  let monitored: Redis;
  const ref = new Reference();
  /** Redis commands that touched a stored request of this mesh, by command name. */
  const touched = new Map<string, Set<string>>();

  before(async () => {
    mesh = await startTestMesh({ models: ['tiny'], flags: { gateway: ['--large-request-bytes', '1'] } });
    redis = new Redis(REDIS_URL);
    monitored = new Redis(REDIS_URL);
    monitor = await monitored.monitor();
    const prefix = `{${mesh.namespace}:tiny}:body:`;
    monitor.on('monitor', (_time: string, args: string[]) => {
      const keys = args.filter((a) => a.startsWith(prefix)).map((a) => a.slice(prefix.length));
      if (keys.length === 0) return;
      const name = String(args[0]).toLowerCase();
      const ids = touched.get(name) ?? new Set<string>();
      for (const k of keys) ids.add(k);
      touched.set(name, ids);
    });
  });
  after(async () => {
    monitor?.disconnect();
    monitored?.disconnect();
    await redis?.quit();
    await ref.close();
    await mesh?.teardown();
  });

  it('answers each request right, and leaves no stored request behind', async () => {
    const answers = await Promise.all(
      Array.from({ length: REQUESTS }, async (_, seed) => {
        const { matches } = await inferTiny(ref, mesh.url, 'tiny', sampleInputs(demoModel('tiny'), 1, seed));
        return matches;
      }),
    );
    assert.equal(answers.filter(Boolean).length, REQUESTS);
    const pattern = `{${mesh.namespace}:tiny}:body:*`;
    // finish-batch runs just after the replies leave: wait for the last ones.
    let left = (await redis.keys(pattern)).length;
    for (let i = 0; i < 50 && left > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = (await redis.keys(pattern)).length;
    }
    assert.equal(left, 0, 'stored requests left in Redis');
    const stored = DURABILITY === 'fast' ? REQUESTS : 0;
    // MONITOR's stream runs behind the commands themselves.
    for (let i = 0; i < 40 && (touched.get('mget')?.size ?? 0) < stored; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    // Each request read back by the worker (MGET) once, answered right (a missing one is answered
    // UNAVAILABLE), then deleted (none left). MONITOR's lines of the scripts carry the request
    // bytes and do not always parse, so those are not counted.
    assert.equal(touched.get('mget')?.size ?? 0, stored);
  });
});
