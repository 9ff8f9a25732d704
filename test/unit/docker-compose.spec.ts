/**
 * docker-compose.yml publishes every port on 127.0.0.1 only (issue 7): the stack carries development credentials,
 * so nothing in it may be reachable from other machines. A plain-text check of every `ports:` entry (the compose
 * file itself is validated by `docker compose config` in CI).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

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
