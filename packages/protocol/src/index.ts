export * from './datatypes.js';
export * from './errors.js';
export * from './messages.js';
