import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { describe, it } from 'node:test';
import { lingerOverLimitBody } from '../../services/gateway/src/http/over-limit-body.js';
import { RawHttpConnection } from '../support/raw-http.js';

/**
 * The bounds on reading an over-limit body away after its 413: a server that answers at once and
 * lingers with small bounds, driven over a real socket.
 */
async function server(bytes: number, ms: number): Promise<{ s: Server; port: number }> {
  const s = createServer((req, res) => {
    lingerOverLimitBody(req, bytes, ms);
    res.writeHead(413, { 'content-type': 'text/plain', 'content-length': '9' }).end('too large');
  });
  s.listen(0, '127.0.0.1');
  await new Promise((r) => s.once('listening', r));
  return { s, port: (s.address() as { port: number }).port };
}

async function tooLarge(port: number): Promise<RawHttpConnection> {
  const c = await RawHttpConnection.open(port);
  await c.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100000000\r\n\r\n');
  assert.equal((await c.answer()).status, 413);
  return c;
}

describe('reading an over-limit body away after its 413', () => {
  it('closes the connection once more than the byte bound arrived', async () => {
    const { s, port } = await server(64 * 1024, 60_000);
    try {
      const c = await tooLarge(port);
      // Written in pieces so the server reads past its bound while the client still writes.
      for (let i = 0; i < 64 && !c.error; i++) await c.write(Buffer.alloc(16 * 1024)).catch(() => undefined);
      await c.closed;
    } finally {
      s.close();
    }
  });

  it('closes the connection when the body stops coming before the time bound', async () => {
    const { s, port } = await server(1 << 30, 200);
    try {
      const c = await tooLarge(port);
      await c.write(Buffer.alloc(1024));
      await c.closed;
    } finally {
      s.close();
    }
  });

  it('keeps the connection once the whole body was read', async () => {
    const { s, port } = await server(1 << 30, 60_000);
    try {
      const c = await RawHttpConnection.open(port);
      await c.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 5000\r\n\r\n');
      assert.equal((await c.answer()).status, 413);
      await c.write(Buffer.alloc(5000));
      await c.write('POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n');
      assert.equal((await c.answer()).status, 413);
      assert.equal(c.error, undefined);
      c.destroy();
    } finally {
      s.close();
    }
  });
});
