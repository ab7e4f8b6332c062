export * from './connection.js';
export * from './topology.js';
