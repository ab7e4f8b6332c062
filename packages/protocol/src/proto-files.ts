import { fileURLToPath } from 'node:url';

/** Where the project's .proto files live (Triton's gRPC contract and grpc.health.v1). */
export const PROTO_DIR = fileURLToPath(new URL('../proto', import.meta.url));

/** The files a gRPC server or client loads: the inference service (it imports model_config.proto) and health. */
export const PROTO_FILES = ['grpc_service.proto', 'health.proto'] as const;

/**
 * How @grpc/proto-loader should read them, for the gateway and for clients
 * alike: proto field names, 64-bit integers as numbers (shapes, counts and
 * nanoseconds fit), enums by name, bytes as Buffers (raw tensor contents are
 * views of the received frame), unset scalars at their defaults, and the set
 * member of each oneof named in its `*_choice`.
 */
export const PROTO_LOADER_OPTIONS = {
  keepCase: true,
  longs: Number,
  enums: String,
  bytes: Buffer,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_DIR],
};
