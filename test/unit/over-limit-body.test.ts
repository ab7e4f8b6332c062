import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { lingerOverLimitBody } from '../../services/gateway/src/http/over-limit-body.js';
import { RawHttpConnection } from '../support/raw-http.js';

/**
 * The bounds on reading an over-limit body away after its 413: a server that answers at once and
 * lingers with small bounds, driven over a real socket. A bound that does not hold leaves the
 * connection open, and the test fails on its timeout.
 */
async function withLingeringServer(bytes: number, ms: number, body: (port: number) => Promise<void>): Promise<void> {
  const s = createServer((req, res) => {
    lingerOverLimitBody(req, bytes, ms);
    res.writeHead(413, { 'content-type': 'text/plain', 'content-length': '9' }).end('too large');
  });
  s.listen(0, '127.0.0.1');
  await once(s, 'listening');
  try {
    await body((s.address() as AddressInfo).port);
  } finally {
    s.close();
  }
}

async function tooLarge(port: number): Promise<RawHttpConnection> {
  const c = await RawHttpConnection.open(port);
  await c.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100000000\r\n\r\n');
  assert.equal((await c.answer()).status, 413);
  return c;
}

describe('reading an over-limit body away after its 413', { timeout: 20_000 }, () => {
  it('closes the connection once more than the byte bound arrived', () =>
    withLingeringServer(64 * 1024, 600_000, async (port) => {
      const c = await tooLarge(port);
      // 1 MiB in pieces, so the server reads past its bound while the client still writes.
      for (let i = 0; i < 64 && !c.error; i++) await c.write(Buffer.alloc(16 * 1024)).catch(() => undefined);
      await c.closed;
    }));

  it('closes the connection when the body stops coming before the time bound', () =>
    withLingeringServer(1 << 30, 200, async (port) => {
      const c = await tooLarge(port);
      await c.write(Buffer.alloc(1024));
      await c.closed;
    }));

  it('keeps the connection once the whole body was read', () =>
    withLingeringServer(1 << 30, 600_000, async (port) => {
      const c = await RawHttpConnection.open(port);
      await c.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5000\r\n\r\n');
      assert.equal((await c.answer()).status, 413);
      await c.write(Buffer.alloc(5000));
      await c.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
      assert.equal((await c.answer()).status, 413);
      assert.equal(c.error, undefined);
      c.destroy();
    }));
});
