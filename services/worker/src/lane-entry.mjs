// worker_threads do not inherit the TypeScript loader of the main thread on
// Node 20, so each lane registers it before loading its TypeScript entry.
import { register } from 'tsx/esm/api';

register();
await import('./lane.ts');
