import assert from 'node:assert/strict';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, SERVICE_NODE_FLAGS } from '@ge-mesh/launcher';
import { envOf, type SettingsSpec } from '@ge-mesh/settings';
import { parse } from 'yaml';
import { BATCHER_OPTIONS } from '../../services/batcher/src/settings.js';
import { GATEWAY_OPTIONS } from '../../services/gateway/src/settings.js';
import { WORKER_OPTIONS } from '../../services/worker/src/settings.js';

/**
 * docker-compose.yml, docker-compose.ascend.yml and the Dockerfile checked
 * statically (no Docker engine runs here): the services and their
 * healthchecks, images and build targets, that every GEMESH_* variable a
 * service gets is one of its settings, that the workers can be scaled
 * (no fixed name, port or device id), the NPU pass-through of the Ascend
 * override, and that every file they reference exists in the repository.
 */
type Service = {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string; args?: Record<string, string> };
  environment?: Record<string, string>;
  command?: string[] | string;
  healthcheck?: { test: string[]; interval?: string; start_period?: string };
  volumes?: string[];
  devices?: string[];
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  restart?: string;
  container_name?: string;
  stop_grace_period?: string;
  user?: string;
  profiles?: string[];
  expose?: string[];
};
type Compose = { name?: string; services: Record<string, Service>; volumes?: Record<string, unknown> };

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const load = (file: string) => parse(read(file), { merge: true }) as Compose;

/** Compose interpolation with no variable set: `${X:-default}` → default, `${X}` → '', `$$` → `$`. */
function interpolate<T>(v: T): T {
  if (typeof v === 'string') {
    return v
      .replace(/\$\{[A-Z0-9_]+:?-([^}]*)\}/g, '$1')
      .replace(/\$\{[A-Z0-9_]+\}/g, '')
      .replace(/\$\$/g, '$') as T;
  }
  if (Array.isArray(v)) return v.map(interpolate) as T;
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, interpolate(x)])) as T;
  return v;
}

/** docker compose -f a -f b: mappings merge, the override's scalars and sequences win (devices/volumes append). */
function merge(base: Compose, over: Compose): Compose {
  const services = { ...base.services };
  for (const [name, o] of Object.entries(over.services)) {
    const b = services[name] ?? {};
    services[name] = {
      ...b,
      ...o,
      environment: { ...b.environment, ...o.environment },
      volumes: [...(b.volumes ?? []), ...(o.volumes ?? [])],
      devices: [...(b.devices ?? []), ...(o.devices ?? [])],
      ...(b.healthcheck || o.healthcheck
        ? { healthcheck: { ...b.healthcheck, ...o.healthcheck } as Service['healthcheck'] }
        : {}),
    };
  }
  return { ...base, services };
}

const dockerfile = read('infra/docker/Dockerfile');
const stages = [...dockerfile.matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gm)].map((m) => m[1]);
const SETTINGS: Record<string, SettingsSpec> = {
  gateway: GATEWAY_OPTIONS,
  batcher: BATCHER_OPTIONS,
  worker: WORKER_OPTIONS,
};

/** Files of the repository a service references: bind mounts, build files, scripts it runs. */
function referencedFiles(s: Service): string[] {
  const files: string[] = [];
  for (const v of s.volumes ?? []) {
    const src = v.split(':')[0] ?? '';
    if (src.startsWith('./')) files.push(src.slice(2));
  }
  if (s.build) files.push(join(s.build.context, s.build.dockerfile));
  const words = [...(s.healthcheck?.test ?? []), ...(Array.isArray(s.command) ? s.command : [s.command ?? ''])];
  for (const w of words.flatMap((x) => x.split(/\s+/))) {
    if (/^(infra|services|packages|native)\/[\w./-]+\.(ts|mjs|sh|js)$/.test(w)) files.push(w);
  }
  return files;
}

describe('docker compose (static)', () => {
  const compose = interpolate(load('docker-compose.yml'));
  const s = compose.services;

  it('has RabbitMQ, Redis, the model repository init, the gateway, the batcher and the workers', () => {
    const mesh = Object.keys(s).filter((name) => s[name]?.profiles === undefined);
    assert.deepEqual(mesh.sort(), ['batcher', 'gateway', 'models', 'rabbitmq', 'redis', 'worker']);
    assert.match(s.rabbitmq?.image ?? '', /^rabbitmq:3\.\d+/);
    assert.match(s.redis?.image ?? '', /^redis:7\.\d+/);
    assert.deepEqual(Object.keys(compose.volumes ?? {}).sort(), ['models', 'rabbitmq-data', 'redis-data']);
  });

  it('observability profile: Prometheus scrapes the port each service serves metrics on; Grafana, Jaeger', () => {
    const observability = Object.keys(s).filter((name) => s[name]?.profiles?.includes('observability'));
    assert.deepEqual(observability.sort(), ['grafana', 'jaeger', 'prometheus']);
    const scrape = read('infra/prometheus/prometheus.yml');
    for (const svc of ['gateway', 'batcher']) {
      const port = s[svc]?.environment?.GEMESH_METRICS_PORT;
      assert.ok(port && scrape.includes(`"${svc}:${port}"`), `${svc} scraped on ${port}`);
    }
    const workerPort = s.worker?.environment?.GEMESH_METRICS_PORT ?? '';
    assert.match(scrape, new RegExp(`names: \\["worker"\\]\\s+type: A\\s+port: ${workerPort}`));
    assert.deepEqual(s.worker?.expose, [workerPort]);
    assert.ok(s.grafana?.volumes?.some((v) => v.startsWith('./infra/grafana/ge-mesh-dashboard.json:')));
  });

  it('persists Redis: an append-only file fsynced every second, on a volume', () => {
    const conf = read('infra/redis/redis.conf');
    assert.match(conf, /^appendonly yes$/m);
    assert.match(conf, /^appendfsync everysec$/m);
    assert.doesNotMatch(conf, /^appendonly no$/m);
    // The AOF lands in Redis's dir: the image's working directory /data unless the conf says otherwise.
    const dir = /^dir (\S+)$/m.exec(conf)?.[1] ?? '/data';
    assert.ok(s.redis?.volumes?.includes(`redis-data:${dir}`), `redis-data mounted at ${dir}`);
    const command = s.redis?.command as string[];
    assert.deepEqual(command.slice(0, 2), ['redis-server', '/usr/local/etc/redis/redis.conf']);
    const flag = (name: string) => command[command.indexOf(name) + 1];
    assert.equal(flag('--appendonly'), 'yes');
    assert.equal(flag('--appendfsync'), 'everysec');
  });

  it('gives every long-running service a healthcheck and a restart policy, and starts the mesh after its infrastructure', () => {
    for (const name of ['rabbitmq', 'redis', 'gateway', 'batcher', 'worker']) {
      const svc = s[name];
      assert.ok(svc?.healthcheck?.test?.[0] === 'CMD', `${name} healthcheck`);
      assert.equal(svc.restart, 'unless-stopped', `${name} restart`);
    }
    assert.equal(s.models?.restart, 'no');
    for (const name of ['gateway', 'batcher', 'worker']) {
      assert.deepEqual(s[name]?.depends_on, {
        rabbitmq: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
        models: { condition: 'service_completed_successfully' },
      });
    }
    assert.deepEqual(s.worker?.healthcheck?.test, [
      'CMD',
      'node',
      '--import',
      'tsx',
      'services/worker/src/healthcheck.ts',
    ]);
    assert.deepEqual(s.gateway?.healthcheck?.test?.slice(-2), ['http', 'http://127.0.0.1:8000/v2/health/live']);
  });

  it('builds the services from the Dockerfile targets, one image each', () => {
    assert.deepEqual(stages, ['workspace', 'gateway', 'batcher', 'worker', 'worker-ascend']);
    for (const [name, target] of [
      ['gateway', 'gateway'],
      ['batcher', 'batcher'],
      ['worker', 'worker'],
      ['models', 'worker'],
    ] as const) {
      assert.deepEqual(s[name]?.build, { context: '.', dockerfile: 'infra/docker/Dockerfile', target }, name);
      assert.ok(stages.includes(target));
      assert.match(s[name]?.image ?? '', new RegExp(`^ge-mesh/${target}:`));
    }
    // tsx (a root devDependency) runs the services: NODE_ENV=production only after the install.
    for (const stage of dockerfile.split(/^FROM /m).slice(1)) {
      const install = stage.indexOf('pnpm install');
      const prod = stage.indexOf('NODE_ENV=production');
      if (install >= 0) assert.ok(prod > install, 'NODE_ENV=production before pnpm install drops tsx');
    }
    // Each service stage runs its service's entry point.
    for (const svc of ['gateway', 'batcher', 'worker']) {
      assert.ok(dockerfile.includes(`"services/${svc}/src/main.ts"`), svc);
    }
  });

  it('sets only real settings, points every service at the compose broker and Redis, and serves one repository', () => {
    for (const name of ['gateway', 'batcher', 'worker']) {
      const env = s[name]?.environment ?? {};
      const known = new Set(Object.keys(SETTINGS[name] ?? {}).map(envOf));
      for (const key of Object.keys(env).filter((k) => k.startsWith('GEMESH_'))) {
        assert.ok(known.has(key), `${name}: ${key} is not a ${name} setting`);
      }
      const heartbeat = name === 'worker' ? '?heartbeat=5' : '';
      assert.equal(env.GEMESH_RABBITMQ_URL, `amqp://gemesh:gemesh@rabbitmq:5672${heartbeat}`);
      assert.equal(env.GEMESH_REDIS_URL, 'redis://redis:6379');
      assert.equal(env.GEMESH_MODEL_REPOSITORY, '/models');
      assert.ok(s[name]?.volumes?.includes('models:/models:ro'), `${name} mounts the repository`);
    }
    assert.deepEqual(s.rabbitmq?.environment, { RABBITMQ_DEFAULT_USER: 'gemesh', RABBITMQ_DEFAULT_PASS: 'gemesh' });
    assert.ok(s.models?.volumes?.includes('models:/models'));
    assert.equal(s.worker?.environment?.GEMESH_RUNTIME, 'ort');
    assert.deepEqual(s.gateway?.ports, ['8000:8000', '8001:8001', '8002:8002']);
  });

  it('lets the workers scale: no fixed name, host port or device id; leases by machine; a drain fits the grace period', () => {
    const w = s.worker as Service;
    assert.equal(w.container_name, undefined);
    assert.equal(w.ports, undefined);
    const env = w.environment ?? {};
    assert.ok(!('GEMESH_DEVICE_ID' in env) && !('GEMESH_DEVICE_IDS' in env));
    assert.equal(env.GEMESH_NODE, 'local');
    const grace = Number(/^(\d+)s$/.exec(w.stop_grace_period ?? '')?.[1]);
    assert.ok(grace * 1000 > Number(WORKER_OPTIONS.drainTimeoutMs.default), `grace ${grace} s`);
  });

  it('references only files that exist (the entrypoint executable)', () => {
    const files = new Set(Object.values(s).flatMap(referencedFiles));
    for (const f of ['infra/rabbitmq/rabbitmq.conf', 'infra/redis/redis.conf', 'infra/docker/Dockerfile']) {
      assert.ok(files.has(f), f);
    }
    for (const f of files) assert.ok(existsSync(join(ROOT, f)), `${f} is missing`);
    // What the Dockerfile copies and runs.
    for (const m of dockerfile.matchAll(/^COPY\s+(\S+)\s+\S+$/gm)) {
      assert.ok(existsSync(join(ROOT, m[1] as string)), `COPY ${m[1]}`);
    }
    for (const m of dockerfile.matchAll(/"((?:services|infra)\/[\w./-]+)"/g)) {
      assert.ok(existsSync(join(ROOT, m[1] as string)), m[1]);
    }
    accessSync(join(ROOT, 'infra/docker/worker-ascend-entrypoint.sh'), constants.X_OK);
    assert.ok(statSync(join(ROOT, 'infra/docker/Dockerfile.dockerignore')).isFile());
    // Redis must never evict coordination state; RabbitMQ carries the gateway's largest bodies.
    assert.match(read('infra/redis/redis.conf'), /^maxmemory-policy noeviction$/m);
    const maxMessage = Number(/^max_message_size = (\d+)$/m.exec(read('infra/rabbitmq/rabbitmq.conf'))?.[1]);
    assert.ok(maxMessage > Number(GATEWAY_OPTIONS.maxBodyBytes.default));
  });

  it('docker-compose.ascend.yml: NPU workers with the devices and driver of the host', () => {
    const over = interpolate(load('docker-compose.ascend.yml'));
    assert.deepEqual(Object.keys(over.services), ['worker']);
    const w = merge(compose, over).services.worker as Service;
    assert.deepEqual(
      { ...w.build, args: undefined },
      { context: '.', dockerfile: 'infra/docker/Dockerfile', target: 'worker-ascend', args: undefined },
    );
    assert.equal(w.environment?.GEMESH_RUNTIME, 'ge');
    const known = new Set(Object.keys(WORKER_OPTIONS).map(envOf));
    for (const key of Object.keys(w.environment ?? {}).filter((k) => k.startsWith('GEMESH_'))) {
      assert.ok(known.has(key), `worker: ${key} is not a worker setting`);
    }
    for (const d of ['/dev/davinci_manager', '/dev/devmm_svm', '/dev/hisi_hdc', '/dev/davinci0']) {
      assert.ok(w.devices?.includes(d), d);
    }
    assert.ok(w.volumes?.includes('/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro'), 'the host driver');
    // The toolkit is the image's: one mounted over it would not be the one the bridge was built against.
    assert.ok(!w.volumes?.some((v) => v.includes('ascend-toolkit')), `${w.volumes}`);
    assert.ok(!('ASCEND_TOOLKIT_HOME' in (w.environment ?? {})), 'the image sets ASCEND_TOOLKIT_HOME');
    assert.ok(w.volumes?.includes('models:/models:ro'), 'still serves the repository');
    assert.equal(w.healthcheck?.test?.[0], 'CMD');
    // No build at start: the start period only covers loading the models.
    assert.equal(w.healthcheck?.start_period, '180s');
  });

  it("the Ascend image builds the GE bridge at image build time against its base image's toolkit, not at start", () => {
    const w = interpolate(load('docker-compose.ascend.yml')).services.worker as Service;
    // A build arg names the base image (and where its toolkit lives); compose passes both, same defaults.
    const globalArg = (name: string) =>
      new RegExp(`^ARG ${name}=(\\S+)$`, 'm').exec(dockerfile.slice(0, dockerfile.indexOf('FROM ')))?.[1];
    const baseImage = globalArg('ASCEND_BASE_IMAGE');
    assert.match(baseImage ?? '', /^ascend\/cann:\d+\.\d+\.\w+-\w+-[\w.]+-py[\d.]+$/);
    assert.equal(w.build?.args?.ASCEND_BASE_IMAGE, baseImage);
    const from = /^FROM \$\{ASCEND_BASE_IMAGE\} AS worker-ascend$/m.exec(dockerfile);
    assert.ok(from, 'worker-ascend is built on the base image');
    const stage = dockerfile.slice(from.index);
    const toolkit = /^ARG ASCEND_TOOLKIT_HOME=(\S+)$/m.exec(stage)?.[1];
    assert.equal(toolkit, '/usr/local/Ascend/ascend-toolkit/latest');
    assert.equal(w.build?.args?.ASCEND_TOOLKIT_HOME, toolkit);
    assert.match(stage, /^ENV .*ASCEND_TOOLKIT_HOME=\$\{ASCEND_TOOLKIT_HOME\}/m);
    // The workspace (node_modules) and Node come from the stages above; the native sources are copied, then built.
    assert.match(stage, /^COPY --from=workspace \/usr\/local\/bin\/node /m);
    assert.match(stage, /^COPY --from=workspace \/app \/app$/m);
    const copyNative = stage.search(/^COPY native native$/m);
    const build = stage.search(/^RUN .*infra\/docker\/build-bridge\.sh$/m);
    assert.ok(
      copyNative > 0 && build > copyNative,
      'build-bridge.sh runs in a RUN after the native sources are copied',
    );
    assert.ok(build < stage.search(/^ENTRYPOINT /m), 'and before the entrypoint is set');
    // CMake >= 3.25 (native/CMakeLists.txt) where the base image's is older.
    const cmakeMin = /cmake_minimum_required\(VERSION (\d+\.\d+)\)/.exec(read('native/CMakeLists.txt'))?.[1];
    assert.ok(stage.includes(`'cmake>=${cmakeMin},`), `the image installs cmake >= ${cmakeMin}`);

    const buildScript = read('infra/docker/build-bridge.sh');
    accessSync(join(ROOT, 'infra/docker/build-bridge.sh'), constants.X_OK);
    assert.match(buildScript, /^out="\$\(native\/scripts\/build\.sh\)"$/m);
    // native/scripts/build.sh prints what it linked; the image build fails unless it is the toolkit.
    assert.match(read('native/scripts/build.sh'), /echo "linked against: \$\{backend:-unknown\}"/);
    assert.match(buildScript, /grep -qx 'linked against: cann'/);
    assert.match(buildScript, /source infra\/docker\/ascend-env\.sh/);

    // The entrypoint loads the environment and checks the bridge; it never builds.
    const entry = read('infra/docker/worker-ascend-entrypoint.sh');
    assert.doesNotMatch(entry, /build\.sh|cmake/);
    assert.match(entry, /source infra\/docker\/ascend-env\.sh/);
    assert.match(entry, /native\/build\/libgemesh_bridge\.so/);
    assert.match(entry, /exec "\$@"$/m);
    assert.match(stage, /^ENTRYPOINT \["infra\/docker\/worker-ascend-entrypoint\.sh"\]$/m);
    assert.match(
      stage,
      /^CMD \["node", "--single-threaded-gc", "--no-incremental-marking", "--import", "tsx", "services\/worker\/src\/main\.ts"\]$/m,
    );
  });

  it("every service image runs node with the launcher's V8 flags (SERVICE_NODE_FLAGS)", () => {
    const cmds = [...read('infra/docker/Dockerfile').matchAll(/^CMD (\[.*\])$/gm)].map((m) => JSON.parse(m[1] ?? '[]'));
    const services = cmds.filter((c: string[]) => c.some((a) => /^services\/\w+\/src\/main\.ts$/.test(a)));
    assert.equal(services.length, 4, 'gateway, batcher, worker and worker-ascend');
    for (const c of services)
      assert.deepEqual(c.slice(0, 1 + SERVICE_NODE_FLAGS.length), ['node', ...SERVICE_NODE_FLAGS]);
  });

  it("each service's own start script runs node with the launcher's V8 flags", () => {
    for (const service of ['gateway', 'batcher', 'worker']) {
      const pkg = JSON.parse(read(`services/${service}/package.json`)) as { scripts: { start: string } };
      assert.equal(
        pkg.scripts.start,
        ['node', ...SERVICE_NODE_FLAGS, '--import', 'tsx', 'src/main.ts'].join(' '),
        service,
      );
    }
  });
});
