export * from './batch-store.js';
export * from './scripts.js';
