export * from './channel-acks.js';
export * from './connection.js';
export * from './topology.js';
