/** One sample of Prometheus' text format. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Parses Prometheus' text exposition format (what prom-client writes): samples only, comments skipped. */
export function parsePrometheusText(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    out.push({ name: m[1] as string, labels, value: Number(m[4]) });
  }
  return out;
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when none. */
export function sampleValue(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

/**
 * The metric names a scrape exposes: every family it declares (`# TYPE`,
 * even one with no series yet, such as an error counter before any error)
 * and every sample name (histogram `_bucket`, `_sum`, `_count`).
 */
export function familyNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const name = m[1] as string;
    names.add(name);
    if (m[2] === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
  }
  for (const s of parsePrometheusText(text)) {
    names.add(s.name);
    names.add(s.name.replace(/_(bucket|sum|count)$/, ''));
  }
  return names;
}

/** Metric names a PromQL expression reads (identifiers that are not functions, keywords or labels). */
export function metricNamesInQuery(expr: string): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '').replace(/\[[^\]]*\]/g, '');
  const withoutGroupings = withoutLabels.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '');
  const names = new Set<string>();
  for (const m of withoutGroupings.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const id = m[0];
    const next = withoutGroupings.slice((m.index ?? 0) + id.length).trimStart();
    if (next.startsWith('(')) continue; // a function or an aggregation
    if (/^(by|without|on|ignoring|bool|and|or|unless|offset|le)$/.test(id)) continue;
    names.add(id);
  }
  return [...names];
}
