import { fileURLToPath } from 'node:url';

/** Where the project's .proto files live (Triton's gRPC contract and grpc.health.v1). */
export const PROTO_DIR = fileURLToPath(new URL('../proto', import.meta.url));

/** The files a gRPC server or client loads: the inference service (it imports model_config.proto) and health. */
export const PROTO_FILES = ['grpc_service.proto', 'health.proto'] as const;
