export * from './catalog.js';
export * from './ensure.js';
export * from './gear-models.js';
export * from './sample-inputs.js';
