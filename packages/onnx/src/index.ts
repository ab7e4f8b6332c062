export * from './codec.js';
export * from './data-types.js';
export * from './fix-leading-dim.js';
export * from './graph-splice.js';
export * from './model-io.js';
export * from './types.js';
