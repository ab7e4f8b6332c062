export * from './config-error.js';
export { configTextFromJson } from './config-json.js';
export { checkEnsembleSteps } from './ensemble-config.js';
export {
  checkGeOption,
  GeParameterError,
  type GeParameters,
  type PlacementParameters,
  parseGeParameters,
  parseGlobalGeOptions,
  parsePlacementParameters,
} from './ge-parameters.js';
export * from './gears.js';
export * from './model-config.js';
export { MODEL_CONFIG_SCHEMA } from './model-config-schema.js';
export {
  checkOverridePath,
  loadModelOrOverride,
  loadOverriddenModel,
  type ModelOverride,
  overrideId,
  overrideStagingDir,
} from './model-override.js';
export { modelConfigFromMessage, type ParseModelConfigOptions, parseModelConfig } from './parse-model-config.js';
export { type LoadOptions, loadModel, loadRepository, resolveVersion, sameModel } from './repository.js';
export { type ParseTextProtoOptions, parseTextProto, type TextMessage } from './text-format/parser.js';
export { type FieldLocation, fieldLocation, sourcePosition, valuePosition } from './text-format/positions.js';
export type { EnumSchema, FieldSchema, MessageSchema, ScalarKind } from './text-format/schema.js';
export { deriveTiers, GE_DYNAMIC_DIMS_KEY, GE_INPUT_SHAPE_KEY, type TierSource } from './tiers.js';
export { checkUnhonouredFields, UNHONOURED_FIELDS } from './unhonoured-fields.js';
