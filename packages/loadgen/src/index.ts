export * from './closed-loop.js';
export * from './stats.js';
