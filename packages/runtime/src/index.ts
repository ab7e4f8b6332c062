export * from './batch-layout.js';
export * from './buffer-pool.js';
export * from './engine.js';
export * from './gear-layout.js';
