import type { Logger } from '@ge-mesh/telemetry';

/**
 * Fault injection for tests only: GEMESH_TEST_CRASH_POINT=<point>:<n> makes
 * this batcher SIGKILL itself at one point of its n-th batch, so tests hit
 * each crash window exactly instead of by chance. Read once at startup;
 * never set it in production.
 *
 *   sent        a batch for an idle lane is written to the broker and create-batch to Redis,
 *               create-batch's answer not yet read
 *   recorded    the batch is in Redis (members claimed); published too if it was sent early
 *   published   the broker confirmed the batch (its state is still 'formed'), its requests are not yet acked
 */
export type CrashPoint = 'sent' | 'recorded' | 'published';

const spec = /^(sent|recorded|published):([1-9]\d*)$/.exec(process.env.GEMESH_TEST_CRASH_POINT ?? '');
let seen = 0;

/** Whether this batcher dies at `point` at all (a test arms it): lets a caller prepare the window only then. */
export function crashArmed(point: CrashPoint): boolean {
  return spec?.[1] === point;
}

export function crashPoint(point: CrashPoint, log: Logger): void {
  if (!spec || spec[1] !== point || ++seen < Number(spec[2])) return;
  log.warn({ point, batch: seen }, 'test fault injection: SIGKILL');
  process.kill(process.pid, 'SIGKILL');
}
