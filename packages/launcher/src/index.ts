export * from './backoff.js';
export * from './mesh-processes.js';
export * from './try-it.js';
