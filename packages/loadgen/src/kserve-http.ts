import { createPrng } from '@ge-mesh/onnx/prng';
import { DATATYPES } from '@ge-mesh/protocol';
import { Pool } from 'undici';
import type { Send } from './driver.js';

/**
 * A KServe v2 HTTP target: requests built once from the model's metadata
 * (random or zero data, JSON or the binary tensor extension) and sent round
 * robin, so the generator spends its time sending, not building.
 */
export interface TensorMeta {
  name: string;
  datatype: string;
  shape: number[];
}
export interface ModelMeta {
  name: string;
  versions?: string[];
  inputs: TensorMeta[];
  outputs: TensorMeta[];
}

export interface HttpTargetOptions {
  url: string;
  model: string;
  version?: string;
  batch: number;
  inputData: 'random' | 'zero';
  binary: boolean;
  /** Overrides for variable (-1) non-batch dims: name → dims without batch. */
  shapes?: Record<string, number[]>;
  connections?: number;
  /** Distinct request bodies to cycle through. */
  variants?: number;
  headers?: Record<string, string>;
}

export interface HttpTarget {
  send: Send;
  meta: ModelMeta;
  pool: Pool;
  close(): Promise<void>;
}

const SIZES: Record<string, number> = Object.fromEntries(
  Object.entries(DATATYPES)
    .filter(([, d]) => d.bytes > 0)
    .map(([name, d]) => [name, d.bytes]),
);

/** Little-endian bytes of `count` elements: floats in [0,1), integers in {0,1} (valid ids and masks alike). */
function tensorBytes(datatype: string, count: number, rand: (() => number) | null): Buffer {
  const size = SIZES[datatype];
  if (!size) throw new Error(`datatype ${datatype} is not supported by the load generator`);
  const buf = Buffer.alloc(count * size);
  if (!rand) return buf;
  for (let i = 0; i < count; i++) {
    const r = rand();
    switch (datatype) {
      case 'FP32':
        buf.writeFloatLE(r, i * 4);
        break;
      case 'FP64':
        buf.writeDoubleLE(r, i * 8);
        break;
      case 'FP16':
      case 'BF16':
        break; // zeros: valid in both formats
      default:
        buf[i * size] = r < 0.5 ? 0 : 1;
    }
  }
  return buf;
}

function jsonValues(datatype: string, bytes: Buffer): number[] | boolean[] {
  const n = bytes.length / (SIZES[datatype] ?? 1);
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    if (datatype === 'FP32') out.push(bytes.readFloatLE(i * 4));
    else if (datatype === 'FP64') out.push(bytes.readDoubleLE(i * 8));
    else out.push(bytes[i * (SIZES[datatype] ?? 1)] ?? 0);
  }
  return datatype === 'BOOL' ? out.map((v) => v !== 0) : out;
}

/** A request's input tensors as raw bytes, built from the model's metadata. */
export interface RawTensor {
  name: string;
  datatype: string;
  shape: number[];
  bytes: Buffer;
}

export function buildInputSets(
  meta: ModelMeta,
  o: Pick<HttpTargetOptions, 'batch' | 'inputData' | 'shapes' | 'variants'>,
): RawTensor[][] {
  return Array.from({ length: o.variants ?? 16 }, (_, v) => {
    const rand = o.inputData === 'random' ? createPrng(v + 1).next : null;
    return meta.inputs.map((t) => {
      const rowDims = o.shapes?.[t.name] ?? t.shape.slice(t.shape[0] === -1 ? 1 : 0);
      if (rowDims.some((d) => d < 0))
        throw new Error(`input ${t.name} has a variable dim: give --shape ${t.name}:d1,d2`);
      const shape = t.shape[0] === -1 ? [o.batch, ...rowDims] : rowDims;
      return {
        name: t.name,
        datatype: t.datatype,
        shape,
        bytes: tensorBytes(
          t.datatype,
          shape.reduce((a, b) => a * b, 1),
          rand,
        ),
      };
    });
  });
}

export function buildInferBodies(
  meta: ModelMeta,
  o: HttpTargetOptions,
): Array<{ body: Buffer; headerLength?: number }> {
  return buildInputSets(meta, o).map((set) => {
    const inputs = set.map((t) =>
      o.binary
        ? { name: t.name, shape: t.shape, datatype: t.datatype, parameters: { binary_data_size: t.bytes.length } }
        : { name: t.name, shape: t.shape, datatype: t.datatype, data: jsonValues(t.datatype, t.bytes) },
    );
    const header = Buffer.from(
      JSON.stringify({ inputs, ...(o.binary ? { parameters: { binary_data_output: true } } : {}) }),
    );
    return o.binary
      ? { body: Buffer.concat([header, ...set.map((t) => t.bytes)]), headerLength: header.length }
      : { body: header };
  });
}

/** The model's metadata from the gateway (the AMQP target reads it over HTTP too). */
/**
 * What every non-HTTP target (AMQP, gRPC) shares: the model and its inputs,
 * and the gateway HTTP URL its metadata is read from.
 */
export interface MetaTargetOptions {
  /** Gateway HTTP URL, for the model's metadata. */
  url: string;
  model: string;
  version?: string;
  batch: number;
  inputData: 'random' | 'zero';
  shapes?: Record<string, number[]>;
  apiKey?: string;
}

/** The model's metadata over a pool opened for that one request (targets that send elsewhere). */
export async function modelMetaOf(o: MetaTargetOptions): Promise<ModelMeta> {
  const pool = new Pool(o.url, { connections: 1 });
  try {
    return await fetchModelMeta(pool, o.model, o.version, o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {});
  } finally {
    await pool.close();
  }
}

export async function fetchModelMeta(
  pool: Pool,
  model: string,
  version?: string,
  headers: Record<string, string> = {},
): Promise<ModelMeta> {
  const res = await pool.request({
    path: `/v2/models/${encodeURIComponent(model)}${version ? `/versions/${version}` : ''}`,
    method: 'GET',
    headers,
  });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(`model metadata for '${model}': HTTP ${res.statusCode} ${text}`);
  return JSON.parse(text) as ModelMeta;
}

export async function httpTarget(o: HttpTargetOptions): Promise<HttpTarget> {
  const pool = new Pool(o.url, { connections: o.connections ?? 256 });
  const base = `/v2/models/${encodeURIComponent(o.model)}${o.version ? `/versions/${o.version}` : ''}`;
  const meta = await fetchModelMeta(pool, o.model, o.version, o.headers);
  const bodies = buildInferBodies(meta, o);
  const send: Send = async (seq) => {
    const b = bodies[seq % bodies.length];
    if (!b) return false;
    const res = await pool.request({
      path: `${base}/infer`,
      method: 'POST',
      headers: {
        ...(o.headers ?? {}),
        'content-type': b.headerLength !== undefined ? 'application/octet-stream' : 'application/json',
        ...(b.headerLength !== undefined ? { 'inference-header-content-length': String(b.headerLength) } : {}),
      },
      body: b.body,
    });
    await res.body.arrayBuffer();
    return res.statusCode === 200;
  };
  return { send, meta, pool, close: () => pool.close() };
}
