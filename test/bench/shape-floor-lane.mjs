// The floor's lane: what a mesh lane does around its engine and nothing else.
// It decodes a batch, answers each member with output-sized bytes, and hands
// back one reply per reply queue, moved (not copied) to the main thread.
import { parentPort, workerData } from 'node:worker_threads';
import { pack, unpack } from 'msgpackr';

const output = Buffer.alloc(workerData.outputBytes);

parentPort.on('message', (m) => {
  /** @type {[string, Array<[string, string, Uint8Array]>]} [batchId, [replyTo, correlationId, body][]] */
  const [, members] = unpack(m.batch);
  const groups = new Map();
  for (const [replyTo, id] of members) {
    let g = groups.get(replyTo);
    if (!g) groups.set(replyTo, (g = []));
    g.push([id, output]);
  }
  const replies = [...groups].map(([replyTo, answers]) => {
    const packed = pack(answers);
    // pack() returns a view of msgpackr's shared buffer: copy it out so it can be moved.
    return { replyTo, body: new Uint8Array(packed) };
  });
  parentPort.postMessage(
    { seq: m.seq, replies },
    replies.map((r) => r.body.buffer),
  );
});
