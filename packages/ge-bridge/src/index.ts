export * from './data-types.js';
export * from './errors.js';
export * from './ge-bridge.js';
export { BRIDGE_API_VERSION, bridgeLibraryPath, MAX_RANK } from './native-library.js';
