export * from './batch-store.js';
export * from './connect.js';
export * from './queue-policy.js';
export * from './redis-health.js';
export * from './response-cache.js';
export * from './runtime-settings.js';
export * from './scripts.js';
export * from './worker-registry.js';
