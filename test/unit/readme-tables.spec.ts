/**
 * The README's tables that restate code (retry profiles, limits, metrics) must be exactly what
 * `npm run docs:tables` generates from the code (scripts/lib/docs-tables.ts): a change to a retry profile, a limit
 * or a metric without regenerating the README fails here.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import {
  GENERATED_SECTIONS,
  markers,
  profileUsage,
  README_PATH,
  renderReadme,
  renderSections,
  replaceSections,
} from '../../scripts/lib/docs-tables.js';
import { JSON_BODY_LIMIT_BYTES } from '../../src/common/api-limits.js';
import { METRICS } from '../../src/metrics/metric-definitions.js';

describe('README generated tables', () => {
  it('match the code (run `npm run docs:tables` after changing a profile, a limit or a metric)', async () => {
    const readme = await readFile(README_PATH, 'utf8');
    for (const section of GENERATED_SECTIONS) expect(readme).toContain(markers(section).start);
    expect(await renderReadme(readme)).toBe(readme);
  });

  it('notice a table that differs from the code (the check can fail)', async () => {
    const readme = await readFile(README_PATH, 'utf8');
    const stale = readme.replace('| `providerCall`', '| `providerCall` (stale)');
    expect(stale).not.toBe(readme);
    expect(await renderReadme(stale)).toBe(readme);
  });

  it('state the values of the code', async () => {
    const sections = await renderSections();
    expect(sections.limits).toContain(`${JSON_BODY_LIMIT_BYTES} bytes`);
    // Read from every workflow file, not only the order workflow's.
    expect(sections['retry-profiles']).toMatch(/`housekeeping` \| `purgeExpiredIdempotencyRecords` \|/);
    expect(sections['retry-profiles']).toMatch(
      /`providerCall` \| .*`sendOrderConfirmation`.* \| 30 s \| 10 s \| 15 \| 2 s ×2, max 60 s \| 20 min/,
    );
    for (const metric of Object.values(METRICS)) expect(sections.metrics).toContain(`\`${metric.name}\``);
  });

  it('read which activities use which profile from the workflow source', () => {
    const source = `
      const db = proxyActivities<A>(databaseStep);
      const local = proxyLocalActivities<A>(localDatabaseStep);
      const slow = proxyActivities<A>({ ...providerCall, cancellationType: 1 });
      await db.reserveInventory({ orderId });
      await slow.sendOrderConfirmation({ orderId });
      await db.createInvoice({ orderId });
      await local.createInvoice({ orderId });`;
    expect(Object.fromEntries(profileUsage(source))).toEqual({
      databaseStep: ['createInvoice', 'reserveInventory'],
      localDatabaseStep: ['createInvoice (local activity)'],
      providerCall: ['sendOrderConfirmation'],
    });
    expect(() => profileUsage('const x = proxyActivities<A>(options());')).toThrow(/names no retry profile/);
  });

  it('refuse a README without the markers', () => {
    expect(() => replaceSections('# no markers', { limits: 'x' })).toThrow(/no "<!-- generated:limits/);
  });
});
