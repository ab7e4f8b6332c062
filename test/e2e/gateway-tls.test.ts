import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT } from '@ge-mesh/launcher';
import { credentials } from '@grpc/grpc-js';
import { Agent, request } from 'undici';
import { f32Bytes, f32Of, GrpcTestClient } from '../support/grpc-client.js';
import {
  DEMO_REPOSITORY,
  freePort,
  RABBITMQ_URL,
  REDIS_URL,
  startTestMesh,
  type TestMesh,
} from '../support/mesh-harness.js';

/**
 * TLS on both front ends: a second gateway joins a running mesh with a
 * certificate this test makes (a CA, a server certificate for 127.0.0.1, a
 * client certificate), and requires client certificates. gRPC over TLS and
 * REST over HTTPS answer with the mesh's results; a client without a
 * certificate, or one that does not trust the CA, is refused.
 */
function openssl(dir: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

function makeCertificates(dir: string): void {
  openssl(
    dir,
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '1',
    '-subj',
    '/CN=ge-mesh test CA',
  );
  for (const who of ['server', 'client']) {
    openssl(
      dir,
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${who}.key`,
      '-out',
      `${who}.csr`,
      '-subj',
      `/CN=${who === 'server' ? '127.0.0.1' : 'test client'}`,
    );
    const ext = join(dir, `${who}.ext`);
    execFileSync('sh', [
      '-c',
      `printf '%s\\n' '${who === 'server' ? 'subjectAltName=IP:127.0.0.1,DNS:localhost' : 'extendedKeyUsage=clientAuth'}' > ${ext}`,
    ]);
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${who}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${who}.pem`,
      '-days',
      '1',
      '-extfile',
      ext,
    );
  }
}

describe('end to end: TLS for gRPC and HTTPS for REST', { timeout: 240_000 }, () => {
  let mesh: TestMesh;
  let gateway: ChildProcess;
  let dir: string;
  let grpcPort: number;
  let httpPort: number;
  const file = (name: string) => readFileSync(join(dir, name));

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gemesh-tls-'));
    makeCertificates(dir);
    mesh = await startTestMesh();
    grpcPort = await freePort();
    httpPort = await freePort();
    gateway = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        'services/gateway/src/main.ts',
        '--namespace',
        mesh.namespace,
        '--model-repository',
        DEMO_REPOSITORY,
        '--http-port',
        String(httpPort),
        '--grpc-port',
        String(grpcPort),
        '--metrics-port',
        '0',
        '--tls-cert',
        join(dir, 'server.pem'),
        '--tls-key',
        join(dir, 'server.key'),
        '--tls-client-ca',
        join(dir, 'ca.pem'),
      ],
      {
        cwd: ROOT,
        env: { ...process.env, GEMESH_RABBITMQ_URL: RABBITMQ_URL, GEMESH_REDIS_URL: REDIS_URL },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    await new Promise<void>((resolve, reject) => {
      let out = '';
      gateway.stdout?.on('data', (c: Buffer) => {
        out += c.toString();
        if (out.includes('gateway ready')) resolve();
      });
      gateway.on('exit', (code) => reject(new Error(`gateway exited ${code}: ${out}`)));
    });
  });
  after(async () => {
    gateway?.kill('SIGTERM');
    await mesh?.teardown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gRPC over TLS with a client certificate infers; without one the call fails', async () => {
    const creds = credentials.createSsl(file('ca.pem'), file('client.key'), file('client.pem'));
    const client = new GrpcTestClient(`127.0.0.1:${grpcPort}`, undefined, creds);
    // A gateway that just started is ready once its first read of the worker registry shows tiny.
    for (let i = 0; i < 60; i++) {
      const h = (await client.call('Check', { service: '' }, { service: 'health' })) as { status: string };
      if (h.status === 'SERVING') break;
      await new Promise((r) => setTimeout(r, 500));
    }
    const x = new Float32Array(16).fill(0.5);
    const res = (await client.call('ModelInfer', {
      model_name: 'tiny',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 16] }],
      raw_input_contents: [f32Bytes(x)],
    })) as { raw_output_contents: Buffer[] };
    assert.equal(f32Of(res.raw_output_contents[0] as Buffer).length, 4);
    assert.deepEqual(await client.call('Check', { service: '' }, { service: 'health' }), { status: 'SERVING' });
    client.close();

    const anonymous = new GrpcTestClient(`127.0.0.1:${grpcPort}`, undefined, credentials.createSsl(file('ca.pem')));
    const [code] = await anonymous.error('ServerLive', {});
    assert.equal(code, 14); // UNAVAILABLE: the handshake fails
    anonymous.close();
    const plain = new GrpcTestClient(`127.0.0.1:${grpcPort}`);
    assert.equal((await plain.error('ServerLive', {}))[0], 14);
    plain.close();
  });

  it('REST over HTTPS with a client certificate; without one the connection is refused', async () => {
    const withCert = new Agent({ connect: { ca: file('ca.pem'), cert: file('client.pem'), key: file('client.key') } });
    const res = await request(`https://127.0.0.1:${httpPort}/v2/models/tiny`, { dispatcher: withCert });
    assert.equal(res.statusCode, 200);
    assert.equal(((await res.body.json()) as { name: string }).name, 'tiny');
    await withCert.close();
    const noCert = new Agent({ connect: { ca: file('ca.pem') } });
    await assert.rejects(request(`https://127.0.0.1:${httpPort}/v2/health/live`, { dispatcher: noCert }));
    await noCert.close();
  });
});
