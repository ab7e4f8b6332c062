import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwaitedReplies } from '@ge-mesh/protocol';

describe('replies awaited by correlation id', () => {
  it('a reply ends its own wait only, and a second reply for the same id is refused', async () => {
    const r = new AwaitedReplies<string | null>(() => null);
    const a = r.wait('a', 60_000);
    const b = r.wait('b', 60_000);
    assert.equal(r.size, 2);
    assert.equal(r.resolve('b', 'reply-b'), true);
    assert.equal(r.resolve('b', 'again'), false);
    assert.equal(r.resolve('nobody', 'x'), false);
    assert.equal(r.resolve('a', 'reply-a'), true);
    assert.deepEqual(await Promise.all([a, b]), ['reply-a', 'reply-b']);
    assert.equal(r.size, 0);
  });

  it('a wait past its deadline ends with the timeout value, or rejects with the timeout error', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const quiet = new AwaitedReplies<string | null>(() => null);
    const loud = new AwaitedReplies<string>((ms) => new RangeError(`no reply within ${ms} ms`));
    const q = quiet.wait('q', 500);
    const l = loud.wait('l', 700);
    t.mock.timers.tick(499);
    assert.deepEqual([quiet.size, loud.size], [1, 1]);
    t.mock.timers.tick(1);
    assert.equal(await q, null);
    assert.equal(quiet.size, 0);
    t.mock.timers.tick(200);
    await assert.rejects(l, { name: 'RangeError', message: 'no reply within 700 ms' });
    // The reply that comes after the deadline is a late one.
    assert.equal(quiet.resolve('q', 'late'), false);
  });

  it('reject ends one wait with its error, rejectAll every wait; a cancelled id takes no reply', async () => {
    const r = new AwaitedReplies<string>(() => 'timeout');
    const one = r.wait('1', 60_000);
    const two = r.wait('2', 60_000);
    const three = r.wait('3', 60_000);
    assert.equal(r.reject('1', new Error('refused')), true);
    await assert.rejects(one, { message: 'refused' });
    r.cancel('2');
    assert.equal(r.has('2'), false);
    assert.equal(r.resolve('2', 'x'), false);
    r.rejectAll(new Error('connection closed'));
    await assert.rejects(three, { message: 'connection closed' });
    assert.equal(r.size, 0);
    // The cancelled wait never settles: its caller has gone.
    const settled = await Promise.race([
      two.then(
        () => true,
        () => true,
      ),
      new Promise((res) => setImmediate(res, false)),
    ]);
    assert.equal(settled, false);
  });
});
