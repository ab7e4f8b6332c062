// worker_threads do not inherit the TypeScript loader of the main thread on
// Node 20, so each benchmark lane registers it before loading its TypeScript body.
import { register } from 'tsx/esm/api';

register();
await import('./engine-lane.ts');
