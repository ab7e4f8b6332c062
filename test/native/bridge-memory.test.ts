import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { batchTiers, deviceMemory, finalizeGe, GeBridgeError, GeModel, initGe } from '@ge-mesh/ge-bridge';
import { skipUnlessSimulator, tempDir, writeModel } from './support.js';

// A 1 MiB device, read by the simulator at aclInit (inside initGe).
const HBM_BYTES = 1024 * 1024;
const ACL_ERROR_RT_MEMORY_ALLOCATION = 207001;

function loadError(fn: () => unknown): GeBridgeError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof GeBridgeError, String(err));
    return err;
  }
  assert.fail('the load succeeded');
}

describe('device memory limits', { skip: skipUnlessSimulator }, () => {
  const tmp = tempDir('memory');
  let wide = '';
  let heavy = '';
  let small = '';

  before(() => {
    process.env.GEMESH_SIM_HBM_MB = '1';
    initGe();
    wide = writeModel(tmp.dir, 'wide', (g) => {
      g.output(g.op('Relu', [g.input('x', 'FP32', ['batch', 65536])], {}, 'y'), 'FP32', ['batch', 65536]);
    });
    heavy = writeModel(tmp.dir, 'heavy', (g) => {
      const w = g.floats('w', [512, 1024], new Float32Array(512 * 1024).fill(0.5));
      g.output(g.op('MatMul', [g.input('x', 'FP32', ['batch', 512]), w], {}, 'y'), 'FP32', ['batch', 1024]);
    });
    small = writeModel(tmp.dir, 'small', (g) => {
      g.output(g.op('Relu', [g.input('x', 'FP32', ['batch', 16])], {}, 'y'), 'FP32', ['batch', 16]);
    });
  });

  after(() => {
    finalizeGe();
    tmp.cleanup();
  });

  test('the device reports the configured HBM capacity, all free', () => {
    assert.deepEqual(deviceMemory(0), { freeBytes: HBM_BYTES, totalBytes: HBM_BYTES });
  });

  test('I/O buffers past the HBM capacity fail with the ACL allocation error, leaking nothing', () => {
    const err = loadError(() =>
      GeModel.load({
        modelPath: wide,
        deviceId: 0,
        streams: 1,
        inputs: [{ name: 'x', dataType: 'FP32' }],
        tiers: batchTiers([[65536]], [8]),
      }),
    );
    assert.equal(err.status, 'OUT_OF_MEMORY');
    assert.equal(err.nativeCode, ACL_ERROR_RT_MEMORY_ALLOCATION);
    assert.match(
      err.message,
      /^aclrtMalloc of 2097152 bytes for input 'x' of graph \d+ \(tier 0, stream 0\) failed \(ACL error 207001\)/,
    );
    assert.ok(
      err.message.includes(
        'ACL: EL0004: aclrtMalloc failed: out of device memory on device 0: requested 2097152 bytes',
      ),
      err.message,
    );
    assert.equal(deviceMemory(0).freeBytes, HBM_BYTES);
  });

  test('weights past the HBM capacity fail LoadGraph, leaking nothing', () => {
    const err = loadError(() =>
      GeModel.load({
        modelPath: heavy,
        deviceId: 0,
        streams: 1,
        inputs: [{ name: 'x', dataType: 'FP32' }],
        tiers: batchTiers([[512]], [1]),
      }),
    );
    assert.equal(err.status, 'LOAD');
    assert.ok(err.message.includes('LoadGraph of graph'), err.message);
    assert.ok(err.message.includes('cannot allocate weight memory: out of device memory on device 0'), err.message);
    assert.equal(deviceMemory(0).freeBytes, HBM_BYTES);
  });

  test('what fits loads, is charged, and is returned on destroy', () => {
    const model = GeModel.load({
      modelPath: small,
      deviceId: 0,
      streams: 2,
      inputs: [{ name: 'x', dataType: 'FP32' }],
      tiers: batchTiers([[16]], [1, 4]),
    });
    // Per (stream, tier): one input and one output buffer of 64·batch bytes, each
    // charged as aclrtMalloc does (rounded up to 32 B, plus 32 B).
    const charged = 2 * (2 * (64 + 32) + 2 * (256 + 32));
    assert.equal(HBM_BYTES - deviceMemory(0).freeBytes, charged);
    model.destroy();
    assert.equal(deviceMemory(0).freeBytes, HBM_BYTES);
  });
});
