import type { Repository, RepositoryModel } from '@ge-mesh/model-repository';
import { ERRORS, MeshError, TRITON_MESSAGES } from '@ge-mesh/protocol';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { encodeInferResponse, parseInferBody, validateInfer } from '../infer/index.js';
import type { InferService } from '../infer-service.js';
import { modelMetadata } from './model-metadata.js';

export interface AppDeps {
  repository: Repository;
  infer: InferService;
  maxBodyBytes: number;
  /** Whether the mesh can take requests now (broker connected, not stopping). */
  isReady: () => boolean;
  logger?: boolean;
}

export const SERVER_NAME = 'ge-mesh';
export const SERVER_VERSION = '0.1.0';
export const SERVER_EXTENSIONS = ['binary_tensor_data', 'model_configuration', 'parameters'];

function sendError(reply: FastifyReply, err: unknown): FastifyReply {
  const e = err instanceof MeshError ? err : new MeshError('INTERNAL', 'internal error');
  return reply.code(ERRORS[e.code].status).type('application/json').send({ error: e.message });
}

/** Version segments must be integers, as in Triton's route regexes. */
const VERSION = /^[0-9]+$/;

export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: deps.maxBodyBytes,
    // Infer bodies may be JSON, JSON + binary blobs, or raw bytes: take them all as a Buffer.
    return503OnClosing: true,
  });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const findModel = (name: string, version?: string): { model: RepositoryModel; version: string } => {
    const model = deps.repository.models.get(name);
    if (!model) throw new MeshError('MODEL_NOT_FOUND', TRITON_MESSAGES.unknownModel(name));
    if (version === undefined) {
      const latest = model.versions[0];
      if (!latest)
        throw new MeshError('MODEL_NOT_FOUND', `Request for unknown model: '${name}' has no available versions`);
      return { model, version: latest.version };
    }
    // Triton's routes only match integer versions; anything else is an unknown path.
    if (!VERSION.test(version)) throw new MeshError('NOT_FOUND', TRITON_MESSAGES.notFound);
    if (!model.versions.some((v) => v.version === version)) {
      throw new MeshError('MODEL_VERSION_NOT_FOUND', TRITON_MESSAGES.unknownVersion(name, version));
    }
    return { model, version };
  };

  app.get('/v2/health/live', (_req, reply) => reply.code(200).send());
  app.get('/v2/health/ready', (_req, reply) => reply.code(deps.isReady() ? 200 : 400).send());
  app.get('/v2', (_req, reply) =>
    reply.send({ name: SERVER_NAME, version: SERVER_VERSION, extensions: SERVER_EXTENSIONS }),
  );

  type ModelParams = { model: string; version?: string };
  const metadata = (p: ModelParams, reply: FastifyReply) => {
    try {
      const { model, version } = findModel(p.model, p.version);
      return reply.send(
        modelMetadata(model, p.version === undefined ? model.versions.map((v) => v.version) : [version]),
      );
    } catch (err) {
      return sendError(reply, err);
    }
  };
  app.get<{ Params: ModelParams }>('/v2/models/:model', (req, reply) => metadata(req.params, reply));
  app.get<{ Params: ModelParams }>('/v2/models/:model/versions/:version', (req, reply) => metadata(req.params, reply));

  const ready = (p: ModelParams, reply: FastifyReply) => {
    try {
      findModel(p.model, p.version);
      return reply.code(deps.isReady() ? 200 : 400).send();
    } catch (err) {
      return sendError(reply, err);
    }
  };
  app.get<{ Params: ModelParams }>('/v2/models/:model/ready', (req, reply) => ready(req.params, reply));
  app.get<{ Params: ModelParams }>('/v2/models/:model/versions/:version/ready', (req, reply) =>
    ready(req.params, reply),
  );

  const infer = async (p: ModelParams, body: unknown, headerLength: string | undefined, reply: FastifyReply) => {
    try {
      if (!deps.isReady()) throw new MeshError('UNAVAILABLE', 'Server is not ready');
      const { model, version } = findModel(p.model, p.version);
      const buf = Buffer.isBuffer(body) ? body : Buffer.alloc(0);
      const parsed = parseInferBody(buf, headerLength === undefined ? undefined : Number(headerLength), model.name);
      const validated = validateInfer(parsed, model.config);
      const res = await deps.infer.infer(model, version, validated);
      const out = encodeInferResponse(
        {
          model: model.name,
          version,
          ...(validated.clientId !== undefined ? { id: validated.clientId } : {}),
          outputs: res.outputs ?? [],
        },
        validated.outputs,
        validated.binaryDataOutput,
      );
      if (out.headerLength !== undefined) reply.header('inference-header-content-length', out.headerLength);
      return reply.code(200).type(out.contentType).send(out.body);
    } catch (err) {
      return sendError(reply, err);
    }
  };
  type InferRoute = { Params: ModelParams; Headers: { 'inference-header-content-length'?: string } };
  app.post<InferRoute>('/v2/models/:model/infer', (req, reply) =>
    infer(req.params, req.body, req.headers['inference-header-content-length'], reply),
  );
  app.post<InferRoute>('/v2/models/:model/versions/:version/infer', (req, reply) =>
    infer(req.params, req.body, req.headers['inference-header-content-length'], reply),
  );

  app.setNotFoundHandler((req, reply) => {
    const known = app.hasRoute({ method: req.method === 'GET' ? 'POST' : 'GET', url: req.url.split('?')[0] ?? '' });
    if (known) return sendError(reply, new MeshError('METHOD_NOT_ALLOWED', TRITON_MESSAGES.methodNotAllowed));
    return sendError(reply, new MeshError('NOT_FOUND', TRITON_MESSAGES.notFound));
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _req, reply) => {
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      return sendError(
        reply,
        new MeshError('PAYLOAD_TOO_LARGE', `request body is larger than the limit of ${deps.maxBodyBytes} bytes`),
      );
    }
    if (err.statusCode && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: err.message });
    }
    return sendError(reply, err);
  });
  return app;
}
