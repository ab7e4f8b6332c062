import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Backoff, DEFAULT_BACKOFF, describeRestart } from '@ge-mesh/launcher';

describe('launcher restart backoff', () => {
  it('doubles from 0.5 s up to 15 s while a service keeps dying early', () => {
    const b = new Backoff();
    const delays = Array.from({ length: 8 }, () => b.next(1_000));
    assert.deepEqual(
      delays.map((d) => d.delayMs),
      [500, 1_000, 2_000, 4_000, 8_000, 15_000, 15_000, 15_000],
    );
    assert.deepEqual(
      delays.map((d) => d.attempt),
      [1, 2, 3, 4, 5, 6, 7, 8],
    );
  });

  it('starts over after a run of at least 30 s', () => {
    const b = new Backoff(DEFAULT_BACKOFF);
    b.next(0);
    b.next(0);
    assert.deepEqual(b.next(29_999), { attempt: 3, delayMs: 2_000 });
    assert.deepEqual(b.next(30_000), { attempt: 1, delayMs: 500 });
    assert.deepEqual(b.next(10), { attempt: 2, delayMs: 1_000 });
  });

  it('never overflows the cap, and refuses a cap below the first delay', () => {
    const b = new Backoff({ initialMs: 1, maxMs: 7, resetAfterMs: 100 });
    for (let i = 0; i < 2_000; i++) assert.ok(b.next(0).delayMs <= 7);
    assert.throws(() => new Backoff({ initialMs: 10, maxMs: 5, resetAfterMs: 0 }), /invalid backoff/);
  });

  it('logs a restart on one line: service, how it ended, attempt and delay', () => {
    assert.equal(
      describeRestart({ service: 'batcher', code: null, signal: 'SIGKILL', upMs: 12_345, attempt: 2, delayMs: 1_000 }),
      'batcher exited (signal SIGKILL) after 12.3 s; restart 2 in 1.0 s',
    );
    assert.equal(
      describeRestart({ service: 'worker-1', code: 3, signal: null, upMs: 40, attempt: 1, delayMs: 500 }),
      'worker-1 exited (code 3) after 0.0 s; restart 1 in 0.5 s',
    );
  });
});
