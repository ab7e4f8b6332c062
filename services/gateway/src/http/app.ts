import { MeshError, TRITON_MESSAGES } from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { InferenceMetrics } from '@ge-mesh/telemetry/metrics';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { encodeInferResponse, parseInferBody } from '../infer/index.js';
import { parseJsonBody } from '../infer/json-syntax-error.js';
import { answerError } from '../pipeline/error-answer.js';
import type { InferPipeline } from '../pipeline/infer-pipeline.js';
import type { MeshQueries } from '../pipeline/queries.js';
import { checkRegionStatus, refuseRegistration } from '../pipeline/shared-memory.js';
import { compress, decodeBody, parseHeaderLength, responseCompression } from './encoding.js';
import { lingerOverLimitBody } from './over-limit-body.js';

export interface AppDeps {
  pipeline: InferPipeline;
  queries: MeshQueries;
  /** Largest request body, before and after decompression (Triton's --http-max-input-size). */
  maxBodyBytes: number;
  /** Most elements one input tensor may declare. */
  maxTensorElements: number;
  metrics?: InferenceMetrics;
  /** Serve HTTPS with this certificate; `ca` set = clients must present a certificate it signed. */
  https?: { cert: Buffer; key: Buffer; ca?: Buffer };
  /** Where internal errors are logged (never sent to clients). */
  log?: Logger;
}

export const SERVER_NAME = 'ge-mesh';
export const SERVER_VERSION = '0.1.0';

/**
 * Triton's extension names in the order Triton lists them. GE Mesh lists the
 * ones it implements: the core set always, model_repository once load/unload
 * routes exist.
 */
const ALWAYS = new Set(['classification', 'model_configuration', 'binary_tensor_data', 'parameters', 'statistics']);
const TRITON_ORDER = [
  'classification',
  'sequence',
  'model_repository',
  'model_repository(unload_dependents)',
  'schedule_policy',
  'model_configuration',
  'system_shared_memory',
  'cuda_shared_memory',
  'binary_tensor_data',
  'parameters',
  'statistics',
  'trace',
  'logging',
];

/** Triton's extension list for a server with (or without) the model_repository, trace and logging extensions. */
export function serverExtensions(modelRepository: boolean, traceAndLogging = false): string[] {
  const present = new Set(ALWAYS);
  if (modelRepository) {
    present.add('model_repository');
    present.add('model_repository(unload_dependents)');
  }
  if (traceAndLogging) {
    present.add('trace');
    present.add('logging');
  }
  return TRITON_ORDER.filter((e) => present.has(e));
}

type ModelParams = { model: string; version?: string };
interface RouteInfo {
  readonly methods: readonly string[];
  readonly pattern: RegExp;
  readonly url: string;
}

/**
 * The KServe v2 REST API (Triton's HTTP endpoints): health, server and model
 * metadata, model config, readiness, inference (JSON and the binary tensor
 * extension, gzip/deflate both ways), statistics and the repository index.
 * Every error body is `{"error": "<message>"}` with Triton's status.
 *
 * Further routes (repository load/unload) can be registered on the returned
 * instance before it listens; the server metadata picks them up.
 */
export function buildApp(deps: AppDeps): FastifyInstance {
  const { queries } = deps;
  const https = deps.https;
  const app = Fastify({
    ...(https
      ? {
          https: {
            cert: https.cert,
            key: https.key,
            ...(https.ca ? { ca: https.ca, requestCert: true, rejectUnauthorized: true } : {}),
          },
        }
      : {}),
    logger: false,
    bodyLimit: deps.maxBodyBytes,
    // While closing, requests still get our answers (isReady() is false then), not Fastify's own 503 body.
    return503OnClosing: false,
    // Model names may be long; Fastify's default cap is 100 characters.
    routerOptions: { maxParamLength: 1024 },
    // Malformed URLs (bad percent-encoding, over-long segments) get Triton's error body too.
    frameworkErrors: (err, _req, res) => {
      deps.metrics?.errorAnswered('INVALID_ARGUMENT', 'http');
      void (res as unknown as FastifyReply)
        .code(err.statusCode ?? 400)
        .type('application/json')
        .send({ error: err.message });
    },
  });

  const routes: RouteInfo[] = [];
  app.addHook('onRoute', (opts) => {
    const methods = ([] as string[]).concat(opts.method as string | string[]);
    const pattern = new RegExp(`^${opts.url.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+')}$`);
    routes.push({ methods, pattern, url: opts.url });
  });

  // Bodies may be JSON, JSON + binary blobs, raw bytes or compressed: all are read as a Buffer.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const sendError = (reply: FastifyReply, err: unknown): FastifyReply => {
    const a = answerError(err, 'http', deps);
    return reply.code(a.status).headers(a.headers).type('application/json').send(a.body);
  };
  const authHeader = (req: FastifyRequest) => req.headers.authorization;
  const ref = (p: ModelParams) => ({
    name: p.model,
    ...(p.version !== undefined ? { version: p.version } : {}),
    versionFrom: 'path' as const,
  });

  const guarded =
    <P>(handler: (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => Promise<unknown> | unknown) =>
    async (req: FastifyRequest<{ Params: P }>, reply: FastifyReply) => {
      try {
        return await handler(req, reply);
      } catch (err) {
        return sendError(reply, err);
      }
    };

  // Health: no key needed (probes), empty bodies.
  app.get('/v2/health/live', (_req, reply) => reply.code(200).send());
  app.get('/v2/health/ready', (_req, reply) => reply.code(queries.serverReady() ? 200 : 400).send());

  app.get(
    '/v2',
    guarded((req, reply) => {
      queries.authorize(authHeader(req));
      // Extensions are listed once their routes exist (registered after the app is built).
      const hasRoute = (re: RegExp) => routes.some((r) => r.methods.includes('POST') && re.test(r.url));
      const repository =
        hasRoute(/^\/v2\/repository\/models\/:[^/]+\/load$/) && hasRoute(/^\/v2\/repository\/models\/:[^/]+\/unload$/);
      return reply.send({
        name: SERVER_NAME,
        version: SERVER_VERSION,
        extensions: serverExtensions(repository, hasRoute(/^\/v2\/logging$/) && hasRoute(/^\/v2\/trace\/setting$/)),
      });
    }),
  );

  const metadata = guarded<ModelParams>((req, reply) => reply.send(queries.metadata(authHeader(req), ref(req.params))));
  app.get('/v2/models/:model', metadata);
  app.get('/v2/models/:model/versions/:version', metadata);

  const ready = guarded<ModelParams>((req, reply) => {
    queries.ready(authHeader(req), ref(req.params));
    return reply.code(200).send();
  });
  app.get('/v2/models/:model/ready', ready);
  app.get('/v2/models/:model/versions/:version/ready', ready);

  const config = guarded<ModelParams>((req, reply) => reply.send(queries.config(authHeader(req), ref(req.params))));
  app.get('/v2/models/:model/config', config);
  app.get('/v2/models/:model/versions/:version/config', config);

  const infer = guarded<ModelParams>(async (req, reply) => {
    const { result, request } = await deps.pipeline.infer({
      ingress: 'http',
      traceHeaders: req.headers,
      // W3C Trace Context's response header: the trace this request's spans are in.
      onTraced: (traceparent) => void reply.header('traceresponse', traceparent),
      model: req.params.model,
      ...(req.params.version !== undefined ? { version: req.params.version } : {}),
      versionFrom: 'path',
      ...(req.headers.authorization !== undefined ? { authorization: req.headers.authorization } : {}),
      decode: async (model) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const body = await decodeBody(raw, req.headers['content-encoding'], deps.maxBodyBytes);
        const headerLength = parseHeaderLength(headerValue(req.headers['inference-header-content-length']));
        return parseInferBody(body, headerLength, model.name, { maxElements: deps.maxTensorElements });
      },
    });
    const out = encodeInferResponse(result, request.outputs, request.binaryDataOutput);
    if (out.headerLength !== undefined) reply.header('inference-header-content-length', out.headerLength);
    const how = responseCompression(req.headers['accept-encoding']);
    if (how) {
      reply.header('content-encoding', how);
      return reply
        .code(200)
        .type(out.contentType)
        .send(await compress(out.body, how));
    }
    return reply.code(200).type(out.contentType).send(out.body);
  });
  app.post('/v2/models/:model/infer', infer);
  app.post('/v2/models/:model/versions/:version/infer', infer);

  // Statistics: Triton's shape; unknown or not-ready models are 400, as in Triton.
  const stats = guarded<ModelParams>((req, reply) =>
    reply.send(queries.statistics(authHeader(req), req.params.model, req.params.version, 'path')),
  );
  app.get('/v2/models/stats', stats);
  app.get('/v2/models/:model/stats', stats);
  app.get('/v2/models/:model/versions/:version/stats', stats);

  // Repository index; Triton ignores a repository name here (load/unload refuse one).
  const index = guarded(async (req, reply) => {
    queries.authorize(authHeader(req));
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const body = await decodeBody(raw, req.headers['content-encoding'], deps.maxBodyBytes);
    let readyOnly = false;
    if (body.length > 0) {
      const doc = parseJsonBody(body);
      if (typeof doc === 'object' && doc !== null && Object.hasOwn(doc, 'ready')) {
        const r = (doc as { ready: unknown }).ready;
        if (typeof r !== 'boolean')
          throw new MeshError('INVALID_ARGUMENT', "Invalid value for 'ready': expected a boolean");
        readyOnly = r;
      }
    }
    return reply.send(queries.index(authHeader(req), readyOnly));
  });
  app.post('/v2/repository/index', index);
  app.post('/v2/repository/:repository/index', index);

  // Shared memory: no region is ever registered (see shared-memory.ts); status is an empty list.
  for (const kind of ['system', 'cuda'] as const) {
    const base = `/v2/${kind}sharedmemory`;
    const status = guarded<{ name?: string }>((req, reply) => {
      queries.authorize(authHeader(req));
      checkRegionStatus(kind, req.params.name);
      return reply.send([]);
    });
    const unregister = guarded((req, reply) => {
      queries.authorize(authHeader(req));
      return reply.code(200).send();
    });
    app.get(`${base}/status`, status);
    app.get(`${base}/region/:name/status`, status);
    app.post(
      `${base}/region/:name/register`,
      guarded<{ name: string }>((req) => {
        queries.authorize(authHeader(req));
        refuseRegistration(kind, req.params.name);
      }),
    );
    app.post(`${base}/unregister`, unregister);
    app.post(`${base}/region/:name/unregister`, unregister);
  }

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split('?')[0] ?? '';
    const known = routes.some((r) => r.pattern.test(path) && !r.methods.includes(req.method));
    const wrongMethod = known && !routes.some((r) => r.pattern.test(path) && r.methods.includes(req.method));
    if (wrongMethod) return sendError(reply, new MeshError('METHOD_NOT_ALLOWED', TRITON_MESSAGES.methodNotAllowed));
    return sendError(reply, new MeshError('NOT_FOUND', TRITON_MESSAGES.notFound));
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      // The client is likely still sending: read the rest away rather than close under it.
      reply.header('connection', reply.raw.shouldKeepAlive ? 'keep-alive' : 'close');
      lingerOverLimitBody(req.raw);
      return sendError(
        reply,
        new MeshError('PAYLOAD_TOO_LARGE', `request body is larger than the limit of ${deps.maxBodyBytes} bytes`),
      );
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      deps.metrics?.errorAnswered('INVALID_ARGUMENT', 'http');
      return reply.code(err.statusCode).type('application/json').send({ error: err.message });
    }
    return sendError(reply, err);
  });
  return app;
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}
