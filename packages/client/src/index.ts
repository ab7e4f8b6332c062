/**
 * @ge-mesh/client: send inference requests to GE Mesh over AMQP.
 *
 *   const client = await MeshClient.connect({ namespace: 'gemesh', apiKey });
 *   const res = await client.infer({ model: 'tiny', inputs: [tensor('x', 'FP32', [1, 16], x)] });
 *   valuesOf(res.outputs[0]);   // Float32Array
 */
export * from './client.js';
export * from './tensors.js';
export * from './wire.js';
