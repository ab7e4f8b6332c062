/**
 * The baseline a user would otherwise write: one HTTP server process that
 * runs each KServe v2 request on its own, in-process, with no batching and no
 * broker (the same request codec as the gateway, so only the architecture
 * differs). `--runtime ge` runs the model through the native GE bridge (the
 * simulator in timing mode in the benchmark) instead of onnxruntime, on as
 * many streams as the mesh's worker gives the model on one device (one
 * worker_thread and engine per stream, each request on an idle one), so a
 * comparison with the mesh isolates batching.
 *
 *   node --import tsx test/bench/naive-server.ts --repo DIR --model tiny --port 18100 [--runtime ort|ge] [--lanes N]
 */
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import { loadModel } from '@ge-mesh/model-repository';
import { elementCount } from '@ge-mesh/protocol';
import type { EngineModelSpec, EngineTensor } from '@ge-mesh/runtime';
import { createOrtEngine } from '@ge-mesh/runtime-ort';
import { encodeInferResponse, parseInferBody, validateInfer } from '../../services/gateway/src/infer/index.js';
import { placeModel } from '../../services/worker/src/lane-plan.js';
import { engineSpecOf } from '../support/engine-spec.js';
import { errorBody, errorStatus } from '../support/triton-error-body.js';
import { EngineLanes } from './engine-lanes.js';
import { modelMetadataJson } from './model-metadata.js';

const { values } = parseArgs({
  options: {
    repo: { type: 'string' },
    model: { type: 'string' },
    port: { type: 'string', default: '18100' },
    runtime: { type: 'string', default: 'ort' },
    lanes: { type: 'string' },
  },
});
const model = await loadModel(values.repo ?? 'infra/model_repository', values.model ?? 'tiny');
const batched = model.config.maxBatchSize > 0;
// Sessions for every batch size a request may have (1..max): no padding, no batching.
const tiers = batched ? Array.from({ length: model.config.maxBatchSize }, (_, i) => i + 1) : [1];
const spec: EngineModelSpec = engineSpecOf(model, { tiers });
/** The streams a mesh worker gives this model on one device, by the worker's own rule (instance_group, device_exec_blocks). */
const streams = () => Number(values.lanes ?? 0) || placeModel(model.config, [0], 1).lanesPerDevice;
// onnxruntime runs one in-process session on every core; GE gets one lane per stream, since
// the bridge blocks the thread it runs on and a device's streams run in parallel.
const engine =
  values.runtime === 'ge'
    ? await EngineLanes.start(
        Array.from({ length: streams() }, (_, stream) => ({ ...spec, stream, threads: 1 })),
        'ge',
      )
    : await createOrtEngine(spec);

const metadata = modelMetadataJson(model, spec.version);

const server = createServer((req, res) => {
  if (req.method === 'GET') {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(metadata);
    return;
  }
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', async () => {
    try {
      const header = req.headers['inference-header-content-length'];
      const parsed = parseInferBody(
        Buffer.concat(chunks),
        header === undefined ? undefined : Number(header),
        model.name,
      );
      const v = validateInfer(parsed, model.config);
      const inputs = new Map<string, EngineTensor>(v.inputs.map((t) => [t.name, { data: t.data, shape: t.shape }]));
      const out = await engine.run(batched ? v.batch : 1, inputs);
      const outputs = model.config.output.map((o) => {
        const t = out.get(o.name);
        if (!t) throw new Error(`no output ${o.name}`);
        return {
          name: o.name,
          datatype: o.dataType,
          shape: [...t.shape],
          data: t.data.slice(0, elementCount(t.shape) * 4),
        };
      });
      const enc = encodeInferResponse(
        { model: model.name, version: spec.version, outputs },
        v.outputs,
        v.binaryDataOutput,
      );
      res.writeHead(200, {
        'content-type': enc.contentType,
        ...(enc.headerLength !== undefined ? { 'inference-header-content-length': String(enc.headerLength) } : {}),
      });
      res.end(enc.body);
    } catch (err) {
      res.writeHead(errorStatus(err), { 'content-type': 'application/json' });
      res.end(errorBody(err));
    }
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(values.port), '127.0.0.1', () => process.stdout.write(`naive server ready on ${values.port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
