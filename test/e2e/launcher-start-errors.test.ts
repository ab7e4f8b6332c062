import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, it } from 'node:test';
import { startTestMesh } from '../support/mesh-harness.js';

/** A service that exits while the mesh starts fails the start, and the error says why. */
describe('launcher: a service that fails during the start', { timeout: 120_000 }, () => {
  it("fails the start with the service's exit code and its last words", async () => {
    await assert.rejects(
      startTestMesh({ workers: 0, logLevel: 'warn', flags: { gateway: ['--http-port', 'eighty'] } }),
      (err: Error) => {
        assert.match(err.message, /^gateway exited with code 2 during start; its last words: /);
        assert.match(err.message, /invalid value "eighty" for httpPort \(from --http-port\)/);
        return true;
      },
    );
  });

  it("names an uncaught exception's message (the HTTP port already taken)", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      await assert.rejects(startTestMesh({ workers: 0, logLevel: 'warn', httpPort: port }), (err: Error) => {
        assert.match(err.message, /^gateway exited with code 1 during start; its last words: Error: listen EADDRINUSE/);
        return true;
      });
    } finally {
      taken.close();
    }
  });
});
