/**
 * `npm start` after an upgrade that added a search attribute: the dev server's `--search-attribute` flags only
 * apply when its database file is created, so startDevServer (scripts/lib/temporal-cli.ts) registers the ones an
 * existing .data/temporal/dev.db lacks (it once waited for them until it timed out).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import getPort from 'get-port';
import { afterAll, describe, expect, it } from 'vitest';
import { startDevServer, temporalServerExecutable } from '../../scripts/lib/temporal-cli.js';
import { projectSearchAttributes } from '../../src/worker/order-worker.js';

const dir = await mkdtemp(path.join(tmpdir(), 'dev-server-upgrade-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function listed(address: string): Promise<string[]> {
  const connection = await Connection.connect({ address });
  try {
    const res = await connection.operatorService.listSearchAttributes({ namespace: 'default' });
    return Object.keys(res.customAttributes ?? {});
  } finally {
    await connection.close();
  }
}

describe('dev server database from an earlier version', () => {
  it('gets the search attributes added since, on the next start', async () => {
    const executable = await temporalServerExecutable();
    if (executable.type !== 'existing-path') throw new Error('this test needs a Temporal CLI (see README)');
    const cliPath = executable.path;
    const dbFilename = path.join(dir, 'dev.db');
    const [first, ...added] = projectSearchAttributes();
    const start = async (searchAttributes: ReturnType<typeof projectSearchAttributes>) =>
      startDevServer({
        cliPath,
        dbFilename,
        port: await getPort(),
        uiPort: await getPort(),
        searchAttributes,
        log: () => undefined,
        readyTimeoutMs: 60_000,
      });

    const old = await start([first!]);
    try {
      expect(await listed(old.address)).not.toContain(added[0]!.name);
    } finally {
      await old.stop();
    }
    const lines: string[] = [];
    const upgraded = await startDevServer({
      cliPath,
      dbFilename,
      port: await getPort(),
      uiPort: await getPort(),
      log: (line) => lines.push(line),
      readyTimeoutMs: 60_000,
    });
    try {
      expect(await listed(upgraded.address)).toEqual(
        expect.arrayContaining(projectSearchAttributes().map((sa) => sa.name)),
      );
      expect(lines.join('\n')).toContain(`registered search attributes new to ${dbFilename}`);
    } finally {
      await upgraded.stop();
    }
  }, 180_000);
});
