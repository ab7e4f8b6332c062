import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { FaultProxy } from '../support/fault-proxy.js';
import { REDIS_URL } from '../support/mesh-harness.js';

/**
 * The fault proxy against a real echo server and the real Redis. Timing
 * checks are lower bounds only (a fault must cost at least what it says);
 * "nothing arrived" is checked over a fixed window, never "arrived in time".
 */

/** An echo server that also counts what reaches it, to tell the proxy's holding from the target's. */
class Echo {
  readonly sockets = new Set<Socket>();
  accepted = 0;
  received = 0;
  private constructor(
    readonly server: Server,
    readonly port: number,
  ) {}

  static async start(): Promise<Echo> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const echo = new Echo(server, (server.address() as { port: number }).port);
    server.on('connection', (s) => {
      echo.accepted++;
      echo.sockets.add(s);
      s.on('data', (b: Buffer) => {
        echo.received += b.length;
      });
      s.on('error', () => undefined);
      s.on('close', () => echo.sockets.delete(s));
      s.pipe(s);
    });
    return echo;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

/** A client socket that collects what it receives and records how it ended. */
class Client {
  readonly chunks: Buffer[] = [];
  error: NodeJS.ErrnoException | undefined;
  closed = false;
  ended = false;
  readonly socket: Socket;

  constructor(port: number) {
    this.socket = tcpConnect({ host: '127.0.0.1', port });
    this.socket.on('data', (b: Buffer) => this.chunks.push(b));
    this.socket.on('end', () => {
      this.ended = true;
    });
    this.socket.on('error', (err) => {
      this.error = err;
    });
    this.socket.on('close', () => {
      this.closed = true;
    });
  }

  static async open(port: number): Promise<Client> {
    const c = new Client(port);
    await once(c.socket, 'connect');
    return c;
  }

  get received(): Buffer {
    return Buffer.concat(this.chunks);
  }

  async waitFor(bytes: number, timeoutMs = 10_000): Promise<Buffer> {
    await until(() => this.received.length >= bytes, timeoutMs, `${bytes} bytes`);
    return this.received;
  }
}

async function until(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await sleep(5);
  }
}

describe('fault proxy', () => {
  describe('against a TCP echo server', () => {
    let echo: Echo;
    let proxy: FaultProxy;
    const clients: Client[] = [];
    const open = async () => {
      const c = await Client.open(proxy.port);
      clients.push(c);
      return c;
    };

    before(async () => {
      echo = await Echo.start();
    });
    after(async () => {
      await echo.close();
    });
    // A fresh proxy per case: every case starts with clean counts and no fault.
    const fresh = async () => {
      for (const c of clients.splice(0)) c.socket.destroy();
      await proxy?.close();
      proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
    };
    after(async () => {
      for (const c of clients) c.socket.destroy();
      await proxy?.close();
    });

    it('forwards both ways, 4 MiB intact, and relays a half-close after the data', async () => {
      await fresh();
      const c = await open();
      const payload = randomBytes(4 << 20);
      c.socket.end(payload);
      await until(() => c.ended, 20_000, 'the echo and its FIN');
      assert.ok(c.received.equals(payload));
      // Both sides finished both ways: the proxy lets the connection go.
      await until(() => proxy.stats.active === 0, 5_000, 'connection released');
      assert.deepEqual(proxy.stats, { opened: 1, cut: 0, refused: 0, active: 0 });
    });

    it('cut(): both sides of every connection close; new connections work', async () => {
      await fresh();
      const accepted = echo.accepted;
      const [a, b] = [await open(), await open()];
      a.socket.write('a');
      b.socket.write('b');
      await a.waitFor(1);
      await b.waitFor(1);
      assert.equal(echo.accepted - accepted, 2);
      const serverSide = echo.sockets.size;
      assert.equal(proxy.cut(), 2);
      await until(() => a.closed && b.closed, 5_000, 'clients closed');
      await until(() => echo.sockets.size === serverSide - 2, 5_000, 'target sides closed');
      assert.deepEqual(proxy.stats, { opened: 2, cut: 2, refused: 0, active: 0 });
      const c = await open();
      c.socket.write('again');
      assert.equal((await c.waitFor(5)).toString(), 'again');
      assert.deepEqual(proxy.stats, { opened: 3, cut: 2, refused: 0, active: 1 });
    });

    it("cut('reset'): the client sees ECONNRESET", async () => {
      await fresh();
      const c = await open();
      c.socket.write('x');
      await c.waitFor(1);
      assert.equal(proxy.cut('reset'), 1);
      await until(() => c.closed, 5_000, 'client closed');
      assert.equal(c.error?.code, 'ECONNRESET');
      assert.equal(proxy.stats.cut, 1);
    });

    it('black hole: open sockets stay open and carry nothing, a new connect hangs; heal delivers all in order', async () => {
      await fresh();
      const a = await open();
      a.socket.write('1');
      await a.waitFor(1);
      const accepted = echo.accepted;
      const received = echo.received;
      proxy.blackhole();
      a.socket.write('23');
      // The proxy accepts the new client (its connect succeeds), but the target sees no connection.
      const b = await open();
      b.socket.write('b');
      await sleep(300);
      assert.equal(a.received.toString(), '1');
      assert.equal(b.received.length, 0);
      assert.equal(echo.received, received, 'nothing reached the target');
      assert.equal(echo.accepted, accepted, 'the held connect did not reach the target');
      assert.ok(!a.closed && !b.closed);
      proxy.heal();
      assert.equal((await a.waitFor(3)).toString(), '123');
      assert.equal((await b.waitFor(1)).toString(), 'b');
      assert.equal(echo.accepted, accepted + 1);
      assert.deepEqual(proxy.stats, { opened: 2, cut: 0, refused: 0, active: 2 });
    });

    it('black hole refusing new connections: they are reset at once, open ones stay half-open until heal', async () => {
      await fresh();
      const a = await open();
      proxy.blackhole({ newConnections: 'refuse' });
      const b = new Client(proxy.port);
      clients.push(b);
      await until(() => b.closed, 5_000, 'refused client closed');
      assert.equal(b.error?.code, 'ECONNRESET');
      a.socket.write('still here');
      await sleep(200);
      assert.equal(a.received.length, 0);
      assert.ok(!a.closed);
      assert.deepEqual(proxy.stats, { opened: 1, cut: 0, refused: 1, active: 1 });
      proxy.heal();
      assert.equal((await a.waitFor(10)).toString(), 'still here');
      const c = await open();
      c.socket.write('ok');
      assert.equal((await c.waitFor(2)).toString(), 'ok');
      assert.deepEqual(proxy.stats, { opened: 2, cut: 0, refused: 1, active: 2 });
    });

    it('latency: every round trip takes at least twice the delay; chunks keep their order', async () => {
      await fresh();
      const c = await open();
      const ms = 60;
      proxy.latency(ms);
      for (let i = 0; i < 3; i++) {
        const before = c.received.length;
        const t0 = performance.now();
        c.socket.write('p');
        await c.waitFor(before + 1);
        const rtt = performance.now() - t0;
        // ms granularity of the clock the proxy schedules on: up to 1 ms early per hop.
        assert.ok(rtt >= 2 * ms - 2, `round trip ${rtt.toFixed(1)} ms < 2 × ${ms} ms`);
      }
      // Many small writes, spaced so they travel as separate chunks: the echo keeps their order.
      const sent: string[] = [];
      const start = c.received.length;
      for (let i = 0; i < 40; i++) {
        sent.push(`<${i}>`);
        c.socket.write(`<${i}>`);
        if (i % 8 === 0) proxy.latency(i % 16 === 0 ? 5 : ms);
        await sleep(1);
      }
      const want = sent.join('');
      assert.equal((await c.waitFor(start + want.length)).subarray(start).toString(), want);
    });

    it('throttle: a transfer takes at least its size over the rate; heal lifts the limit', async () => {
      await fresh();
      const c = await open();
      const rate = 40_000;
      proxy.throttle(rate);
      const payload = randomBytes(80_000);
      const t0 = performance.now();
      c.socket.write(payload);
      const got = await c.waitFor(payload.length, 30_000);
      const seconds = (performance.now() - t0) / 1000;
      assert.ok(got.equals(payload));
      // The first slice (1/20 s of the rate) may go at once; the rest is paced.
      const floor = (payload.length - rate * 0.05) / rate;
      assert.ok(seconds >= floor, `${seconds.toFixed(2)} s < ${floor.toFixed(2)} s`);
      proxy.heal();
      c.socket.write(payload);
      await c.waitFor(2 * payload.length, 10_000);
      assert.ok(c.received.subarray(payload.length).equals(payload));
    });

    it('close(): connections are destroyed and the port no longer accepts', async () => {
      await fresh();
      const c = await open();
      const port = proxy.port;
      await proxy.close();
      await until(() => c.closed, 5_000, 'client closed');
      const late = new Client(port);
      clients.push(late);
      await until(() => late.closed, 5_000, 'refused');
      assert.equal(late.error?.code, 'ECONNREFUSED');
      proxy = await FaultProxy.start({ target: { host: '127.0.0.1', port: echo.port } });
    });
  });

  describe('against the real Redis (ioredis through the proxy)', () => {
    const target = new URL(REDIS_URL);
    const key = `fault-proxy-test:${randomBytes(4).toString('hex')}`;
    let proxy: FaultProxy;
    let redis: Redis;
    const events: string[] = [];

    before(async () => {
      proxy = await FaultProxy.start({ target: { host: target.hostname, port: Number(target.port || 6379) } });
      // Reconnect quickly and queue commands while offline: what the services configure matters
      // less here than seeing each fault arrive at the client as it would from a real network.
      redis = new Redis({
        host: '127.0.0.1',
        port: proxy.port,
        retryStrategy: () => 50,
        maxRetriesPerRequest: null,
      });
      for (const e of ['ready', 'close', 'reconnecting']) redis.on(e, () => events.push(e));
      redis.on('error', () => undefined);
    });
    after(async () => {
      await redis?.del(key).catch(() => undefined);
      redis?.disconnect();
      await proxy?.close();
    });

    it('PING and SET/GET go through', async () => {
      assert.equal(await redis.ping(), 'PONG');
      assert.equal(await redis.set(key, 'v1'), 'OK');
      assert.equal(await redis.get(key), 'v1');
      assert.deepEqual(proxy.stats, { opened: 1, cut: 0, refused: 0, active: 1 });
    });

    it('cut: the client sees its connection close, reconnects through the proxy and works again', async () => {
      events.length = 0;
      assert.equal(proxy.cut(), 1);
      await until(() => events.includes('close'), 5_000, "ioredis 'close'");
      await until(() => events.includes('ready'), 10_000, "ioredis 'ready' again");
      assert.equal(await redis.get(key), 'v1');
      assert.deepEqual(proxy.stats, { opened: 2, cut: 1, refused: 0, active: 1 });
    });

    it('black hole: a command stalls while it lasts and completes after heal', async () => {
      proxy.blackhole();
      const t0 = performance.now();
      let settled = false;
      const ping = redis.ping().finally(() => {
        settled = true;
      });
      await sleep(500);
      assert.equal(settled, false, 'PING answered through a black hole');
      proxy.heal();
      assert.equal(await ping, 'PONG');
      assert.ok(performance.now() - t0 >= 500);
      assert.equal(proxy.stats.cut, 1);
    });

    it('latency: every round trip costs at least twice the delay', async () => {
      const ms = 40;
      proxy.latency(ms);
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        assert.equal(await redis.ping(), 'PONG');
        const rtt = performance.now() - t0;
        assert.ok(rtt >= 2 * ms - 2, `PING round trip ${rtt.toFixed(1)} ms < 2 × ${ms} ms`);
      }
      proxy.heal();
    });

    it('cut while refusing new connections: reconnects are refused until heal, then a queued command completes', async () => {
      events.length = 0;
      proxy.blackhole({ newConnections: 'refuse' });
      assert.equal(proxy.cut(), 1);
      await until(() => events.includes('close'), 5_000, "ioredis 'close'");
      const get = redis.get(key);
      await until(() => proxy.stats.refused >= 1, 5_000, 'a refused reconnect');
      proxy.heal();
      assert.equal(await get, 'v1');
      assert.equal(proxy.stats.cut, 2);
      assert.equal(proxy.stats.active, 1);
    });
  });
});
