/**
 * Fault injection for tests only, read once at startup; never set these in
 * production.
 *
 * - GEMESH_TEST_CRASH_ON_REQUEST=<id>: a lane given a batch that carries a
 *   request whose client `id` is <id> kills the whole worker process with
 *   SIGKILL before running it, as a native crash would. The batch is then
 *   redelivered to other workers until the broker's delivery limit
 *   dead-letters it: a poison batch.
 * - GEMESH_TEST_LOAD_DELAY_MS=<ms>: every model load waits this long before
 *   its lanes start, so tests can watch a model in state LOADING.
 * - GEMESH_TEST_LANE_DELAY_MS=<ms>: every batch is held this long before it
 *   runs, like Triton's `execute_delay_ms` test model, so queue limits and
 *   timeouts can be exercised against a deliberately slow worker.
 */
export const TEST_CRASH_ON_REQUEST = process.env.GEMESH_TEST_CRASH_ON_REQUEST ?? '';
export const TEST_LOAD_DELAY_MS = Math.max(0, Number(process.env.GEMESH_TEST_LOAD_DELAY_MS ?? 0) || 0);
export const TEST_LANE_DELAY_MS = Math.max(0, Number(process.env.GEMESH_TEST_LANE_DELAY_MS ?? 0) || 0);
