import type { Logger } from '@ge-mesh/telemetry';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseJsonBody } from '../infer/json-syntax-error.js';
import { answerError } from '../pipeline/error-answer.js';
import type { LoggingControl } from '../pipeline/logging-control.js';
import type { TraceControl } from '../pipeline/trace-control.js';
import { decodeBody } from './encoding.js';

export interface SettingsRoutesDeps {
  logging: LoggingControl;
  trace: TraceControl;
  maxBodyBytes: number;
  log?: Logger;
}

type Params = { model?: string };

/**
 * Triton's logging extension (GET/POST /v2/logging) and trace extension
 * (GET/POST /v2/trace/setting, /v2/models/<m>/trace/setting) over REST; the
 * work is LoggingControl's and TraceControl's, shared with gRPC.
 */
export function registerSettingsRoutes(app: FastifyInstance, deps: SettingsRoutesDeps): void {
  const json = async (req: FastifyRequest): Promise<unknown> => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const body = await decodeBody(raw, req.headers['content-encoding'], deps.maxBodyBytes);
    if (body.length === 0) return {};
    return parseJsonBody(body);
  };
  const handle =
    (fn: (req: FastifyRequest<{ Params: Params }>) => unknown) =>
    async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
      try {
        return reply.code(200).send(await fn(req));
      } catch (err) {
        const a = answerError(err, 'http', { ...(deps.log ? { log: deps.log } : {}) });
        return reply.code(a.status).headers(a.headers).type('application/json').send(a.body);
      }
    };
  const auth = (req: FastifyRequest) => req.headers.authorization;

  app.get(
    '/v2/logging',
    handle((req) => deps.logging.get(auth(req))),
  );
  app.post(
    '/v2/logging',
    handle(async (req) => deps.logging.update(auth(req), await json(req))),
  );
  app.get(
    '/v2/trace/setting',
    handle((req) => deps.trace.get(auth(req))),
  );
  app.post(
    '/v2/trace/setting',
    handle(async (req) => deps.trace.update(auth(req), undefined, await json(req))),
  );
  app.get(
    '/v2/models/:model/trace/setting',
    handle((req) => deps.trace.get(auth(req), req.params.model)),
  );
  app.post(
    '/v2/models/:model/trace/setting',
    handle(async (req) => deps.trace.update(auth(req), req.params.model, await json(req))),
  );
}
