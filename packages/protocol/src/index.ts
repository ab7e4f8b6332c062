export * from './awaited-replies.js';
export * from './bytes-elements.js';
export * from './datatypes.js';
export * from './errors.js';
export * from './ingress.js';
export * from './messages.js';
