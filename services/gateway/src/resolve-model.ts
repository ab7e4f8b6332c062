import type { RepositoryModel } from '@ge-mesh/model-repository';
import { MeshError, TRITON_MESSAGES } from '@ge-mesh/protocol';
import type { ModelStates } from './model-states.js';

/** Versions are integers, as in Triton's route regexes; anything else is an unknown path. */
const VERSION = /^[0-9]+$/;
/** What std::stol can read a number from: optional space and sign, then a digit. */
const STOL_READS = /^\s*[+-]?[0-9]/;

/** A version as the mesh names it ("01" → "1"); NOT_FOUND for a non-integer. */
export function canonicalVersion(v: string): string {
  if (!VERSION.test(v)) throw new MeshError('NOT_FOUND', TRITON_MESSAGES.notFound);
  return BigInt(v).toString();
}

/**
 * The model and version a request names, with Triton's errors: an unknown
 * model or version is 404, a named version that is not ready 503 ("... is
 * not at ready state"), no version given and none ready 404 ("... has no
 * available versions"). Without a version, the highest ready one is used.
 */
export function resolveModel(
  states: ModelStates,
  name: string,
  version?: string,
): { model: RepositoryModel; version: string } {
  const model = states.model(name);
  if (!model) throw new MeshError('MODEL_NOT_FOUND', TRITON_MESSAGES.unknownModel(name));
  if (version === undefined) {
    const latest = states.readyVersions(name)[0];
    if (latest === undefined) {
      throw new MeshError('MODEL_NOT_FOUND', `Request for unknown model: '${name}' has no available versions`);
    }
    return { model, version: latest };
  }
  const v = canonicalVersion(version);
  const state = states.versionState(name, v);
  if (state === undefined) throw new MeshError('MODEL_VERSION_NOT_FOUND', TRITON_MESSAGES.unknownVersion(name, v));
  if (state !== 'READY') {
    throw new MeshError('UNAVAILABLE', `Request for unknown model: '${name}' version ${v} is not at ready state`);
  }
  return { model, version: v };
}

/**
 * A version sent as a message field, read as Triton's front ends read it (std::stol): text that
 * does not start with an integer is INVALID_ARGUMENT, with Triton's text.
 */
export function checkVersionField(version: string): void {
  if (version === '' || STOL_READS.test(version)) return;
  throw new MeshError(
    'INVALID_ARGUMENT',
    `failed to get model version from specified version string '${version}' (details: stol), version should be an integral value > 0`,
  );
}

/**
 * `resolveModel` for a version sent as a message field (AMQP, gRPC) rather
 * than a path segment: empty means none, and a version that is not an
 * integer is an unknown version, not an unknown route.
 */
export function resolveNamedModel(
  states: ModelStates,
  name: string,
  version: string | undefined,
): { model: RepositoryModel; version: string } {
  if (version === undefined || version === '') return resolveModel(states, name);
  checkVersionField(version);
  if (!VERSION.test(version)) {
    throw new MeshError('MODEL_VERSION_NOT_FOUND', TRITON_MESSAGES.unknownVersion(name, version));
  }
  return resolveModel(states, name, version);
}
