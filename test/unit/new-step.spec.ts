/**
 * The step scaffold (`npm run new:step`, scripts/lib/new-step.ts): the names it derives, what it refuses (with
 * nothing written), where it places the step, the request it builds from a provider's schema, and that a second
 * run of the same command is refused. Each case writes into a temporary folder holding the two registry files (and
 * the prettier configuration), never into the checkout. That the written files compile, lint and pass the
 * conformance suite is proved by `npm run check:extending` (scripts/check-extending.ts) on a copy of the repository.
 */
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ts from 'typescript';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { accounting } from '../../providers/accounting.provider.js';
import { carrier } from '../../providers/carrier.provider.js';
import { email } from '../../providers/email.provider.js';
import {
  deriveStepNames,
  describeScaffold,
  loadRegistryView,
  NOTIFICATION_REQUEST,
  parseNewStepArgs,
  planScaffold,
  requestSource,
  runNewStep,
  ScaffoldRefusal,
  type RegistryView,
} from '../../scripts/lib/new-step.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { EXTENDING_DOC, newStepArguments, readWorkedExample } from '../../scripts/check-extending.js';

const REGISTRY_FILES = ['activities/steps/index.ts', 'providers/index.ts', '.prettierrc.json'];

let root: string;
let view: RegistryView;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'new-step-'));
  for (const file of REGISTRY_FILES) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await cp(path.join(repoRoot(), file), path.join(root, file));
  }
  view = loadRegistryView();
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Every file of the temporary checkout, by path, with its content. */
async function snapshot(): Promise<Record<string, string>> {
  const files = (await readdir(root, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  const entries = await Promise.all(
    files.map(async (e) => {
      const file = path.relative(root, path.join(e.parentPath, e.name));
      return [file, await readFile(path.join(root, file), 'utf8')] as const;
    }),
  );
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
}

/** Runs new:step and returns the refusal's message (the test fails if it was not refused). */
async function refusal(argv: string[]): Promise<string> {
  const before = await snapshot();
  const error = await runNewStep(argv, root, view).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ScaffoldRefusal);
  expect(await snapshot()).toEqual(before);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

/** The step identifiers of `validateSteps([...])` in the written registry, in order. */
async function registryOrder(): Promise<string[]> {
  const text = await readFile(path.join(root, 'activities/steps/index.ts'), 'utf8');
  const list = /validateSteps\(\[([^\]]*)\]\)/.exec(text)![1]!;
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** TypeScript's syntax errors in a written file (the full typecheck runs in check:extending). */
function syntaxErrors(file: string, text: string): string[] {
  const out = ts.transpileModule(text, { fileName: file, reportDiagnostics: true });
  return (out.diagnostics ?? []).map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'));
}

describe('names', () => {
  it.each([
    ['sendShippingNotice', 'send-shipping-notice', 'shipping_notice_sent', 'Shipping notice sent'],
    ['awardLoyaltyPoints', 'award-loyalty-points', 'loyalty_points_awarded', 'Loyalty points awarded'],
    ['notifyCustomer', 'notify-customer', 'customer_notified', 'Customer notified'],
    ['createReturnLabel', 'create-return-label', 'return_label_created', 'Return label created'],
    ['shipGiftCard', 'ship-gift-card', 'gift_card_shipped', 'Gift card shipped'],
    ['sendSms', 'send-sms', 'sms_sent', 'Sms sent'],
    ['writeAuditEntry', 'write-audit-entry', 'audit_entry_written', 'Audit entry written'],
    // consonant-vowel-consonant verbs the table does not know: no guess at a doubled consonant
    ['zapWidget', 'zap-widget', 'zap_widget_done', 'Zap widget done'],
  ])('%s → %s.step.ts, status %s (%s)', (name, kebab, status, label) => {
    const names = deriveStepNames(name);
    expect([names.kebab, names.status, names.label]).toEqual([kebab, status, label]);
  });

  it('describes the step in the third person', () => {
    expect(deriveStepNames('sendShippingNotice').sentence).toBe('Sends the shipping notice');
    expect(deriveStepNames('notifyCustomer').sentence).toBe('Notifies the customer');
    expect(deriveStepNames('pushStockLevels').sentence).toBe('Pushes the stock levels');
  });

  it.each([
    'SendNotice',
    'send',
    'send_notice',
    'sendSMS',
    'send-notice',
    '1send',
    'sendNotice!',
    `send${'Notice'.repeat(11)}`,
  ])('refuses %s: not camelCase verb + object', (name) => {
    expect(() => deriveStepNames(name)).toThrow(ScaffoldRefusal);
  });
});

describe('command line', () => {
  it('reads the name and the options', () => {
    expect(parseNewStepArgs(['sendShippingNotice', '--provider', 'sms', '--after', 'shipOrder'])).toEqual({
      name: 'sendShippingNotice',
      provider: 'sms',
      after: 'shipOrder',
    });
    expect(parseNewStepArgs(['--help']).help).toBe(true);
  });

  it.each([[[]], [['a', 'b']], [['sendX', '--bogus']], [['sendX', '--provider']]])(
    'refuses %j with one line',
    (argv) => {
      expect(() => parseNewStepArgs(argv)).toThrow(ScaffoldRefusal);
    },
  );
});

describe('refusals: one line, exit 1 (in the CLI), nothing written', () => {
  it.each([
    [['shipOrder'], /shipOrder exists: it is a step/],
    [['releaseInventory'], /releaseInventory exists: it is an activity/],
    [['voidInvoice', '--provider', 'sms'], /voidInvoice exists/],
    [['haltOrder'], /haltOrder exists/],
    [['purgeExpiredIdempotencyRecords'], /exists/],
    [['awardLoyaltyPoints', '--after', 'packOrder'], /--after packOrder: no such step/],
    [['sendShippingNotice', '--provider', 'SMS'], /provider name SMS is not \[a-z\]\[a-z0-9\]\*/],
    [['sendShippingNotice', '--provider', 'sms-gateway'], /provider name sms-gateway/],
    [['sendShippingNotice', '--provider', '9sms'], /provider name 9sms/],
    [['sendShippingNotice', '--status', 'shipped'], /status shipped is taken \(by shipOrder\)/],
    [['sendShippingNotice', '--status', 'completed'], /status completed is taken/],
    [['sendShippingNotice', '--status', 'Not-Snake'], /not snake_case/],
    [['sendShippingNotice', '--provider', 'email', '--operation', 'fax'], /provider email has no operation fax/],
    [['sendShippingNotice', '--provider', 'sms', '--operation', 'notify'], /is new: it gets one operation, send/],
    [['awardLoyaltyPoints', '--operation', 'send'], /--operation needs --provider/],
    [['send_notice'], /not an activity name/],
  ])('%j', async (argv, message) => {
    expect(await refusal(argv)).toMatch(message);
  });

  it('refuses a step file that exists, though the registry does not list it', async () => {
    await cp(
      path.join(repoRoot(), 'activities/steps/ship-order.step.ts'),
      path.join(root, 'activities/steps/award-loyalty-points.step.ts'),
    );
    expect(await refusal(['awardLoyaltyPoints'])).toMatch(/award-loyalty-points\.step\.ts exists/);
  });

  it('refuses the same command run twice: the second run changes nothing', async () => {
    await runNewStep(['sendShippingNotice', '--provider', 'sms', '--after', 'shipOrder'], root, view);
    expect(await refusal(['sendShippingNotice', '--provider', 'sms', '--after', 'shipOrder'])).toMatch(
      /send-shipping-notice\.step\.ts exists/,
    );
    // Under another name with the same new provider: its file exists now, and the (stale) view does not list it.
    expect(await refusal(['sendDeliveryNotice', '--provider', 'sms'])).toMatch(/providers\/sms\.provider\.ts exists/);
  });
});

describe('what it writes and where it places the step', () => {
  it('a provider step with a new provider: four files, after shipOrder, after-pivot, key from the work', async () => {
    const before = await snapshot();
    const printed = await runNewStep(['sendShippingNotice', '--provider', 'sms', '--after', 'shipOrder'], root, view);
    const after = await snapshot();
    const changed = Object.keys(after).filter((f) => after[f] !== before[f]);
    expect(changed.sort()).toEqual([
      'activities/steps/index.ts',
      'activities/steps/send-shipping-notice.step.ts',
      'providers/index.ts',
      'providers/sms.provider.ts',
    ]);
    expect(printed).toContain('+ activities/steps/send-shipping-notice.step.ts');
    expect(printed).toContain('~ activities/steps/index.ts');
    expect(printed).toContain('+ providers/sms.provider.ts');
    expect(printed).toContain('~ providers/index.ts');
    expect(printed).toContain('npm run test:conformance');

    const order = await registryOrder();
    expect(order.indexOf('sendShippingNotice')).toBe(order.indexOf('shipOrder') + 1);
    expect(order).toHaveLength(view.steps.length + 1);
    const step = after['activities/steps/send-shipping-notice.step.ts']!;
    expect(step).toContain('phase: StepPhase.AfterPivot');
    expect(step).toContain("status: 'shipping_notice_sent'");
    expect(step).toContain('return `send-shipping-notice:${orderId}`;');
    expect(step).toContain("import { sms } from '../../providers/sms.provider.js';");
    expect(step).toMatch(/\n {2}\/\/ No `record`/);
    expect(step).not.toMatch(/\n {2}async record/);
    expect(after['activities/steps/index.ts']).toContain(
      "import { sendShippingNotice } from './send-shipping-notice.step.js';",
    );
    const provider = after['providers/sms.provider.ts']!;
    expect(provider).toContain("name: 'sms'");
    expect(provider).toContain("path: '/v1/messages'");
    expect(provider).toContain("effect: 'sms.sent'");
    expect(provider).toContain("newId('sms')");
    expect(after['providers/index.ts']).toMatch(/import \{ sms \} from '.\/sms.provider.js';/);
    expect(after['providers/index.ts']).toMatch(/accounting,\n {2}sms,\n\}/);
    for (const file of changed) expect(syntaxErrors(file, after[file]!)).toEqual([]);
  });

  it('a database step: two files, at the end by default, recorded, computing from the order under the lock', async () => {
    const before = await snapshot();
    await runNewStep(['awardLoyaltyPoints'], root, view);
    const after = await snapshot();
    expect(Object.keys(after).filter((f) => after[f] !== before[f])).toEqual([
      'activities/steps/award-loyalty-points.step.ts',
      'activities/steps/index.ts',
    ]);
    expect((await registryOrder()).at(-1)).toBe('awardLoyaltyPoints');
    const step = after['activities/steps/award-loyalty-points.step.ts']!;
    expect(step).toContain("idempotency: 'recorded'");
    expect(step).toContain('phase: StepPhase.AfterPivot');
    expect(step).toContain("status: 'loyalty_points_awarded'");
    expect(step).toContain('await tx.$queryRaw');
    expect(step).toContain('loyaltyPoints: Math.floor(order.total_minor / 100)');
    expect(syntaxErrors('award-loyalty-points.step.ts', step)).toEqual([]);
  });

  it('before the pivot when placed before it, never the pivot; after it when placed after the pivot', () => {
    const pivot = view.steps.find((s) => s.phase === 'pivot')!.name;
    const beforePivot = view.steps[view.steps.findIndex((s) => s.name === pivot) - 1]!.name;
    const plan = (argv: string[]) => planScaffold(parseNewStepArgs(argv), view, root);
    expect(plan(['holdCredit', '--after', beforePivot]).phase).toBe('before-pivot');
    expect(plan(['holdCredit', '--provider', 'sms', '--after', view.steps[0]!.name]).phase).toBe('before-pivot');
    expect(plan(['sendReceipt', '--provider', 'sms', '--after', pivot]).phase).toBe('after-pivot');
    expect(plan(['awardLoyaltyPoints']).position).toBe(view.steps.length);
    // The last step writes `completed`, not its own status: the printed line says so, for it only.
    expect([plan(['awardLoyaltyPoints']).last, plan(['holdCredit', '--after', beforePivot]).last]).toEqual([
      true,
      false,
    ]);
    expect(describeScaffold(plan(['awardLoyaltyPoints']), false)).toContain(
      'as the last step of the plan it writes `completed`',
    );
    expect(describeScaffold(plan(['holdCredit', '--after', beforePivot]), false)).not.toContain('last step');
    const early = plan(['holdCredit', '--provider', 'sms', '--after', view.steps[0]!.name]);
    expect(early.position).toBe(1);
    expect(early.files[0]!.content).toContain('EDIT: if this step’s effect must be undone then');
  });

  it('an existing provider: its first operation, imported from its own file, no provider file written', async () => {
    const before = await snapshot();
    await runNewStep(['sendReviewRequest', '--provider', 'email'], root, view);
    const after = await snapshot();
    expect(Object.keys(after).filter((f) => after[f] !== before[f])).toEqual([
      'activities/steps/index.ts',
      'activities/steps/send-review-request.step.ts',
    ]);
    const step = after['activities/steps/send-review-request.step.ts']!;
    expect(step).toContain("import { email } from '../../providers/email.provider.js';");
    expect(step).toContain("operation: 'send'");
    expect(step).toContain('to: order.customer_email');
    expect(step).toContain('subject: `Review request for order ${orderId}`');
  });
});

describe('the request, from the operation’s schema and the stored order', () => {
  const names = deriveStepNames('sendShippingNotice');

  it('a new provider’s send: the customer’s email and a sentence with the line count', () => {
    expect(requestSource(NOTIFICATION_REQUEST, names)).toEqual({
      expression:
        '{ to: order.customer_email, text: `Shipping notice for order ${orderId}: ${order.line_count} line(s).` }',
      columns: ['customer_email', 'line_count'],
      warnings: [],
    });
  });

  it('every member of the existing providers’ operations, from the order, without warnings', () => {
    const invoice = requestSource(accounting.operations.upsertInvoice.request, names);
    expect(invoice.warnings).toEqual([]);
    expect(invoice.expression).toContain('customerEmail: order.customer_email');
    expect(invoice.expression).toContain('issuedAt: order.created_at.toISOString()');
    expect(invoice.expression).toContain(
      '(order.lines ?? []).map((l) => ({ sku: l.sku, quantity: l.quantity, unitPriceMinor: l.unitPriceMinor }))',
    );
    const shipment = requestSource(carrier.operations.createShipment.request, names);
    expect(shipment.warnings).toEqual([]);
    expect(shipment.expression).toContain('recipient: { email: order.customer_email }');
    const message = requestSource(email.operations.send.request, names);
    expect(message.warnings).toEqual([]);
    expect(message.expression).not.toContain('metadata');
  });
});

describe('the worked example of docs/extending.md, as check:extending reads it', () => {
  it('reads the commands of the marked blocks, the files it shows, and what new:step prints', async () => {
    const example = readWorkedExample(await readFile(path.join(repoRoot(), EXTENDING_DOC), 'utf8'));
    const scaffold = example.commands.find((c) => newStepArguments(c) !== undefined);
    expect(scaffold).toBe('npm run new:step -- sendShippingNotice --provider sms --after shipOrder');
    expect(example.commands).toContain('npm run docs:tables');
    expect(example.files.map((f) => f.path)).toEqual([
      'activities/steps/send-shipping-notice.step.ts',
      'providers/sms.provider.ts',
    ]);
    expect(example.newStepStatus).toHaveLength(4);
    expect(example.newStepOutput).toContain('+ providers/sms.provider.ts');
  });

  it('what the document shows is what the scaffold writes and prints, to the byte', async () => {
    const example = readWorkedExample(await readFile(path.join(repoRoot(), EXTENDING_DOC), 'utf8'));
    const printed = await runNewStep(newStepArguments(example.commands[0]!)!, root, view);
    for (const file of example.files) {
      expect(await readFile(path.join(root, file.path), 'utf8'), file.path).toBe(file.content);
    }
    expect(printed).toBe(example.newStepOutput);
  });

  it('skips blank lines and comments, joins continued lines, ignores unmarked blocks', () => {
    const markdown = [
      '```bash',
      'npm run not-this',
      '```',
      '<!-- ci: worked-example -->',
      '',
      '```bash',
      '# a comment',
      'npm run one',
      '',
      'npx two \\',
      '  --flag',
      '```',
      '<!-- ci: file a/b.ts -->',
      '```ts',
      'export const x = 1;',
      '```',
    ].join('\n');
    expect(readWorkedExample(markdown)).toEqual({
      commands: ['npm run one', 'npx two --flag'],
      files: [{ path: 'a/b.ts', content: 'export const x = 1;\n' }],
    });
    expect(() => readWorkedExample('<!-- ci: worked-example -->\ntext')).toThrow(/not followed by a fenced block/);
  });
});
