import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CoalescedPasses } from '@ge-mesh/store';

/** Model control and the worker registry are applied one pass at a time, with calls made meanwhile coalesced. */
describe('coalesced passes', () => {
  it('runs one pass at a time; any number of calls during a pass make exactly one more, and every caller waits for it', async () => {
    let passes = 0;
    let inPass = 0;
    let most = 0;
    let release: () => void = () => undefined;
    const runner = new CoalescedPasses(
      async () => {
        passes++;
        inPass++;
        most = Math.max(most, inPass);
        if (passes === 1) await new Promise<void>((r) => (release = r));
        inPass--;
      },
      (err) => assert.fail(err),
    );
    const first = runner.run();
    const during = [runner.run(), runner.run(), runner.run()];
    assert.equal(passes, 1);
    release();
    await Promise.all([first, ...during]);
    assert.deepEqual({ passes, most }, { passes: 2, most: 1 });
    await runner.run();
    assert.equal(passes, 3);
    await runner.idle();
  });

  it('reports a failed pass and runs again on the next call; once stopped it owes no further pass', async () => {
    const errors: string[] = [];
    let passes = 0;
    let stopped = false;
    let release: () => void = () => undefined;
    const runner = new CoalescedPasses(
      async () => {
        passes++;
        if (passes === 1) throw new Error('redis away');
        if (passes === 2) await new Promise<void>((r) => (release = r));
      },
      (err) => errors.push(err.message),
      () => stopped,
    );
    await runner.run();
    assert.deepEqual(errors, ['redis away']);
    const second = runner.run();
    void runner.run(); // owed after the second pass...
    stopped = true; // ...but the service stops first
    release();
    await second;
    assert.equal(passes, 2);
  });
});
