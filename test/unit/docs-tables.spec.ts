/**
 * The documentation tables that restate code (retry profiles in docs/guarantees.md, limits in docs/api.md, metrics
 * in docs/operations.md) must be exactly what `npm run docs:tables` generates from the code
 * (scripts/lib/docs-tables.ts): a change to a retry profile, a limit or a metric without regenerating the docs fails
 * here. So must the code blocks that show a file by reference (the scaffold's templates in docs/extending.md).
 */
import { appendFile, cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../scripts/lib/env.js';
import {
  docPath,
  EMBED_FILES,
  GENERATED_FILES,
  GENERATED_SECTIONS,
  markers,
  profileUsage,
  registryProfileUsage,
  renderDocument,
  renderSections,
  replaceSections,
  SECTION_FILES,
  sectionsOf,
} from '../../scripts/lib/docs-tables.js';
import { JSON_BODY_LIMIT_BYTES } from '../../src/common/api-limits.js';
import { METRICS } from '../../src/metrics/metric-definitions.js';
import { PG_SESSION_LIMITS } from '../../src/prisma/prisma.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../../src/temporal/temporal.constants.js';
import { HISTORY_EVENTS_LIMIT } from '../../workflows/order-fulfilment.contract.js';
import { WORKER_PRODUCTION_REQUIRED } from '../../src/worker/worker-config.js';
import { STEPS } from '../../activities/index.js';

const read = (file: string) => readFile(docPath(file), 'utf8');

/** The document with the first table row of each of its sections changed by hand. */
function staled(file: string, text: string): string {
  let out = text;
  for (const section of sectionsOf(file)) {
    const from = out.indexOf(markers(section).start);
    // The first body row: the line after the table's separator row.
    const separator = out.indexOf('\n| ---', from);
    expect(separator).toBeGreaterThan(from);
    const row = out.indexOf('\n| ', separator + 1);
    expect(row).toBeGreaterThan(separator);
    out = `${out.slice(0, row + 3)}stale ${out.slice(row + 3)}`;
  }
  return out;
}

describe('docs generated tables', () => {
  it('put every section in one document: steps, retry profiles, bounds, limits, problem types, metrics and providers', () => {
    expect(SECTION_FILES).toEqual({
      steps: 'docs/guarantees.md',
      'retry-profiles': 'docs/guarantees.md',
      bounds: 'docs/guarantees.md',
      limits: 'docs/api.md',
      'problem-types': 'docs/api.md',
      metrics: 'docs/operations.md',
      providers: 'docs/configuration.md',
    });
    expect(GENERATED_FILES).toEqual([
      'docs/api.md',
      'docs/configuration.md',
      'docs/guarantees.md',
      'docs/operations.md',
    ]);
    expect(GENERATED_FILES.flatMap(sectionsOf).sort()).toEqual([...GENERATED_SECTIONS].sort());
  });

  it('match the code (run `npm run docs:tables` after changing a profile, a limit or a metric)', async () => {
    const sections = await renderSections();
    for (const file of GENERATED_FILES) {
      const text = await read(file);
      for (const section of sectionsOf(file)) expect(text).toContain(markers(section).start);
      expect(await renderDocument(file, text, sections), file).toBe(text);
    }
  });

  it('stand only in their own document', async () => {
    for (const file of ['README.md', ...GENERATED_FILES]) {
      const text = await read(file);
      for (const section of GENERATED_SECTIONS.filter((s) => SECTION_FILES[s] !== file)) {
        expect(text, `${file} holds ${section}`).not.toContain(`generated:${section}`);
      }
    }
  });

  it('notice a table that differs from the code (the check can fail)', async () => {
    const sections = await renderSections();
    for (const file of GENERATED_FILES) {
      const text = await read(file);
      const stale = staled(file, text);
      expect(stale).not.toBe(text);
      expect(await renderDocument(file, stale, sections)).toBe(text);
    }
    const guarantees = await read('docs/guarantees.md');
    const stale = guarantees.replace('| `providerCall`', '| `providerCall` (stale)');
    expect(stale).not.toBe(guarantees);
    expect(await renderDocument('docs/guarantees.md', stale, sections)).toBe(guarantees);
  });

  it('state the values of the code', async () => {
    const sections = await renderSections();
    expect(sections.limits).toContain(`${JSON_BODY_LIMIT_BYTES} bytes`);
    expect(sections['problem-types']).toMatch(/\| `order-not-cancellable` \| 409 \| `orderStatus` \| - \|/);
    expect(sections['problem-types']).toMatch(
      /\| `service-unavailable` \| 503 \| `checks\?`, `details\?` \| `Retry-After` \|/,
    );
    expect(sections['problem-types']).toMatch(/\| `forbidden` \| 403 \| `requiredScope` \| `WWW-Authenticate` \|/);
    // Read from every workflow file, not only the order workflow's.
    expect(sections['retry-profiles']).toMatch(/`housekeeping` \| `purgeExpiredIdempotencyRecords` \|/);
    expect(sections['retry-profiles']).toMatch(
      /`providerCall` \| .*`sendOrderConfirmation`.* \| 30 s \| 10 s \| 15 \| 2 s ×2, max 60 s \| 20 min/,
    );
    for (const metric of Object.values(METRICS)) expect(sections.metrics).toContain(`\`${metric.name}\``);
    expect(sections.bounds).toContain(`| ${PG_SESSION_LIMITS.lockTimeoutMs / 1000} s (\`lock_timeout\`) |`);
    expect(sections.bounds).toContain(`${RETRY_UPDATE_TIMEOUT_MS / 1000} s: workflow task timeout`);
    expect(sections.bounds).toContain(`${HISTORY_EVENTS_LIMIT.toLocaleString('en')} events`);
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
    // A proxy declared in one file of workflows/ and called in another.
    const proxies = 'export const kit = proxyActivities<A>(compensation);';
    const caller = 'await kit.haltOrder(input);';
    expect(Object.fromEntries(profileUsage(proxies, caller))).toEqual({ compensation: ['haltOrder'] });
    expect(() =>
      profileUsage('const kit = proxyActivities<A>(compensation);', 'const kit = proxyActivities<A>(housekeeping);'),
    ).toThrow(/different profiles/);
  });

  it('refuse a document without the markers', async () => {
    expect(() => replaceSections('# no markers', { limits: 'x' }, 'docs/api.md')).toThrow(
      /docs\/api.md has no "<!-- generated:limits/,
    );
    await expect(renderDocument('docs/api.md', '# no markers')).rejects.toThrow(/no "<!-- generated:limits/);
  });

  it('list every registered step, its compensation and provider, and every provider variable', async () => {
    const sections = await renderSections();
    for (const step of STEPS) {
      expect(sections.steps).toContain(`\`${step.name}\``);
      if (step.compensation) expect(sections.steps).toContain(`\`${step.compensation.name}\``);
      if (step.kind === 'provider') expect(sections.steps).toContain(`\`${step.key('<orderId>')}\``);
    }
    for (const variable of WORKER_PRODUCTION_REQUIRED.filter(
      (v) => !['DATABASE_URL', 'TEMPORAL_ADDRESS'].includes(v),
    )) {
      expect(sections.providers).toContain(`\`${variable}\``);
    }
    // The steps' profiles come from the registry, not from parsing the workflow.
    expect(registryProfileUsage(STEPS).get('compensation')).toEqual(
      STEPS.flatMap((s) => (s.compensation ? [s.compensation.name] : [])).sort(),
    );
  });
});

describe('files shown by reference (embedme: a block whose first line is `// <path>`)', () => {
  const verify = (cwd: string) =>
    execa('embedme', ['--source-root', '.', '--verify', ...EMBED_FILES], { cwd, preferLocal: true, reject: false });

  it('are the files as they are, and each such document shows at least one', async () => {
    expect((await verify(repoRoot())).exitCode).toBe(0);
    for (const file of EMBED_FILES) expect(await read(file)).toMatch(/```\w+\n\/\/ scripts\/templates\/\S+\n/);
  });

  it('notice a block that differs from its file (the check can fail)', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'embeds-'));
    try {
      for (const file of EMBED_FILES) {
        const text = await read(file);
        const shown = [...text.matchAll(/```\w+\n\/\/ (\S+)\n/g)].map((m) => m[1]!);
        for (const source of [file, ...shown]) {
          await mkdir(path.dirname(path.join(copy, source)), { recursive: true });
          await cp(path.join(repoRoot(), source), path.join(copy, source));
        }
        await appendFile(path.join(copy, shown[0]!), '// changed after the document was written\n');
      }
      expect((await verify(copy)).exitCode).toBe(1);
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});
