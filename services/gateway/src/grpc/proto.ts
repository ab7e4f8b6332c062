import { PROTO_FILES, PROTO_LOADER_OPTIONS } from '@ge-mesh/protocol/proto';
import type { GrpcObject, ServiceClientConstructor } from '@grpc/grpc-js';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';

/** How messages look in JS: see PROTO_LOADER_OPTIONS. */
export const PROTO_OPTIONS: Options = PROTO_LOADER_OPTIONS;

export function loadDefinitions(options: Options = PROTO_OPTIONS): PackageDefinition {
  return loadSync([...PROTO_FILES], options);
}

export interface GrpcServices {
  readonly definitions: PackageDefinition;
  readonly inference: ServiceClientConstructor;
  readonly health: ServiceClientConstructor;
}

/** The two services, as server definitions and client constructors. */
export function loadServices(options: Options = PROTO_OPTIONS): GrpcServices {
  const definitions = loadDefinitions(options);
  const root = loadPackageDefinition(definitions);
  const inference = (root.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  const health = ((root.grpc as GrpcObject).health as GrpcObject).v1 as GrpcObject;
  return { definitions, inference, health: health.Health as ServiceClientConstructor };
}
