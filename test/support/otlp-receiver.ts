import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';

/** One span as an OTLP/HTTP exporter sent it. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  /** '' for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  readonly kind: number;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly attributes: Readonly<Record<string, string | number | boolean>>;
  readonly links: readonly { traceId: string; spanId: string }[];
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
}

/**
 * A local OTLP/HTTP trace receiver (POST /v1/traces, protobuf, as a
 * collector takes it): decodes every export into spans, so tests check
 * what the services really sent.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(): Promise<OtlpReceiver> {
    let receiver: OtlpReceiver | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method !== 'POST' || req.url !== '/v1/traces') {
          res.writeHead(404).end();
          return;
        }
        let body = Buffer.concat(chunks);
        if (req.headers['content-encoding'] === 'gzip') body = gunzipSync(body);
        receiver?.spans.push(...decodeExport(body));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new OtlpReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    return receiver;
  }

  /** Spans of one trace. */
  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  /** Waits until `done` holds for the spans received (exports are batched), or `timeoutMs` passes. */
  async waitFor(done: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs = 10_000): Promise<void> {
    const until = Date.now() + timeoutMs;
    while (!done(this.spans) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

// ---- protobuf wire format: just what ExportTraceServiceRequest uses ----

type Field = { wire: number; num: bigint; bytes: Buffer };

function fields(buf: Buffer): Map<number, Field[]> {
  const out = new Map<number, Field[]>();
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++] as number;
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    const wire = key & 7;
    let f: Field;
    if (wire === 0) f = { wire, num: varint(), bytes: Buffer.alloc(0) };
    else if (wire === 1) {
      f = { wire, num: buf.readBigUInt64LE(i), bytes: buf.subarray(i, i + 8) };
      i += 8;
    } else if (wire === 5) {
      f = { wire, num: BigInt(buf.readUInt32LE(i)), bytes: buf.subarray(i, i + 4) };
      i += 4;
    } else if (wire === 2) {
      const len = Number(varint());
      f = { wire, num: 0n, bytes: buf.subarray(i, i + len) };
      i += len;
    } else throw new Error(`unsupported wire type ${wire}`);
    const list = out.get(no) ?? [];
    list.push(f);
    out.set(no, list);
  }
  return out;
}

const all = (m: Map<number, Field[]>, no: number) => m.get(no) ?? [];
const first = (m: Map<number, Field[]>, no: number) => all(m, no)[0];
const text = (f: Field | undefined) => f?.bytes.toString('utf8') ?? '';
const hex = (f: Field | undefined) => f?.bytes.toString('hex') ?? '';

function anyValue(buf: Buffer): string | number | boolean {
  const v = fields(buf);
  if (v.has(1)) return text(first(v, 1));
  if (v.has(2)) return first(v, 2)?.num === 1n;
  if (v.has(3)) return Number(BigInt.asIntN(64, first(v, 3)?.num ?? 0n));
  if (v.has(4)) return first(v, 4)?.bytes.readDoubleLE(0) ?? 0;
  return '';
}

function attributes(list: Field[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list) {
    const m = fields(kv.bytes);
    out[text(first(m, 1))] = anyValue(first(m, 2)?.bytes ?? Buffer.alloc(0));
  }
  return out;
}

function decodeExport(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of all(fields(body), 1)) {
    const r = fields(rs.bytes);
    const resource = attributes(all(fields(first(r, 1)?.bytes ?? Buffer.alloc(0)), 1));
    const service = String(resource['service.name'] ?? '');
    for (const ss of all(r, 2)) {
      for (const sp of all(fields(ss.bytes), 2)) {
        const s = fields(sp.bytes);
        spans.push({
          service,
          traceId: hex(first(s, 1)),
          spanId: hex(first(s, 2)),
          parentSpanId: hex(first(s, 4)),
          name: text(first(s, 5)),
          kind: Number(first(s, 6)?.num ?? 0n),
          startNs: first(s, 7)?.num ?? 0n,
          endNs: first(s, 8)?.num ?? 0n,
          attributes: attributes(all(s, 9)),
          links: all(s, 13).map((l) => {
            const lf = fields(l.bytes);
            return { traceId: hex(first(lf, 1)), spanId: hex(first(lf, 2)) };
          }),
          statusCode: Number(first(fields(first(s, 15)?.bytes ?? Buffer.alloc(0)), 3)?.num ?? 0n),
        });
      }
    }
  }
  return spans;
}
