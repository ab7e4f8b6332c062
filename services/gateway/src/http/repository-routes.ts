import { ConfigError, loadModel, type RepositoryModel } from '@ge-mesh/model-repository';
import { MeshError } from '@ge-mesh/protocol';
import type { Logger } from '@ge-mesh/telemetry';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authorizer } from '../auth.js';
import { MSG } from '../infer/messages.js';
import type { WorkerModelStates } from '../worker-model-states.js';
import { decodeBody } from './encoding.js';
import { errorAnswer } from './errors.js';

export interface RepositoryRoutesDeps {
  states: WorkerModelStates;
  auth: Authorizer;
  /** The model repository folder (models are read again from it on load). */
  repositoryDir: string;
  maxBodyBytes: number;
  /** Declares the model's request queue, so requests for a newly loaded model are routable. */
  prepareModel: (model: RepositoryModel) => Promise<void>;
  /** Longest a load waits for the workers (compile and warmup included). */
  loadTimeoutMs?: number;
  /** Longest an unload waits for the workers to finish their batches and let go. */
  unloadTimeoutMs?: number;
  /** How long a load waits for some live worker to say it may load the model (a few heartbeats). */
  noWorkerGraceMs?: number;
  log?: Logger;
}

type Params = { model: string; repository?: string };

/**
 * Triton's model repository extension: POST /v2/repository/models/{m}/load
 * and /unload (the index route lives in app.ts).
 *
 * How a request reaches the workers: the gateway records the wanted state
 * of the model with a new generation in Redis (the model control,
 * set-model-control) and announces it on the registry channel; every worker
 * applies it at once (and re-reads the control on each heartbeat, should
 * the message be missed), then reports the model's state and the generation
 * it answered in its registry entry. The gateway answers when the workers
 * did: a load returns once some worker has the model ready (400 with the
 * workers' error if every worker that may load it failed), an unload once no
 * worker holds it any more. Readiness follows the registry throughout
 * (LOADING, UNLOADING, then READY or UNAVAILABLE).
 *
 * Both need an admin API key when keys are configured.
 */
export function registerRepositoryRoutes(app: FastifyInstance, deps: RepositoryRoutesDeps): void {
  const { states, auth } = deps;
  const registry = states.registry;
  const loadTimeoutMs = deps.loadTimeoutMs ?? 120_000;
  const unloadTimeoutMs = deps.unloadTimeoutMs ?? 60_000;
  const graceMs = deps.noWorkerGraceMs ?? 3_000;

  const fail = (reply: FastifyReply, err: unknown) => {
    const a = errorAnswer(err);
    if (a.code === 'INTERNAL' && !(err instanceof MeshError)) deps.log?.error({ err }, 'internal error');
    return reply.code(a.status).headers(a.headers).type('application/json').send(a.body);
  };

  /** The request's `parameters`; a config or files sent with the request are not supported. */
  const readParameters = async (req: FastifyRequest, action: string, name: string) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const body = await decodeBody(raw, req.headers['content-encoding'], deps.maxBodyBytes);
    if (body.length === 0) return;
    let doc: unknown;
    try {
      doc = JSON.parse(body.toString('utf8'));
    } catch (err) {
      throw new MeshError('BAD_JSON', MSG.badJson((err as Error).message));
    }
    const params = (doc as { parameters?: unknown } | null)?.parameters;
    if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) {
      throw new MeshError('INVALID_ARGUMENT', `failed to ${action} '${name}', 'parameters' must be a JSON object`);
    }
    const keys = Object.keys((params ?? {}) as object);
    if (keys.some((k) => k === 'config' || k.startsWith('file:'))) {
      throw new MeshError(
        'UNSUPPORTED',
        `failed to ${action} '${name}', a config or model files sent with the request are not supported: change the model repository and load again`,
      );
    }
  };

  const refuseRepositoryName = (p: Params) => {
    if (p.repository !== undefined) {
      throw new MeshError('INVALID_ARGUMENT', "'repository_name' specification is not supported");
    }
  };

  const load = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
    try {
      auth.requireAdmin(req.headers.authorization);
      refuseRepositoryName(req.params);
      const name = req.params.model;
      await readParameters(req, 'load', name);
      let model: RepositoryModel;
      try {
        model = await loadModel(deps.repositoryDir, name);
      } catch (err) {
        const detail =
          err instanceof ConfigError
            ? err.detail
            : err instanceof MeshError && err.code === 'MODEL_NOT_FOUND'
              ? 'failed to poll from model repository'
              : (err as Error).message;
        throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', ${detail}`);
      }
      states.setModel(model);
      await deps.prepareModel(model);
      const gen = await registry.setControl(name, 'load');
      deps.log?.info({ model: name, generation: gen }, 'load requested');
      const started = Date.now();
      let outcome: 'ready' | 'failed' | 'no-worker' | undefined;
      await states.until(() => {
        const eligible = states.eligible(name);
        const mine = eligible.flatMap((w) => w.models.filter((m) => m.model === name && m.generation >= gen));
        if (mine.some((m) => m.state === 'ready')) outcome = 'ready';
        else if (eligible.length > 0 && eligible.every((w) => states.answered(w, name, gen))) outcome = 'failed';
        else if (eligible.length === 0 && Date.now() - started > graceMs) outcome = 'no-worker';
        return outcome !== undefined;
      }, loadTimeoutMs);
      if (outcome === 'ready') return reply.code(200).send();
      const why =
        outcome === 'failed'
          ? (states
              .eligible(name)
              .flatMap((w) => w.models.filter((m) => m.model === name && m.error))
              .map((m) => m.error)[0] ?? 'the workers failed to load it')
          : outcome === 'no-worker'
            ? 'no live worker may serve it (runtime, --models or device_ids)'
            : `no worker had it ready within ${loadTimeoutMs / 1000} s`;
      throw new MeshError('INVALID_ARGUMENT', `failed to load '${name}', ${why}`);
    } catch (err) {
      return fail(reply, err);
    }
  };

  const unload = async (req: FastifyRequest<{ Params: Params }>, reply: FastifyReply) => {
    try {
      auth.requireAdmin(req.headers.authorization);
      refuseRepositoryName(req.params);
      const name = req.params.model;
      await readParameters(req, 'unload', name);
      if (!states.model(name)) {
        throw new MeshError('INVALID_ARGUMENT', `failed to unload '${name}', no model of that name is known`);
      }
      const gen = await registry.setControl(name, 'unload');
      deps.log?.info({ model: name, generation: gen }, 'unload requested');
      await states.refresh();
      const released = await states.until(
        () => states.workers.every((w) => !w.models.some((m) => m.model === name)),
        unloadTimeoutMs,
      );
      if (!released) deps.log?.warn({ model: name }, 'unload: a worker still holds the model');
      return reply.code(200).send();
    } catch (err) {
      return fail(reply, err);
    }
  };

  app.post('/v2/repository/models/:model/load', load);
  app.post('/v2/repository/models/:model/unload', unload);
  app.post('/v2/repository/:repository/models/:model/load', load);
  app.post('/v2/repository/:repository/models/:model/unload', unload);
}
