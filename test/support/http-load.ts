import { demoModel, sampleInputs } from '@ge-mesh/demo-models';
import { Pool } from 'undici';
import { jsonInferBody } from './reference.js';

/** One HTTP request of an open-loop load and its one response (or the transport failure). */
export interface HttpSent {
  seed: number;
  sentAt: number;
  status?: number;
  body?: string;
  at?: number;
  failure?: string;
}

/**
 * Open-loop HTTP load on `tiny` through the gateway: each request fired on
 * schedule (input seeded by its index), its one response recorded; `at` is
 * called with the elapsed time as it goes, to inject faults on cue. The load
 * runs `ms` milliseconds, or, given a function, until it returns true (when a
 * fault's end is not known in advance).
 */
export async function driveHttp(
  url: string,
  rate: number,
  ms: number | (() => boolean),
  at: (elapsed: number) => void = () => undefined,
): Promise<HttpSent[]> {
  // Enough connections that no request waits in the client while others wait out a fault (rate × deadline).
  const pool = new Pool(url, { connections: 512 });
  const out: HttpSent[] = [];
  const inflight: Promise<void>[] = [];
  const start = Date.now();
  const done = typeof ms === 'number' ? () => Date.now() - start >= ms : ms;
  const fire = (seed: number) => {
    const s: HttpSent = { seed, sentAt: Date.now() };
    out.push(s);
    const body = jsonInferBody(sampleInputs(demoModel('tiny'), 1, seed));
    inflight.push(
      pool
        .request({
          path: '/v2/models/tiny/infer',
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        })
        .then(async (res) => {
          s.body = await res.body.text();
          s.status = res.statusCode;
          s.at = Date.now();
        })
        .catch((err: Error) => {
          s.failure = err.message;
        }),
    );
  };
  while (!done()) {
    const due = Math.floor(((Date.now() - start) / 1000) * rate);
    while (out.length < due) fire(1_000_000 + out.length + start);
    at(Date.now() - start);
    await new Promise((r) => setTimeout(r, 5));
  }
  await Promise.all(inflight);
  await pool.close();
  return out;
}
