/**
 * docker-compose.yml publishes every port on 127.0.0.1 only (issue 7): the stack carries development credentials,
 * so nothing in it may be reachable from other machines. And it names no provider (issue 15): one `simulators`
 * service serves every provider, the services derive each provider's URL from SIMULATOR_URL. Plain-text checks (the
 * compose file itself is validated by `docker compose config` in CI).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../providers/index.js';
import { envPrefix } from '../../providers/kit/define.js';
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

  it('copies providers/ into the build (the simulator process and the worker are compiled from it)', () => {
    expect(dockerfile).toMatch(/^COPY providers \.\/providers$/m);
  });
});
