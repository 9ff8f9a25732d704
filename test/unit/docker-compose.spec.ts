/**
 * docker-compose.yml publishes every port on 127.0.0.1 only (issue 7): the stack carries development credentials,
 * so nothing in it may be reachable from other machines. And it names no provider (issue 15): one `simulators`
 * service serves every provider, the services derive each provider's URL from SIMULATOR_URL. Plain-text checks (the
 * compose file itself is validated by `docker compose config` in CI). The `observability` profile (issue 17) runs
 * Prometheus and Grafana with observability/ mounted, on ports of their own, and scrapes the workers' metrics port.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../providers/index.js';
import { isApiKeyFormat } from '../../src/auth/api-key.js';
import { envPrefix } from '../../providers/kit/define.js';
import { PROMETHEUS_VERSION } from '../../scripts/lib/observability-check.js';
import { DEFAULT_PORTS, STACK_PROCESSES } from '../../scripts/lib/stack-definition.js';

/** The entries of every `ports:` list, as written (quotes removed). */
function publishedPorts(yaml: string): string[] {
  const entries: string[] = [];
  const lines = yaml.split('\n');
  lines.forEach((line, i) => {
    const list = /^(\s*)ports:\s*$/.exec(line);
    if (!list) return;
    for (let j = i + 1; j < lines.length; j++) {
      const item = /^\s*-\s*['"]?([^'"\s]+)['"]?\s*$/.exec(lines[j]!);
      if (!item) break;
      entries.push(item[1]!);
    }
  });
  return entries;
}

describe('docker-compose.yml', () => {
  it('binds every published port to 127.0.0.1', () => {
    const ports = publishedPorts(readFileSync('docker-compose.yml', 'utf8'));
    expect(ports.length).toBeGreaterThanOrEqual(6);
    for (const port of ports) expect(port).toMatch(/^127\.0\.0\.1:\d+(-\d+)?:\d+$/);
  });

  it('the check would catch a port published on every interface', () => {
    expect(publishedPorts("    ports:\n      - '3000:3000'\n")).toEqual(['3000:3000']);
  });
});

/** The lines of one top-level service of the compose file (up to the next service at the same indentation). */
function serviceBlock(yaml: string, name: string): string {
  const lines = yaml.split('\n');
  const start = lines.findIndex((l) => l === `  ${name}:`);
  if (start < 0) return '';
  const end = lines.findIndex((l, i) => i > start && /^ {2}[a-z][\w-]*:\s*$/.test(l));
  return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

describe('docker-compose.yml and the Dockerfile name no provider (adding one edits neither)', () => {
  const compose = readFileSync('docker-compose.yml', 'utf8');
  const dockerfile = readFileSync('Dockerfile', 'utf8');

  it('has no provider-specific service, variable or port', () => {
    for (const provider of PROVIDER_LIST) {
      for (const [file, text] of [
        ['docker-compose.yml', compose],
        ['Dockerfile', dockerfile],
      ] as const) {
        expect({ file, provider: provider.name, named: new RegExp(`\\b${provider.name}\\b`, 'i').test(text) }).toEqual({
          file,
          provider: provider.name,
          named: false,
        });
        expect(text).not.toContain(`${envPrefix(provider)}_`);
      }
    }
  });

  it('runs one simulators service from the stack definition, which the services reach through SIMULATOR_URL', () => {
    const simulators = serviceBlock(compose, 'simulators');
    expect(simulators).toContain(STACK_PROCESSES.simulators.entry);
    expect(simulators).toMatch(new RegExp(`SIMULATOR_PORT: '${DEFAULT_PORTS.simulators}'`));
    expect(simulators).toContain(`'127.0.0.1:${DEFAULT_PORTS.simulators}:${DEFAULT_PORTS.simulators}'`);
    expect(simulators).toContain(STACK_PROCESSES.simulators.readyPath);
    expect(compose).toContain(`SIMULATOR_URL: http://simulators:${DEFAULT_PORTS.simulators}`);
    // Development-like by default (provider URLs derived, dev keys); production-like sets NODE_ENV and providers.env.
    expect(compose).toContain('NODE_ENV: ${NODE_ENV:-development}');
    for (const service of ['worker', 'api', 'worker-cluster', 'api-cluster']) {
      const block = serviceBlock(compose, service);
      expect(block, service).toContain('env_file: *provider-env-file');
    }
    for (const service of ['worker', 'worker-cluster']) {
      expect(serviceBlock(compose, service), service).toMatch(/simulators:\n\s+condition: service_healthy/);
    }
  });

  it("seeds the simulators' callback key it gives them: one development key, registered by migrate", () => {
    const key = /^x-simulator-callback-key: &simulator-callback-key (\S+)$/m.exec(compose)?.[1];
    expect(key !== undefined && isApiKeyFormat(key) && key.startsWith('of_dev_'), String(key)).toBe(true);
    expect(serviceBlock(compose, 'migrate')).toContain('SEED_SIMULATOR_API_KEY: *simulator-callback-key');
    expect(serviceBlock(compose, 'migrate')).toContain('NODE_ENV: ${NODE_ENV:-development}');
    const simulators = serviceBlock(compose, 'simulators');
    expect(simulators).toContain('SIMULATOR_CALLBACK_API_KEY: *simulator-callback-key');
    expect(simulators).toContain('SIMULATOR_CALLBACK_URL: ${SIMULATOR_CALLBACK_URL:-http://api:3000}');
  });

  it('copies providers/ into the build (the simulator process and the worker are compiled from it)', () => {
    expect(dockerfile).toMatch(/^COPY providers \.\/providers$/m);
  });
});

describe('docker-compose.yml: the observability profile (Prometheus and Grafana)', () => {
  const compose = readFileSync('docker-compose.yml', 'utf8');

  it('runs prometheus and grafana only in the profile, on pinned images, with observability/ mounted', () => {
    const prometheus = serviceBlock(compose, 'prometheus');
    const grafana = serviceBlock(compose, 'grafana');
    for (const block of [prometheus, grafana]) {
      expect(block).toMatch(/^ {4}profiles: \[observability\]$/m);
      expect(block).toMatch(/^ {4}image: [\w/.-]+:v?\d+\.\d+\.\d+$/m);
    }
    // The Prometheus release promtool checks the rules with (scripts/lib/observability-check.ts).
    expect(prometheus).toContain(`image: prom/prometheus:v${PROMETHEUS_VERSION}`);
    expect(prometheus).toContain('./observability/prometheus:/etc/prometheus:ro');
    expect(grafana).toContain('./observability/grafana/provisioning:/etc/grafana/provisioning:ro');
    expect(grafana).toContain('./observability/grafana/dashboards:/etc/grafana/dashboards:ro');
    // The dashboards provider reads the folder Grafana gets them in.
    const provider = readFileSync('observability/grafana/provisioning/dashboards/dashboards.yml', 'utf8');
    expect(provider).toContain('path: /etc/grafana/dashboards');
    // No other service is in the profile, and the profile's services are in no other.
    expect(compose.match(/profiles: \[observability\]/g)).toHaveLength(2);
  });

  it('publishes Grafana and Prometheus on host ports no other service uses', () => {
    const hostPorts = (block: string): number[] =>
      publishedPorts(block).flatMap((entry) => {
        const [from, to = from] = entry.split(':')[1]!.split('-').map(Number);
        return Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
      });
    const observability = [
      ...hostPorts(serviceBlock(compose, 'prometheus')),
      ...hostPorts(serviceBlock(compose, 'grafana')),
    ];
    expect(observability).toEqual([9090, 3002]);
    const others = compose
      .split('\n')
      .filter((l) => /^ {2}[a-z][\w-]*:\s*$/.test(l))
      .map((l) => l.trim().slice(0, -1))
      .filter((name) => !['prometheus', 'grafana'].includes(name))
      .flatMap((name) => hostPorts(serviceBlock(compose, name)));
    expect(others).toContain(3001); // the cluster profile's second API
    for (const port of observability) expect(others).not.toContain(port);
  });

  it('the workers serve their metrics on the compose network where Prometheus scrapes them', () => {
    const port = DEFAULT_PORTS.workerMetrics;
    for (const service of ['worker', 'worker-cluster']) {
      const block = serviceBlock(compose, service);
      expect(block, service).toContain(`WORKER_METRICS_PORT: '${port}'`);
      expect(block, service).toMatch(new RegExp(`expose:\\n\\s+- '${port}'`));
      expect(publishedPorts(block), service).toEqual([]); // not published on the host
    }
    const config = readFileSync('observability/prometheus/prometheus.yml', 'utf8');
    expect(config).toMatch(new RegExp(`names: \\[worker, worker-cluster\\]\\n\\s+type: A\\n\\s+port: ${port}`));
    expect(config).toMatch(new RegExp(`names: \\[api, api-cluster\\]\\n\\s+type: A\\n\\s+port: ${DEFAULT_PORTS.api}`));
  });
});
