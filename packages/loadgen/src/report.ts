import type { LevelResult } from './sweep.js';

/**
 * perf_analyzer's CSV columns, minus the client send/receive split (this
 * generator does not time the socket separately): rows sorted by throughput,
 * times in µs.
 */
export function toCsv(rows: LevelResult[]): string {
  const head = [
    rows[0]?.mode === 'rate' ? 'Request Rate' : 'Concurrency',
    'Inferences/Second',
    'Avg latency',
    'Server Queue',
    'Server Compute Input',
    'Server Compute Infer',
    'Server Compute Output',
    'Server Overhead',
    'p50 latency',
    'p90 latency',
    'p95 latency',
    'p99 latency',
    'Errors',
  ];
  const r = (x: number | undefined) => String(Math.round(x ?? 0));
  const lines = [...rows]
    .sort((a, b) => a.inferPerSec - b.inferPerSec)
    .map((x) =>
      [
        x.level,
        x.inferPerSec.toFixed(2),
        r(x.avgUs),
        r(x.server?.queueUs),
        r(x.server?.computeInputUs),
        r(x.server?.computeInferUs),
        r(x.server?.computeOutputUs),
        r(x.server?.overheadUs),
        r(x.p50Us),
        r(x.p90Us),
        r(x.p95Us),
        r(x.p99Us),
        x.errors,
      ].join(','),
    );
  return `${[head.join(','), ...lines].join('\n')}\n`;
}

export function toMarkdownTable(rows: LevelResult[]): string {
  const ms = (us: number) => (us / 1000).toFixed(2);
  const out = [
    `| ${rows[0]?.mode === 'rate' ? 'rate' : 'concurrency'} | infer/s | avg ms | p50 ms | p90 ms | p99 ms | server queue ms | server infer ms | errors | stable |`,
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const x of rows) {
    out.push(
      `| ${x.level} | ${x.inferPerSec.toFixed(1)} | ${ms(x.avgUs)} | ${ms(x.p50Us)} | ${ms(x.p90Us)} | ${ms(x.p99Us)} | ` +
        `${x.server ? ms(x.server.queueUs) : '–'} | ${x.server ? ms(x.server.computeInferUs) : '–'} | ${x.errors} | ${x.stable ? 'yes' : 'no'} |`,
    );
  }
  return out.join('\n');
}
