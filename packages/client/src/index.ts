/**
 * @ge-mesh/client: send inference requests to GE Mesh over AMQP.
 *
 *   const client = await MeshClient.connect({ namespace: 'gemesh', apiKey });
 *   const res = await client.infer({ model: 'tiny', inputs: [tensor('x', 'FP32', [1, 16], x)] });
 *   valuesOf(res.outputs[0]);   // Float32Array
 */

// The wire contract itself lives in @ge-mesh/protocol, beside the mesh's internal messages.
export {
  AUTHORIZATION_HEADER,
  type DataType,
  DIRECT_REPLY_TO,
  decodeMessage,
  encodeMessage,
  INGRESS_PROTOCOL,
  type IngressNames,
  type IngressOutput,
  type IngressOutputRequest,
  type IngressReply,
  type IngressReplyError,
  type IngressReplyOk,
  type IngressRequest,
  type IngressTensor,
  ingressNames,
  isErrorReply,
  MSGPACK_CONTENT_TYPE,
  type ParameterValue,
  packBytesElements,
} from '@ge-mesh/protocol';
export * from './client.js';
export * from './tensors.js';
