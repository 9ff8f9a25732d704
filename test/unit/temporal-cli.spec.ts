/**
 * Where the Temporal CLI comes from (scripts/lib/temporal-cli.ts): an existing one first; else the official
 * download; a Go build only when the download failed, saying which it does and why (issue 25: the first start built
 * from source on any machine with Go, even where the download works).
 */
import { describe, expect, it } from 'vitest';
import { devServerArgs, ensureTemporalCli, type CliSources } from '../../scripts/lib/temporal-cli.js';

describe('ensureTemporalCli', () => {
  const run = async (sources: Partial<CliSources>) => {
    const calls: string[] = [];
    const lines: string[] = [];
    const cli = await ensureTemporalCli({
      log: (line) => lines.push(line),
      sources: {
        find: async () => (calls.push('find'), undefined),
        download: async (dir) => (calls.push('download'), `${dir}/temporal`),
        build: async () => (calls.push('build'), '/built/temporal'),
        ...sources,
      },
    }).catch((error: Error) => `error: ${error.message}`);
    return { cli, calls, lines };
  };

  it('uses a CLI it finds, downloading and building nothing', async () => {
    const { cli, calls } = await run({ find: async () => '/usr/local/bin/temporal' });
    expect({ cli, calls }).toEqual({ cli: '/usr/local/bin/temporal', calls: [] });
  });

  it('downloads the official CLI before any Go build, and says so', async () => {
    const { cli, calls, lines } = await run({});
    expect(calls).toEqual(['find', 'download']);
    expect(cli).toMatch(/\.tools\/temporal-1\.5\.1\/temporal$/);
    expect(lines.join('\n')).toMatch(/downloading the official Temporal CLI 1\.5\.1[\s\S]*Downloaded the Temporal CLI/);
  });

  it('builds with Go only when the download failed, naming why', async () => {
    const { cli, calls, lines } = await run({
      download: async () => Promise.reject(new Error('getaddrinfo ENOTFOUND temporal.download')),
    });
    expect({ cli, calls }).toEqual({ cli: '/built/temporal', calls: ['find', 'build'] });
    expect(lines.join('\n')).toMatch(/download failed after [\d.]+ s \(getaddrinfo ENOTFOUND[\s\S]*with Go instead/);
  });

  it('reports both failures when neither works', async () => {
    const { cli } = await run({
      download: async () => Promise.reject(new Error('offline')),
      build: async () => Promise.reject(new Error('no Go toolchain')),
    });
    expect(cli).toBe('error: no Temporal CLI: the download failed (offline) and so did the Go build (no Go toolchain)');
  });
});

describe('devServerArgs', () => {
  it("starts the dev server on the given ports with the project's search attributes", () => {
    const args = devServerArgs({ dbFilename: '/tmp/dev.db', port: 7700, uiPort: 8700 });
    expect(args.slice(0, 8)).toEqual([
      'server',
      'start-dev',
      '--db-filename',
      '/tmp/dev.db',
      '--port',
      '7700',
      '--ui-port',
      '8700',
    ]);
    expect(args).toContain('OrderId=Keyword');
  });
});
