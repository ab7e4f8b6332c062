import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMON_OPTIONS, loadSettings } from '@ge-mesh/settings';
import { hashTag, parseClusterUrl, SCRIPT_NAMES, scriptSource } from '@ge-mesh/store';

/** Redis URLs (one node or a Cluster), hash tags, and the Lua include expansion; no Redis needed. */
describe('redis connection settings and scripts', () => {
  it('parses cluster URLs; other URLs are single nodes', () => {
    assert.deepEqual(parseClusterUrl('redis+cluster://10.0.0.1:7000,10.0.0.2:7001'), {
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
      ],
      tls: false,
    });
    assert.deepEqual(parseClusterUrl('rediss+cluster://app:p%40ss@redis-a,[::1]:7002/'), {
      nodes: [
        { host: 'redis-a', port: 6379 },
        { host: '::1', port: 7002 },
      ],
      username: 'app',
      password: 'p@ss',
      tls: true,
    });
    assert.deepEqual(parseClusterUrl('redis+cluster://:secret@h:1')?.password, 'secret');
    assert.equal(parseClusterUrl('redis://127.0.0.1:6379'), null);
    assert.equal(parseClusterUrl('rediss://h:6380/0'), null);
    assert.throws(() => parseClusterUrl('redis+cluster://h:1,,h:2'), /invalid node '' in Redis cluster URL/);
  });

  it('accepts single-node and cluster URLs in --redis-url, and nothing else', () => {
    const spec = { redisUrl: COMMON_OPTIONS.redisUrl };
    for (const url of ['redis://r:6379', 'rediss://r:6380', 'redis+cluster://a:1,b:2', 'rediss+cluster://a:1']) {
      assert.equal(loadSettings('t', spec, ['--redis-url', url], {}).redisUrl, url);
    }
    assert.throws(() => loadSettings('t', spec, ['--redis-url', 'http://r:6379'], {}), /invalid value/);
  });

  it('hashes a key by its first non-empty {tag}, as Redis Cluster does', () => {
    assert.equal(hashTag('{ns:tiny}:claim:r1'), 'ns:tiny');
    assert.equal(hashTag('{ns}:lease:n:cpu:0'), 'ns');
    assert.equal(hashTag('{}:x{y}'), '{}:x{y}');
    assert.equal(hashTag('plain'), 'plain');
  });

  it('expands each include once, and the claim rule is written once', () => {
    for (const name of SCRIPT_NAMES) {
      const src = scriptSource(name);
      assert.doesNotMatch(src, /@include/, name);
      assert.ok((src.match(/local function claimTaken/g) ?? []).length <= 1, name);
      // Only the snippet reads a claim's owner's state; no script builds a key itself.
      assert.doesNotMatch(src, /\.\. owner/, name);
    }
    const users = SCRIPT_NAMES.filter((n) => scriptSource(n).includes('local function claimTaken'));
    assert.deepEqual(users, ['create-batch', 'expire-request', 'reclaim-request']);
  });
});
