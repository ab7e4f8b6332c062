export * from './channel-acks.js';
export * from './connection.js';
export * from './delivery-parts.js';
export * from './topology.js';
