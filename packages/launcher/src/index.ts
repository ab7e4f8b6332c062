export * from './backoff.js';
export * from './mesh-processes.js';
