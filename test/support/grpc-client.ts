import { type ChannelCredentials, type Client, credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { loadServices } from '../../services/gateway/src/grpc/proto.js';

type Msg = Record<string, unknown>;

/** A grpc-js client of the gateway's two services, built from the project's .proto files. */
export class GrpcTestClient {
  readonly inference: Client & Record<string, (...args: unknown[]) => unknown>;
  readonly health: Client & Record<string, (...args: unknown[]) => unknown>;

  constructor(
    readonly address: string,
    private readonly apiKey?: string,
    creds: ChannelCredentials = credentials.createInsecure(),
    options: Record<string, unknown> = {},
  ) {
    const s = loadServices();
    const opts = { 'grpc.max_receive_message_length': 64 << 20, 'grpc.max_send_message_length': 64 << 20, ...options };
    this.inference = new s.inference(address, creds, opts) as never;
    this.health = new s.health(address, creds, opts) as never;
  }

  metadata(key = this.apiKey): Metadata {
    const md = new Metadata();
    if (key !== undefined) md.set('authorization', `Bearer ${key}`);
    return md;
  }

  /** A unary call; rejects with the ServiceError. */
  call<T = Msg>(
    method: string,
    req: Msg,
    opts: { key?: string | null; deadline?: Date; service?: 'inference' | 'health' } = {},
  ): Promise<T> {
    const client = opts.service === 'health' ? this.health : this.inference;
    const md = opts.key === null ? new Metadata() : this.metadata(opts.key ?? this.apiKey);
    return new Promise((resolve, reject) => {
      (client[method] as (...a: unknown[]) => void).call(
        client,
        req,
        md,
        opts.deadline ? { deadline: opts.deadline } : {},
        (err: ServiceError | null, res: T) => (err ? reject(err) : resolve(res)),
      );
    });
  }

  /** The error a call ends with: [code, details]. */
  async error(method: string, req: Msg, opts: Parameters<GrpcTestClient['call']>[2] = {}): Promise<[number, string]> {
    try {
      await this.call(method, req, opts);
    } catch (err) {
      const e = err as ServiceError;
      return [e.code, e.details];
    }
    throw new Error(`${method} succeeded`);
  }

  close(): void {
    this.inference.close();
    this.health.close();
  }
}

/** FP32 little-endian bytes of a Float32Array (a copy that owns its buffer). */
export function f32Bytes(a: Float32Array): Buffer {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength);
}

export function f32Of(b: Buffer): Float32Array {
  const copy = new Uint8Array(b.length);
  copy.set(b);
  return new Float32Array(copy.buffer);
}

/** The elements of a BYTES tensor (uint32 LE length + bytes each) as strings. */
export function bytesElements(b: Buffer): string[] {
  const out: string[] = [];
  for (let pos = 0; pos < b.length; ) {
    const n = b.readUInt32LE(pos);
    out.push(b.subarray(pos + 4, pos + 4 + n).toString('utf8'));
    pos += 4 + n;
  }
  return out;
}
