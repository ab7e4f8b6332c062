import { promisify } from 'node:util';
import { deflate, gunzip, gzip, inflate } from 'node:zlib';
import { MeshError } from '@ge-mesh/protocol';

/**
 * Content-Encoding and Accept-Encoding as Triton's HTTP front end handles
 * them: request bodies in gzip or deflate are inflated (the inflated size
 * bounded by the same limit as the body: a small bomb cannot grow past it),
 * other encodings are refused with 415 and `Accept-Encoding: gzip, deflate`
 * (RFC 7694; Triton answers 501, which tells the client nothing to fix);
 * inference responses are compressed with the encoding the client weighs
 * highest among identity, gzip and deflate. zlib does the work.
 */
const gunzipAsync = promisify(gunzip);
const inflateAsync = promisify(inflate);
const gzipAsync = promisify(gzip);
const deflateAsync = promisify(deflate);

export type Compression = 'gzip' | 'deflate';

/** An error that carries response headers. */
export class HttpError extends MeshError {
  constructor(
    code: ConstructorParameters<typeof MeshError>[0],
    message: string,
    readonly headers: Readonly<Record<string, string>>,
  ) {
    super(code, message);
  }
}

/** The request body, inflated when it is gzip or deflate. */
export async function decodeBody(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  if (contentEncoding === undefined || contentEncoding === '' || contentEncoding === 'identity') return body;
  if (contentEncoding !== 'gzip' && contentEncoding !== 'deflate') {
    throw new HttpError('UNSUPPORTED_ENCODING', 'Unsupported compression type', { 'accept-encoding': 'gzip, deflate' });
  }
  try {
    const opts = { maxOutputLength: maxBytes };
    return contentEncoding === 'gzip' ? await gunzipAsync(body, opts) : await inflateAsync(body, opts);
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new MeshError(
        'PAYLOAD_TOO_LARGE',
        `Decompressed data size exceeds the maximum allowed value of ${maxBytes} bytes.`,
      );
    }
    throw new MeshError('INVALID_ARGUMENT', `failed to decompress the request body as ${contentEncoding}`);
  }
}

/** Triton's choice from Accept-Encoding: the highest q among identity, gzip, deflate (first wins a tie). */
export function responseCompression(acceptEncoding: string | undefined): Compression | undefined {
  if (!acceptEncoding) return undefined;
  let best = 'identity';
  let weight = 0;
  for (const part of acceptEncoding.split(',')) {
    const m = /^\s*([^\s;]+)\s*(?:;\s*q=([^\s;]*))?\s*$/.exec(part);
    if (!m) continue;
    const type = m[1] as string;
    const q = m[2] === undefined ? 1 : Number(m[2]);
    if (!Number.isFinite(q)) continue;
    if ((type === 'identity' || type === 'gzip' || type === 'deflate') && q > weight) {
      best = type;
      weight = q;
    }
  }
  return best === 'identity' ? undefined : (best as Compression);
}

export function compress(body: Buffer, how: Compression): Promise<Buffer> {
  return how === 'gzip' ? gzipAsync(body) : deflateAsync(body);
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

/**
 * `Inference-Header-Content-Length` read as Triton reads it (std::stoi:
 * leading spaces, a sign and digits, the rest ignored). Undefined when the
 * header is absent; the range against the body is the parser's check.
 */
export function parseHeaderLength(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^\s*([+-]?\d+)/.exec(value);
  if (!m) throw new MeshError('INVALID_ARGUMENT', `Unable to parse Inference-Header-Content-Length, got: ${value}`);
  const n = Number(m[1]);
  if (n < INT32_MIN || n > INT32_MAX) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `Unable to parse Inference-Header-Content-Length, value is out of range [ ${INT32_MIN}, ${INT32_MAX} ], got: ${value}`,
    );
  }
  return n;
}
