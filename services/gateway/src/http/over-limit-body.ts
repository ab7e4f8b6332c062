import type { IncomingMessage } from 'node:http';

/** How much of an over-limit body is read away after the 413, and for how long, before the socket is closed. */
export const LINGER_BYTES = 64 << 20;
export const LINGER_MS = 5_000;

/**
 * Keep reading an over-limit request body after its 413 instead of closing at once.
 *
 * The limit is checked against `content-length` before the body is read, so the client is usually
 * still sending. Closing the socket then (Fastify answers a parser error with `connection: close`)
 * resets a connection the peer is writing to: the client sees EPIPE or ECONNRESET, not the 413.
 * With the connection kept, Node reads the rest of the body away after the answer and the client
 * reads the 413 (a lingering close, as nginx and Apache do). The socket is destroyed once more
 * than `bytes` were read after the check or the body is still coming after `ms`, so a client
 * cannot make the gateway read an endless body.
 */
export function lingerOverLimitBody(req: IncomingMessage, bytes = LINGER_BYTES, ms = LINGER_MS): void {
  if (req.complete) return;
  const socket = req.socket;
  let read = 0;
  const stop = () => {
    clearTimeout(timer);
    req.off('data', count);
    req.off('end', stop);
    req.off('close', stop);
  };
  const cut = () => {
    stop();
    socket.destroy();
  };
  const count = (chunk: Buffer) => {
    read += chunk.length;
    if (read > bytes) cut();
  };
  const timer = setTimeout(cut, ms);
  timer.unref();
  req.on('data', count);
  req.once('end', stop);
  req.once('close', stop);
}
