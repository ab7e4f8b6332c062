import { PROTO_DIR, PROTO_FILES } from '@ge-mesh/protocol/proto';
import type { GrpcObject, ServiceClientConstructor } from '@grpc/grpc-js';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';

/**
 * How messages look in JS: proto field names, 64-bit integers as numbers
 * (shapes, counts and nanoseconds fit), enums by name, bytes as Buffers
 * (raw tensor contents are views of the received frame), unset scalars at
 * their defaults, and the set member of each oneof named in its `*_choice`.
 */
export const PROTO_OPTIONS: Options = {
  keepCase: true,
  longs: Number,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};

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
