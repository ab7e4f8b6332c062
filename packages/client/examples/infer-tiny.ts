/**
 * Sends one request to the demo model `tiny` over AMQP and prints its output.
 * Start the mesh first (`pnpm start`), then:
 *
 *   node --import tsx packages/client/examples/infer-tiny.ts
 *
 * GEMESH_RABBITMQ_URL, GEMESH_NAMESPACE and GEMESH_API_KEY override the defaults.
 */
import { MeshClient, type MeshClientError, tensor, valuesOf } from '@ge-mesh/client';

const client = await MeshClient.connect({
  url: process.env.GEMESH_RABBITMQ_URL ?? 'amqp://guest:guest@127.0.0.1:5672',
  namespace: process.env.GEMESH_NAMESPACE ?? 'gemesh',
  ...(process.env.GEMESH_API_KEY ? { apiKey: process.env.GEMESH_API_KEY } : {}),
  timeoutMs: 10_000,
});
try {
  const x = Float32Array.from({ length: 16 }, (_, i) => i / 16);
  const res = await client.infer({ model: 'tiny', id: 'example-1', inputs: [tensor('x', 'FP32', [1, 16], x)] });
  for (const out of res.outputs) {
    const values = Array.from(valuesOf(out) as Float32Array, (v) => Number(v.toFixed(6)));
    process.stdout.write(
      `${res.model_name} v${res.model_version} ${out.name} ${JSON.stringify(out.shape)} ${JSON.stringify(values)}\n`,
    );
  }
} catch (err) {
  const e = err as MeshClientError;
  process.stderr.write(`inference failed: ${e.code ?? ''} ${e.message}\n`);
  process.exitCode = 1;
} finally {
  await client.close();
}
