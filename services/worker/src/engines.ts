import type { Engine, EngineModelSpec } from '@ge-mesh/runtime';
import { createOrtEngine } from '@ge-mesh/runtime-ort';

/** The runtimes a worker can run lanes on, by the name in its settings. */
export async function createEngine(spec: EngineModelSpec & { runtime?: string }): Promise<Engine> {
  switch (spec.runtime ?? 'ort') {
    case 'ort':
      return createOrtEngine(spec);
    case 'ge': {
      // Loaded only where used: it loads the native bridge.
      const { createGeEngine } = await import('@ge-mesh/runtime-ge');
      return createGeEngine(spec);
    }
    default:
      throw new Error(`runtime '${spec.runtime}' is not available in this worker`);
  }
}
