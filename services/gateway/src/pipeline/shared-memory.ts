import { MeshError } from '@ge-mesh/protocol';

/** Triton's two kinds of shared-memory region. */
export type SharedMemoryKind = 'system' | 'cuda';

/**
 * Triton's shared-memory extension, answered the same way on REST and gRPC.
 * The gateway cannot map a client's memory (it may run on another host than
 * the client, and the workers always do), so no region is ever registered:
 * registering is refused (CUDA as Triton refuses it on a server without GPUs),
 * status lists no region, and unregistering succeeds, as it does in Triton
 * for a region that is not registered.
 */
export function refuseRegistration(kind: SharedMemoryKind, name: string): never {
  if (kind === 'cuda')
    throw new MeshError(
      'INVALID_ARGUMENT',
      `failed to register CUDA shared memory region: '${name}', GPUs not supported`,
    );
  throw new MeshError(
    'UNSUPPORTED',
    `failed to register shared memory region: '${name}', shared memory is not supported; send tensors in the request`,
  );
}

/** Throws NOT_FOUND for a named region (none exists); for all regions, there are none. */
export function checkRegionStatus(kind: SharedMemoryKind, name: string | undefined): void {
  if (name !== undefined && name !== '')
    throw new MeshError('NOT_FOUND', `Unable to find ${kind} shared memory region: '${name}'`);
}
