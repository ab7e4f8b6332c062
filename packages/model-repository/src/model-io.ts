import { readModelIO } from '@ge-mesh/onnx';
import type { DataType } from '@ge-mesh/protocol';
import type { TensorConfig } from './model-config.js';

/** One model input or output as the model file declares it (full shape, batch dim included). */
export interface ModelFileTensor {
  readonly name: string;
  readonly dataType: DataType | undefined;
  readonly dims: readonly number[];
  /** False when the file gives no shape at all; absent = known. */
  readonly shapeKnown?: boolean;
}

export interface ModelFileIO {
  readonly inputs: readonly ModelFileTensor[];
  readonly outputs: readonly ModelFileTensor[];
}

/** Reads an ONNX model's graph inputs and outputs (weights are not decoded). */
export function readModelFileIO(bytes: Uint8Array): ModelFileIO {
  return readModelIO(bytes);
}

/** Why a model-file tensor cannot become a TensorConfig; the caller adds file and position. */
export class ModelIOError extends Error {}

/**
 * Turns the model file's tensors into config tensors, as Triton's auto-complete
 * does: with `maxBatchSize > 0` the model's leading dim is the batch dim and is
 * dropped, and a tensor that is only a batch dim becomes dims [1] with an
 * empty reshape. Inputs come out non-optional.
 */
export function tensorsFromModel(
  tensors: readonly ModelFileTensor[],
  role: 'input' | 'output',
  maxBatchSize: number,
  /**
   * Whether a fixed first dim rules out batching, as in Triton's onnxruntime backend. The GE runtime
   * compiles each tier with its own shapes, so there a fixed first dim is only the export's.
   */
  batchNeedsVariableFirstDim = false,
): TensorConfig[] {
  return tensors.map((t) => {
    if (t.dataType === undefined) {
      throw new ModelIOError(
        `model ${role} '${t.name}' has an element type with no KServe datatype, so GE Mesh cannot serve it`,
      );
    }
    if (t.shapeKnown === false) {
      throw new ModelIOError(
        `model ${role} '${t.name}' has no shape in the model file; list the ${role} with its dims in config.pbtxt`,
      );
    }
    if (maxBatchSize > 0 && t.dims.length === 0) {
      throw new ModelIOError(
        `model ${role} '${t.name}' is a scalar, so it has no batch dim, but max_batch_size is ${maxBatchSize}; set max_batch_size: 0 or list the ${role} in config.pbtxt`,
      );
    }
    const first = t.dims[0] as number;
    if (maxBatchSize > 0 && batchNeedsVariableFirstDim && first !== -1) {
      throw new ModelIOError(
        `model ${role} '${t.name}' has a fixed first dim (${first}), so the model takes no batch of rows, but max_batch_size is ${maxBatchSize}; set max_batch_size: 0, or export the model with a variable first dim`,
      );
    }
    const dims = maxBatchSize > 0 ? t.dims.slice(1) : [...t.dims];
    // A [batch] tensor: Triton's convention is dims [1] reshaped to [] (a config needs rank >= 1).
    if (maxBatchSize > 0 && dims.length === 0) {
      return { name: t.name, dataType: t.dataType, dims: [1], optional: false, reshape: [] };
    }
    return { name: t.name, dataType: t.dataType, dims, optional: false };
  });
}
