/**
 * The start banner's "Try it" lines, for a model the running mesh really
 * serves (read from the gateway, so a repository without `tiny` still gets
 * a request that works): `tiny` when it is there, else the ready model with
 * the smallest input.
 */
interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}
interface ModelMetadata {
  name: string;
  inputs: TensorMetadata[];
}

/** Largest input (elements) an example writes out in full. */
const MAX_EXAMPLE_ELEMENTS = 64;

export async function tryItLines(url: string, headers: Record<string, string> = {}): Promise<string[]> {
  const index = (await (
    await fetch(`${url}/v2/repository/index`, { method: 'POST', headers, body: '{"ready":true}' })
  ).json()) as { name: string; state?: string }[];
  const names = [...new Set(index.filter((m) => m.state === undefined || m.state === 'READY').map((m) => m.name))];
  if (names.length === 0) return [`  curl -s ${url}/v2/repository/index -X POST    # no model is ready yet`];
  const models: ModelMetadata[] = [];
  for (const name of names) {
    const res = await fetch(`${url}/v2/models/${encodeURIComponent(name)}`, { headers });
    if (res.ok) models.push((await res.json()) as ModelMetadata);
  }
  const size = (m: ModelMetadata) => m.inputs.reduce((n, t) => n + elements(t.shape), 0);
  const pick = models.find((m) => m.name === 'tiny') ?? [...models].sort((a, b) => size(a) - size(b))[0];
  if (!pick) return [`  curl -s ${url}/v2/models/${names[0]}`];
  const lines = [`  curl -s ${url}/v2/models/${pick.name}`];
  if (size(pick) > MAX_EXAMPLE_ELEMENTS || !pick.inputs.every((t) => t.datatype !== 'BYTES')) return lines;
  const inputs = pick.inputs.map((t) => {
    const shape = t.shape.map((d) => (d < 0 ? 1 : d));
    const n = elements(shape);
    const data = Array.from({ length: n }, (_, i) => sample(t.datatype, i, n));
    return { name: t.name, shape, datatype: t.datatype, data };
  });
  lines.push(
    `  curl -s -X POST ${url}/v2/models/${pick.name}/infer -H 'Content-Type: application/json' \\`,
    `    -d '${JSON.stringify({ inputs })}'`,
  );
  return lines;
}

const elements = (shape: number[]) => shape.reduce((n, d) => n * Math.max(1, d), 1);

function sample(datatype: string, i: number, n: number): number | boolean {
  if (datatype === 'BOOL') return i % 2 === 0;
  if (datatype.startsWith('FP') || datatype === 'BF16') return Number((i / n).toFixed(4));
  return i % 2; // integers: 0/1 fit every integer type (ids, masks)
}
