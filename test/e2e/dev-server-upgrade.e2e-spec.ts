/**
 * `npm start` after an upgrade that added a search attribute: the dev server's `--search-attribute` flags
 * (devServerArgs, scripts/lib/temporal-cli.ts) only apply when its database file is created, so on an existing
 * .data/temporal/dev.db the worker's start (`ensureSearchAttributes`, src/worker.ts) registers the ones it lacks.
 * The dev server is started as scripts/stack.ts starts it: the same arguments, on the same file twice.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import getPort from 'get-port';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnChild, stop, waitForTemporal } from '../../scripts/lib/processes.js';
import { devServerArgs, temporalServerExecutable } from '../../scripts/lib/temporal-cli.js';
import { ensureSearchAttributes, projectSearchAttributes } from '../../src/worker/order-worker.js';

const dir = await mkdtemp(path.join(tmpdir(), 'dev-server-upgrade-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('dev server database from an earlier version', () => {
  it('gets the search attributes added since when the worker starts on it', async () => {
    const executable = await temporalServerExecutable();
    if (executable.type !== 'existing-path') throw new Error('this test needs a Temporal CLI (see README)');
    const dbFilename = path.join(dir, 'dev.db');
    const [first, ...added] = projectSearchAttributes();
    const withServer = async <T>(
      searchAttributes: ReturnType<typeof projectSearchAttributes> | undefined,
      use: (connection: Connection) => Promise<T>,
    ): Promise<T> => {
      const [port, uiPort] = [await getPort(), await getPort()];
      const server = spawnChild(executable.path, devServerArgs({ dbFilename, port, uiPort, searchAttributes }), {});
      try {
        const address = `127.0.0.1:${port}`;
        await waitForTemporal({ address, namespace: 'default', timeoutMs: 60_000, child: server });
        const connection = await Connection.connect({ address });
        try {
          return await use(connection);
        } finally {
          await connection.close();
        }
      } finally {
        await stop(server);
      }
    };
    const listed = async (connection: Connection): Promise<string[]> =>
      Object.keys(
        (await connection.operatorService.listSearchAttributes({ namespace: 'default' })).customAttributes ?? {},
      );

    expect(await withServer([first!], listed)).not.toContain(added[0]!.name);
    // The next version's start: every attribute in its flags, which an existing file ignores.
    const [before, registered, after] = await withServer(undefined, async (connection) => [
      await listed(connection),
      await ensureSearchAttributes(connection, 'default', { timeoutMs: 60_000 }),
      await listed(connection),
    ]);
    expect(before).not.toContain(added[0]!.name);
    expect(registered).toEqual(expect.arrayContaining(added.map((sa) => sa.name)));
    expect(after).toEqual(expect.arrayContaining(projectSearchAttributes().map((sa) => sa.name)));
  }, 180_000);
});
