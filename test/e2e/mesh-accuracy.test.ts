import { defineAccuracySuite } from '../support/accuracy-suite.js';
import { startTestMesh } from '../support/mesh-harness.js';

/**
 * The three services as separate processes on the real RabbitMQ and Redis,
 * runtime `ort`. Tolerance: 1e-4 + 1e-3·|reference| per element: the mesh
 * runs the same onnxruntime on a batch-specialised copy of the graph, so only
 * kernel blocking differs (observed differences are ~1e-6).
 */
defineAccuracySuite({
  title: 'end to end: gateway → batcher → worker (ort)',
  start: () => startTestMesh({ workers: 1 }),
  atol: 1e-4,
  rtol: 1e-3,
});
