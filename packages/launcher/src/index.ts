export * from './mesh-processes.js';
