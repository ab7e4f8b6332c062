import { MeshError } from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { parseJsonBody } from '../infer/json-syntax-error.js';
import { answerError } from '../pipeline/error-answer.js';
import type { ControlParameter, RepositoryControl } from '../pipeline/repository-control.js';
import { decodeBody } from './encoding.js';

export interface RepositoryRoutesDeps {
  control: RepositoryControl;
  maxBodyBytes: number;
  log?: Logger;
}

type Params = { model: string; repository?: string };

/**
 * Triton's model repository extension over REST: POST
 * /v2/repository/models/{m}/load and /unload (the index route lives in
 * app.ts). The work is RepositoryControl's; this only decodes the body.
 */
export function registerRepositoryRoutes(app: FastifyInstance, deps: RepositoryRoutesDeps): void {
  /** The request's `parameters`; a body is optional. */
  const parameters = async (req: FastifyRequest, action: string, name: string) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const body = await decodeBody(raw, req.headers['content-encoding'], deps.maxBodyBytes);
    if (body.length === 0) return {};
    const doc = parseJsonBody(body);
    const params = (doc as { parameters?: unknown } | null)?.parameters;
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      throw new MeshError('INVALID_ARGUMENT', `failed to ${action} '${name}', 'parameters' must be a JSON object`);
    }
    return (params ?? {}) as Record<string, ControlParameter>;
  };

  const route = (action: 'load' | 'unload') => async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
    try {
      const call = {
        ...(req.headers.authorization !== undefined ? { authorization: req.headers.authorization } : {}),
        model: req.params.model,
        ...(req.params.repository !== undefined ? { repository: req.params.repository } : {}),
        parameters: () => parameters(req, action, req.params.model),
      };
      await (action === 'load' ? deps.control.load(call) : deps.control.unload(call));
      return reply.code(200).send();
    } catch (err) {
      const a = answerError(err, 'http', { ...(deps.log ? { log: deps.log } : {}) });
      return reply.code(a.status).headers(a.headers).type('application/json').send(a.body);
    }
  };

  app.post('/v2/repository/models/:model/load', route('load'));
  app.post('/v2/repository/models/:model/unload', route('unload'));
  app.post('/v2/repository/:repository/models/:model/load', route('load'));
  app.post('/v2/repository/:repository/models/:model/unload', route('unload'));
}
