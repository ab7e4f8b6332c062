export * from './config-error.js';
export * from './model-config.js';
export { MODEL_CONFIG_SCHEMA } from './model-config-schema.js';
export { type ParseModelConfigOptions, modelConfigFromMessage, parseModelConfig } from './parse-model-config.js';
export { type LoadOptions, loadModel, loadRepository, resolveVersion } from './repository.js';
export type { EnumSchema, FieldSchema, MessageSchema, ScalarKind } from './text-format/schema.js';
export { type ParseTextProtoOptions, type TextMessage, parseTextProto } from './text-format/parser.js';
export { type FieldLocation, fieldLocation, sourcePosition, valuePosition } from './text-format/positions.js';
export { GE_DYNAMIC_DIMS_KEY, GE_INPUT_SHAPE_KEY, type TierSource, deriveTiers } from './tiers.js';
