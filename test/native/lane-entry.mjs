// worker_threads do not inherit the main thread's TypeScript loader on Node 20:
// register it, then load the lane.
import { register } from 'tsx/esm/api';

register();
await import('./lane-worker.ts');
