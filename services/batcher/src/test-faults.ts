import type { Logger } from '@ge-mesh/telemetry';

/**
 * Fault injection for tests only: GEMESH_TEST_CRASH_POINT=<point>:<n> makes
 * this batcher SIGKILL itself at one point of its n-th batch, so tests hit
 * each crash window exactly instead of by chance. Read once at startup;
 * never set it in production.
 *
 *   recorded    the batch is in Redis (members claimed), not yet published
 *   published   the broker confirmed the batch, its state is still 'formed'
 *   marked      the batch is marked published, its requests are not yet acked
 */
export type CrashPoint = 'recorded' | 'published' | 'marked';

const spec = /^(recorded|published|marked):([1-9]\d*)$/.exec(process.env.GEMESH_TEST_CRASH_POINT ?? '');
let seen = 0;

export function crashPoint(point: CrashPoint, log: Logger): void {
  if (!spec || spec[1] !== point || ++seen < Number(spec[2])) return;
  log.warn({ point, batch: seen }, 'test fault injection: SIGKILL');
  process.kill(process.pid, 'SIGKILL');
}

/** Is a crash set at this point? (The hot path then waits for what the point is defined after.) */
crashPoint.armed = (point: CrashPoint): boolean => spec?.[1] === point;
