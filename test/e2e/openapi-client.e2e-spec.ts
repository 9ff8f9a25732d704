/**
 * A client generated from the OpenAPI document just works (issue 26). Against the real application (the Nest API on
 * a port, PostgreSQL, the Temporal dev server, a worker and the provider simulators: startTestStack):
 * 1. the served `/docs-json` is valid and resolves (@apidevtools/swagger-parser) and `redocly lint --extends
 *    recommended` finds no error;
 * 2. its shape is what clients rely on: client-style operationIds, a security requirement on every operation (the
 *    scope as its role, none on the public routes), a description on every success, one schema per problem type;
 * 3. both mainstream generators make a client of it (openapi-typescript, @hey-api/openapi-ts), the shop programs of
 *    test/openapi-client compile against them with `tsc --strict`, and run against the app: every response they get
 *    is validated against the document by a strict validator (test/helpers/openapi-responses.ts).
 */
import { mkdir, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import SwaggerParser from '@apidevtools/swagger-parser';
import { createClient as generateHeyApiClient } from '@hey-api/openapi-ts';
import { execa } from 'execa';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registeredProblemTypes } from '../../src/common/problem-details.js';
import { testKeys } from '../helpers/api-keys.js';
import { type Exchange, recordingFetch, responseValidator } from '../helpers/openapi-responses.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLIENT_DIR = path.join(ROOT, 'test/openapi-client');
const GENERATED = path.join(CLIENT_DIR, 'generated');

type Json = Record<string, unknown>;
type Operation = Json & {
  operationId?: string;
  security?: Record<string, string[]>[];
  responses: Record<string, Json>;
};

let stack: TestStack;
let baseUrl: string;
let document: Json;

beforeAll(async () => {
  stack = await startTestStack();
  await stack.api.listen(0, '127.0.0.1');
  baseUrl = `http://127.0.0.1:${(stack.api.getHttpServer().address() as AddressInfo).port}`;
  const res = await fetch(`${baseUrl}/docs-json`);
  expect(res.status).toBe(200);
  document = (await res.json()) as Json;
}, 120_000);

afterAll(() => stack?.close());

/** Every operation of the document as `METHOD /path` → operation. */
function operations(): [string, Operation][] {
  return Object.entries(document.paths as Record<string, Record<string, Operation>>).flatMap(([p, item]) =>
    Object.entries(item).map(([method, op]) => [`${method.toUpperCase()} ${p}`, op] as [string, Operation]),
  );
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3.1, valid and resolving (swagger-parser), with no redocly error (recommended rules)', async () => {
    expect(document.openapi).toBe('3.1.0');
    await expect(SwaggerParser.validate(structuredClone(document) as never)).resolves.toBeDefined();

    await mkdir(GENERATED, { recursive: true });
    const file = path.join(GENERATED, 'openapi.json');
    await writeFile(file, JSON.stringify(document, null, 2));
    const lint = await execa('npx', ['redocly', 'lint', '--extends', 'recommended', '--format', 'json', file], {
      cwd: ROOT,
      reject: false,
      env: { REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    });
    const report = JSON.parse(lint.stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
    };
    const errors = report.problems.filter((p) => p.severity === 'error');
    expect(errors.map((e) => `${e.ruleId}: ${e.message} at ${e.location[0]?.pointer}`)).toEqual([]);
    console.log(
      `redocly lint --extends recommended: ${report.totals.errors} errors, ${report.totals.warnings} warnings`,
    );
  });

  it('names operations as a client would call them, and says who may call each', () => {
    const ids = operations().map(([, op]) => op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const [name, op] of operations()) {
      // A verb and an object in lowerCamelCase (createOrder, listOrders), never the controller's name.
      expect(op.operationId, name).toMatch(/^[a-z]+(?:[A-Z][a-z]+)+$/);
      expect(op.operationId, name).not.toMatch(/Controller/);
      expect(op.security, name).toBeDefined();
      for (const [status, response] of Object.entries(op.responses)) {
        expect(response.description, `${name} ${status}`).toMatch(/\S/);
      }
    }
    const byName = Object.fromEntries(operations());
    expect(
      Object.fromEntries(
        ['POST /orders', 'GET /orders', 'POST /orders/{id}/cancel'].map((n) => [n, byName[n]!.operationId]),
      ),
    ).toEqual({
      'POST /orders': 'createOrder',
      'GET /orders': 'listOrders',
      'POST /orders/{id}/cancel': 'cancelOrder',
    });
    expect(byName['GET /health']!.security).toEqual([]);
    expect(byName['GET /metrics']!.security).toEqual([]);
    expect(byName['GET /steps']!.security).toEqual([{ 'api-key': [] }]);
    expect(byName['POST /orders/{id}/cancel']!.security).toEqual([
      { 'api-key': ['orders:cancel'] },
      { 'api-key': ['operator'] },
    ]);
    expect(byName['POST /orders/{id}/retry']!.security).toEqual([{ 'api-key': ['operator'] }]);
    expect(document.servers).toEqual([expect.objectContaining({ url: expect.any(String) })]);
    // The decorators' marks are the builder's input, never the document's content.
    expect(JSON.stringify(document)).not.toContain('x-of-');
    const schemes = (document.components as { securitySchemes: Record<string, Json> }).securitySchemes;
    expect(schemes['api-key']).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(schemes['api-key']).not.toHaveProperty('bearerFormat');
  });

  it('describes each problem type once, with its type URI, statuses, members and headers', () => {
    const schemas = (document.components as { schemas: Record<string, Json & { properties: Record<string, Json> }> })
      .schemas;
    for (const definition of registeredProblemTypes()) {
      const schema = schemas[definition.name];
      expect(schema, definition.name).toBeDefined();
      expect(schema!.properties.type).toMatchObject({ const: definition.uri });
      for (const member of Object.keys(definition.extensions ?? {})) expect(schema!.properties).toHaveProperty(member);
    }
    expect(schemas.OrderNotCancellableProblem!.required).toContain('orderStatus');
    expect(schemas.OrderNotCancellableProblem!.properties.orderStatus).toEqual({
      $ref: '#/components/schemas/OrderStatus',
    });
    expect(schemas.ForbiddenProblem!.required).toContain('requiredScope');
    expect(schemas.UnknownSkuProblem!.required).toEqual(expect.arrayContaining(['skus', 'errors']));
    expect(schemas.OrderStep!.properties.status).toEqual({ $ref: '#/components/schemas/OrderStatus' });
    expect(schemas.Order!.properties.failure).toMatchObject({
      anyOf: [{ $ref: '#/components/schemas/OrderFailure' }, { type: 'null' }],
    });

    const byName = Object.fromEntries(operations());
    const cancel = byName['POST /orders/{id}/cancel']!.responses;
    expect(cancel['202']!.headers).toMatchObject({ Location: { required: true } });
    expect(cancel['409']!.content).toEqual({
      'application/problem+json': expect.objectContaining({
        schema: { $ref: '#/components/schemas/OrderNotCancellableProblem' },
      }),
    });
    expect(cancel['401']!.headers).toMatchObject({ 'WWW-Authenticate': { required: true } });
    expect(cancel['403']!.headers).toMatchObject({ 'WWW-Authenticate': { required: true } });
    expect(cancel['503']!.headers).toMatchObject({ 'Retry-After': { required: true } });
    expect(byName['POST /orders']!.responses['202']!.headers).toMatchObject({ Location: { required: true } });
    // The inventory's 409 is below-reserved (no Retry-After) or key-in-use (Retry-After): declared, not required.
    expect(byName['PUT /inventory/{sku}']!.responses['409']!.headers).toMatchObject({
      'Retry-After': { required: false },
    });
  });
});

describe('clients generated from the document', () => {
  it('openapi-typescript and @hey-api/openapi-ts generate; the shops compile with tsc --strict and run', async () => {
    await rm(path.join(GENERATED, 'openapi-typescript'), { recursive: true, force: true });
    await mkdir(path.join(GENERATED, 'openapi-typescript'), { recursive: true });
    const ast = await openapiTS(structuredClone(document) as never);
    await writeFile(path.join(GENERATED, 'openapi-typescript/schema.d.ts'), astToString(ast));
    await generateHeyApiClient({
      input: structuredClone(document) as never,
      output: { path: path.join(GENERATED, 'hey-api'), clean: true },
      logs: { level: 'silent', file: false },
    });

    const tsc = await execa('npx', ['tsc', '-p', path.join(CLIENT_DIR, 'tsconfig.json')], { cwd: ROOT, reject: false });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.exitCode).toBe(0);

    const exchanges: Exchange[] = [];
    const keys = testKeys();
    const heyApi = await loadShop('shop-hey-api.ts');
    let fault: { id: string } | undefined;
    const shop = await heyApi.runShop({
      baseUrl,
      shopKey: keys.shop.key,
      operatorKey: keys.operator.key,
      fetch: recordingFetch(exchanges),
      delayNextConfirmation: () => {
        fault = stack.email.injectFault({ mode: 'unavailable', times: 1 });
      },
      confirmationDelayed: () => faultUsed(fault!.id),
    });
    expect(shop.replayedId).toBe(shop.placed.id);
    expect(shop.replayedHeader).toBe('true');
    expect(shop.location).toBe(`/orders/${shop.placed.id}`);
    expect(shop.finalStatus).toBe('completed');
    expect(shop.notCancellableStatus).toBe('completed');
    expect(shop.cancelledStatus).toBe('cancelled');
    expect(shop.notAwaitingRetry).toEqual({ orderStatus: 'completed', waitingFor: null });
    expect(shop.pagedIds).toContain(shop.placed.id);
    expect(shop.unknownSkus).toEqual(['NO-SUCH-SKU']);
    expect(shop.validationPaths).toEqual(['lines.0.quantity']);
    expect(shop.unauthorizedChallenge).toMatch(/^Bearer realm=/);
    expect(shop.forbiddenScope).toBe('operator');
    expect(shop.tooLargeStatus).toBe(413);
    expect(shop.health).toBe('ok');

    const openapiFetch = await loadShop('shop-openapi-fetch.ts');
    const second = await openapiFetch.runShop({ baseUrl, shopKey: keys.shop.key, fetch: recordingFetch(exchanges) });
    expect(second.replayedId).toBe(second.placed.id);
    expect(second.read?.id).toBe(second.placed.id);
    expect(second.pagedIds).toContain(second.placed.id);
    expect(second.unknownSkus).toEqual(['NO-SUCH-SKU']);
    expect(second.notFoundStatus).toBe(404);

    const validator = responseValidator(document);
    expect(exchanges.flatMap((e) => validator.check(e))).toEqual([]);
    // The statuses the shops met, each validated above.
    expect([...new Set(exchanges.map((e) => e.status))].sort()).toEqual(
      expect.arrayContaining([200, 202, 400, 401, 403, 404, 409, 413, 422]),
    );
    console.log(`openapi clients: ${exchanges.length} responses validated against the document`);
  }, 180_000);
});

/**
 * A shop program of test/openapi-client, loaded by path: its types live with the generated client, outside this
 * project's typecheck (tsc --strict checks them above), so the outcome is read as plain data here.
 */
async function loadShop(file: string): Promise<{ runShop(setup: object): Promise<ShopOutcome> }> {
  return (await import(path.join(CLIENT_DIR, file))) as { runShop(setup: object): Promise<ShopOutcome> };
}

/** What a shop program reports (see its `ShopOutcome`). */
interface ShopOutcome {
  placed: { id: string };
  read?: { id: string };
  [member: string]: unknown;
}

/** Resolves once the email simulator has used up the fault `id` (the confirmation then waits for its retry). */
async function faultUsed(id: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await fetch(`${stack.email.url}/_sim/faults`);
    const { faults } = (await res.json()) as { faults: Array<{ id: string; remaining: number }> };
    if (!faults.some((f) => f.id === id && f.remaining > 0)) return;
    if (Date.now() > deadline) throw new Error('the confirmation never reached the email provider');
    await new Promise((r) => setTimeout(r, 20));
  }
}
