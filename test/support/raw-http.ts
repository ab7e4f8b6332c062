import { once } from 'node:events';
import { connect, type Socket } from 'node:net';

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * One HTTP/1.1 connection driven byte by byte, for what an HTTP client hides: writing a body after
 * the answer came, and whether the server kept or closed the connection. `closed` resolves when the
 * server ends or resets it.
 */
export class RawHttpConnection {
  private buffered = Buffer.alloc(0);
  private waiting?: () => void;
  readonly closed: Promise<void>;
  /** The first socket error (EPIPE, ECONNRESET), if any. */
  error?: Error;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.waiting?.();
    });
    socket.on('error', (err) => {
      this.error ??= err;
    });
    this.closed = new Promise((resolve) =>
      socket.once('close', () => {
        this.waiting?.();
        resolve();
      }),
    );
  }

  static async open(port: number): Promise<RawHttpConnection> {
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    return new RawHttpConnection(socket);
  }

  /** Writes and waits until the bytes are handed to the kernel; rejects if the socket failed. */
  write(bytes: string | Buffer): Promise<void> {
    return new Promise((resolve, reject) => this.socket.write(bytes, (err) => (err ? reject(err) : resolve())));
  }

  /** The next answer on the connection (headers and a `content-length` body). */
  async answer(): Promise<RawAnswer> {
    for (;;) {
      const end = this.buffered.indexOf('\r\n\r\n');
      if (end >= 0) {
        const [statusLine = '', ...lines] = this.buffered.subarray(0, end).toString('latin1').split('\r\n');
        const headers: Record<string, string> = {};
        for (const l of lines) {
          const i = l.indexOf(':');
          headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
        }
        const length = Number(headers['content-length'] ?? 0);
        if (this.buffered.length >= end + 4 + length) {
          const body = this.buffered.subarray(end + 4, end + 4 + length).toString('utf8');
          this.buffered = this.buffered.subarray(end + 4 + length);
          return { status: Number(statusLine.split(' ')[1]), headers, body };
        }
      }
      if (this.socket.destroyed || this.socket.readableEnded) throw new Error('connection closed before an answer');
      await new Promise<void>((resolve) => {
        this.waiting = resolve;
      });
      this.waiting = undefined;
    }
  }

  destroy(): void {
    this.socket.destroy();
  }
}
