// The page at `/`: catalogue, order form, latest orders with live status, and the operator's queues.
// Plain browser JavaScript (no build step) over the public API: GET /inventory, POST /orders, GET /orders,
// POST /orders/:id/retry and POST /orders/:id/cancel; the returns of the order chosen in the list are returns.js's.
// Every value from the API is shown with textContent, never parsed as HTML; text someone outside controls (a
// customer's name, a failure reason, a product name) goes through `shown()`, which removes invisible characters that
// could reorder the page's text, in a <bdi> where it sits next to ours. Every call sends the API key entered at the top (kept in sessionStorage, so it lasts as long as
// the tab): a client key shows that client's orders, an operator key every order and the operator actions.

import { returnsView } from './returns.js';

/** Status refresh period of the orders and the operator's queues, ms. */
const ORDERS_REFRESH_MS = 2000;
/** Refresh period of the catalogue, ms. */
const CATALOGUE_REFRESH_MS = 5000;

const FINAL = new Set(['completed', 'failed', 'cancelled', 'closed']);
/**
 * The step registry as `GET /steps` describes it (steps, and every status with its label and whether an order in it
 * may still be cancelled), loaded with the first valid API key. Nothing on this page lists steps or statuses itself.
 */
let registry = { steps: [], statuses: [] };
const labelOf = (status) => registry.statuses.find((s) => s.status === status)?.label ?? status;
const cancellableStatuses = () => registry.statuses.filter((s) => s.cancellable).map((s) => s.status);
/** The statuses of an order waiting for an event (the status of the step before each event step), e.g. packing. */
const awaitingEventStatuses = () =>
  registry.steps.flatMap((s, i) => (s.kind === 'event' && i > 0 ? [registry.steps[i - 1].status] : []));

/** Loads the registry (once it answered, it stays: it does not change while the API runs). */
async function loadRegistry() {
  if (registry.statuses.length) return;
  const res = await api('GET', '/steps');
  if (!res.ok) throw new Error(`GET /steps: ${problemText(res)}`);
  registry = res.body;
}

const $ = (selector) => document.querySelector(selector);

/**
 * Invisible format characters (bidirectional controls, zero-width and other default-ignorable format characters):
 * the same class as INVISIBLE in workflows/display-text.ts (test/unit/display-text.spec.ts keeps them equal).
 */
const INVISIBLE =
  /[\u00AD\u061C\u180E\u200B\u200E\u200F\u202A-\u202E\u2060-\u206F\uFEFF\uFFF9-\uFFFB\u{1BCA0}-\u{1BCA3}\u{1D173}-\u{1D17A}\u{E0001}\u{E0020}-\u{E007F}]/gu;

/** Text from outside as the page shows it: without invisible format characters (see workflows/display-text.ts). */
const shown = (text) => String(text ?? '').replace(INVISIBLE, '');

/** Text from outside inside a line of the page's own: shown(), isolated in a <bdi> (its own direction, auto). */
const isolated = (text) => el('bdi', { dir: 'auto' }, shown(text));

/** A new element with attributes (`class`, `data-*`, ...) and children (strings become text). */
function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** A fresh Idempotency-Key (UUID v4); crypto.randomUUID needs a secure context, getRandomValues does not. */
function newKey() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** Integer minor units as money, e.g. 2499 EUR → €24.99. */
function money(minor, currency) {
  try {
    const format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    return format.format(minor / 10 ** digits);
  } catch {
    return `${minor} ${currency}`;
  }
}

function timeOf(iso) {
  return iso ? new Date(iso).toLocaleTimeString() : '';
}

/** How long ago `iso` was, e.g. `42 s`, `5 min 3 s`, `2 h 10 min`. */
function ageOf(iso) {
  const s = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** Orders longer than this in one open status are shown as slow, ms. */
const SLOW_MS = 60_000;

/** `for 5 min 3 s` since the last status change of an open order (highlighted when slow); nothing when final. */
function waitingFor(order) {
  if (FINAL.has(order.status) || !order.updatedAt) return null;
  const slow = Date.now() - new Date(order.updatedAt).getTime() > SLOW_MS;
  return el(
    'span',
    { class: `age small ${slow ? 'slow' : ''}`, title: 'Time since the last status change' },
    `for ${ageOf(order.updatedAt)}`,
  );
}

/** sessionStorage entry of the API key. */
const API_KEY_STORAGE = 'orderFulfilment.apiKey';

/** The API key entered on the page, or ''. */
function apiKey() {
  try {
    return sessionStorage.getItem(API_KEY_STORAGE) ?? '';
  } catch {
    return '';
  }
}

/**
 * Calls the API with JSON. Resolves `{ ok, status, body }`; a problem+json body (RFC 9457) is in `body` with its
 * `title` and `detail`. Rejects only on network errors.
 */
async function api(method, path, { body, key } = {}) {
  const headers = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key) headers['idempotency-key'] = key;
  if (apiKey()) headers.authorization = `Bearer ${apiKey()}`;
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let parsed;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = text;
  }
  return { ok: res.ok, status: res.status, body: parsed };
}

function problemText(res) {
  const p = res.body;
  if (p && typeof p === 'object') return [p.title, p.detail].filter(Boolean).join(': ') || `HTTP ${res.status}`;
  return `HTTP ${res.status}`;
}

let noticeTimer;
/** Shows a message at the top of the page for a few seconds; `kind` is `ok` or `error`. */
function notify(message, kind = 'ok') {
  const box = $('#notice');
  box.textContent = message;
  box.className = `notice ${kind}`;
  box.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => (box.hidden = true), 6000);
}

// ---------------------------------------------------------------------------------------------------------------
// Catalogue and order form

let catalogue = [];

async function refreshCatalogue() {
  const res = await api('GET', '/inventory');
  if (!res.ok) throw new Error(`GET /inventory: ${problemText(res)}`);
  catalogue = res.body;
  $('#catalogue-rows').replaceChildren(
    ...catalogue.map((p) =>
      el(
        'tr',
        { 'data-sku': p.sku },
        el('td', { class: 'mono' }, p.sku),
        el('td', {}, isolated(p.name)),
        el('td', { class: 'num' }, money(p.priceMinor, p.currency)),
        el('td', { class: `num ${p.available === 0 ? 'out' : ''}`, 'data-testid': 'available' }, p.available),
        el('td', { class: 'num muted' }, p.reserved),
        el('td', { class: 'num muted' }, p.onHand),
      ),
    ),
  );
  for (const select of document.querySelectorAll('#lines select')) fillSkuOptions(select);
}

function fillSkuOptions(select) {
  const current = select.value;
  select.replaceChildren(
    ...catalogue.map((p) =>
      // An option holds text only (no <bdi>): the name is wrapped in FSI … PDI (U+2068, U+2069) instead.
      el(
        'option',
        { value: p.sku },
        `\u2068${shown(p.name)}\u2069 (${p.sku}) – ${money(p.priceMinor, p.currency)}, ${p.available} left`,
      ),
    ),
  );
  if (current && catalogue.some((p) => p.sku === current)) select.value = current;
}

function addLine() {
  const line = $('#line-template').content.firstElementChild.cloneNode(true);
  const select = line.querySelector('select');
  fillSkuOptions(select);
  const used = new Set([...document.querySelectorAll('#lines select')].map((s) => s.value));
  const free = catalogue.find((p) => !used.has(p.sku) && p.available > 0);
  if (free) select.value = free.sku;
  line.querySelector('.remove-line').addEventListener('click', () => {
    if (document.querySelectorAll('#lines .line').length > 1) line.remove();
  });
  $('#lines').append(line);
}

async function submitOrder(event) {
  event.preventDefault();
  const form = event.currentTarget;
  const button = $('#submit-order');
  const email = form.email.value.trim();
  const name = form.name.value.trim();
  const lines = [...document.querySelectorAll('#lines .line')].map((line) => ({
    sku: line.querySelector('select').value,
    quantity: Number(line.querySelector('input').value),
  }));
  const order = { customer: name ? { email, name } : { email }, lines };
  // One key per submit: a network retry of this submit would reuse it (the API replays the first answer).
  const key = newKey();
  button.disabled = true;
  $('#order-result').textContent = 'Placing…';
  try {
    const res = await api('POST', '/orders', { body: order, key });
    if (res.status === 202) {
      $('#order-result').replaceChildren('Accepted: ', el('span', { class: 'mono' }, res.body.id.slice(0, 8)));
      notify(`Order ${res.body.id.slice(0, 8)} accepted; its status updates below.`);
      await Promise.all([refreshOrders(), refreshCatalogue()]);
    } else {
      const errors = Array.isArray(res.body?.errors) ? res.body.errors.map((e) => `${e.path}: ${e.message}`) : [];
      $('#order-result').textContent = '';
      notify([problemText(res), ...errors].join(' · '), 'error');
    }
  } catch (err) {
    $('#order-result').textContent = '';
    notify(`Could not reach the API: ${err.message}`, 'error');
  } finally {
    button.disabled = false;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Orders

/**
 * The step track of an order, from its own plan as the API reports it (`order.steps`, each with its state: done,
 * current, pending, waiting for an operator, undone by a compensation, skipped), after a first dot for `received`.
 */
function stepTrack(order) {
  const offPath = ['attention_required', 'failed', 'cancelled', 'closed'].includes(order.status);
  const received = el(
    'li',
    { class: 'done', title: labelOf('received'), 'data-step': 'received' },
    el('span', { class: 'dot' }),
    el('span', { class: 'step-label' }, labelOf('received')),
  );
  return el(
    'ol',
    { class: `steps ${offPath ? `off ${order.status}` : ''}`, 'aria-label': 'Steps' },
    received,
    (order.steps ?? []).map((step) =>
      el(
        'li',
        { class: step.state, title: `${step.label} (${step.state})`, 'data-step': step.name },
        el('span', { class: 'dot' }),
        el('span', { class: 'step-label' }, step.label),
      ),
    ),
  );
}

/** A failure reason, cut to a readable length (the whole text in its tooltip). */
function reasonText(reason) {
  const short = reason.length > 160 ? `${reason.slice(0, 159)}…` : reason;
  return el('div', { class: 'reason small', title: shown(reason) }, isolated(short));
}

function statusBadge(status) {
  return el('span', { class: `badge ${status}`, 'data-testid': 'status' }, labelOf(status));
}

/** How the order is paid: its card payment's state (never the token) and decline code, or "on account". */
function paymentLine(order) {
  const p = order.payment;
  const text = !p
    ? 'on account'
    : p.status === 'declined'
      ? `card declined (${p.declineCode ?? '-'})`
      : `card ${p.status}`;
  return el('div', { class: 'muted small', 'data-testid': 'payment' }, text);
}

function orderRow(order) {
  const customer = order.customer?.name || order.customer?.email || '';
  const showReturns = el(
    'button',
    {
      type: 'button',
      class: 'link small',
      'data-testid': 'show-returns',
      'aria-label': `Show the returns of order ${order.id.slice(0, 8)}`,
      'aria-pressed': order.id === returns.shownOrderId() ? 'true' : 'false',
    },
    'Returns',
  );
  showReturns.addEventListener('click', () => returns.show(order.id));
  return el(
    'tr',
    {
      'data-order-id': order.id,
      'data-status': order.status,
      class: order.id === returns.shownOrderId() ? 'selected' : null,
    },
    el(
      'td',
      {},
      el('span', { class: 'mono', title: order.id }, order.id.slice(0, 8)),
      el('div', { class: 'muted small' }, timeOf(order.createdAt)),
    ),
    el('td', { 'data-testid': 'customer' }, isolated(customer)),
    el('td', { class: 'num' }, money(order.totalMinor, order.currency), paymentLine(order)),
    el(
      'td',
      {},
      statusBadge(order.status),
      waitingFor(order),
      order.failure ? reasonText(order.failure.message) : null,
    ),
    el('td', {}, stepTrack(order)),
    el(
      'td',
      {},
      el('a', { href: order.temporalUiUrl, target: '_blank', rel: 'noopener', class: 'small' }, 'Temporal UI ↗'),
      el('div', {}, showReturns),
    ),
  );
}

async function refreshOrders() {
  await loadRegistry();
  const res = await api('GET', '/orders?limit=20');
  if (!res.ok) throw new Error(`GET /orders: ${problemText(res)}`);
  const rows = res.body.items.map(orderRow);
  $('#order-rows').replaceChildren(
    ...(rows.length ? rows : [el('tr', {}, el('td', { colspan: 6, class: 'muted' }, 'No orders yet.'))]),
  );
  $('#orders-updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  latest = res.body.items;
  renderCancellable();
}

// ---------------------------------------------------------------------------------------------------------------
// Operator

let latest = [];
let waitingCancellable = [];
/** Orders with an action in flight (no double clicks while the API works). */
const busy = new Set();

function queueItem(order, actions) {
  return el(
    'li',
    { 'data-order-id': order.id },
    el(
      'div',
      { class: 'queue-head' },
      el('span', { class: 'mono', title: order.id }, order.id.slice(0, 8)),
      statusBadge(order.status),
      waitingFor(order),
      el('a', { href: order.temporalUiUrl, target: '_blank', rel: 'noopener', class: 'small' }, 'workflow ↗'),
    ),
    order.failure ? reasonText(order.failure.message) : null,
    el('div', { class: 'queue-actions' }, actions),
  );
}

async function retryOrder(order, button) {
  busy.add(order.id);
  button.disabled = true;
  button.textContent = 'Retrying…';
  try {
    const res = await api('POST', `/orders/${order.id}/retry`, { body: {}, key: newKey() });
    if (res.status === 202) notify(`Retry of ${res.body.step ?? 'the step'} started for ${order.id.slice(0, 8)}.`);
    else notify(`Retry refused: ${problemText(res)}`, 'error');
  } catch (err) {
    notify(`Could not reach the API: ${err.message}`, 'error');
  } finally {
    busy.delete(order.id);
    await refreshQueues().catch(() => undefined);
  }
}

async function cancelOrder(order, input, button) {
  const reason = input.value.trim();
  if (!reason) {
    input.focus();
    notify('Give a reason for the cancellation.', 'error');
    return;
  }
  busy.add(order.id);
  button.disabled = true;
  button.textContent = 'Cancelling…';
  try {
    const res = await api('POST', `/orders/${order.id}/cancel`, { body: { reason }, key: newKey() });
    if (res.status === 200) notify(`Order ${order.id.slice(0, 8)} cancelled.`);
    else if (res.status === 202) notify(`Cancel of ${order.id.slice(0, 8)} is under way.`);
    else notify(`Cancel refused: ${problemText(res)}`, 'error');
  } catch (err) {
    notify(`Could not reach the API: ${err.message}`, 'error');
  } finally {
    busy.delete(order.id);
    await Promise.all([refreshOrders(), refreshQueues()]).catch(() => undefined);
  }
}

async function markPacked(order, button) {
  busy.add(order.id);
  button.disabled = true;
  button.textContent = 'Marking…';
  try {
    const res = await api('POST', `/orders/${order.id}/packed`, { body: {}, key: newKey() });
    if (res.status === 200) notify(`Order ${order.id.slice(0, 8)} marked packed.`);
    else notify(`Mark packed refused: ${problemText(res)}`, 'error');
  } catch (err) {
    notify(`Could not reach the API: ${err.message}`, 'error');
  } finally {
    busy.delete(order.id);
    await Promise.all([refreshOrders(), refreshQueues()]).catch(() => undefined);
  }
}

function renderAttention(orders) {
  $('#attention-count').textContent = String(orders.length);
  $('#attention-list').replaceChildren(
    ...(orders.length
      ? orders.map((order) => {
          const button = el('button', { type: 'button', disabled: busy.has(order.id) }, 'Retry');
          button.addEventListener('click', () => retryOrder(order, button));
          return queueItem(order, [button]);
        })
      : [el('li', { class: 'muted' }, 'Nothing waits for an operator.')]),
  );
}

function renderCancellable() {
  const byId = new Map([...waitingCancellable, ...latest].map((o) => [o.id, o]));
  const orders = [...byId.values()].filter((o) => o.cancellable);
  $('#cancellable-count').textContent = String(orders.length);
  const list = $('#cancellable-list');
  // Rebuild only when an order or its status changed; a reason being typed survives the rebuild (its text, focus and
  // caret), as an order may move a step on while the operator types.
  const ids = orders.map((o) => `${o.id}:${o.status}`).join(',');
  if (list.dataset.ids === ids) return;
  list.dataset.ids = ids;
  const typed = new Map(
    [...list.querySelectorAll('li[data-order-id] input')].map((input) => [
      input.closest('li').dataset.orderId,
      { value: input.value, focused: input === document.activeElement, caret: input.selectionStart },
    ]),
  );
  list.replaceChildren(
    ...(orders.length
      ? orders.map((order) => {
          const input = el('input', {
            type: 'text',
            maxlength: 500,
            placeholder: 'Reason',
            'aria-label': `Reason to cancel ${order.id.slice(0, 8)}`,
          });
          input.value = typed.get(order.id)?.value ?? '';
          const button = el('button', { type: 'button', class: 'danger', disabled: busy.has(order.id) }, 'Cancel');
          button.addEventListener('click', () => cancelOrder(order, input, button));
          if (!awaitingEventStatuses().includes(order.status)) return queueItem(order, [input, button]);
          // Waiting for the warehouse: an operator may mark it packed (POST /orders/:id/packed).
          const packed = el('button', { type: 'button', disabled: busy.has(order.id) }, 'Mark packed');
          packed.addEventListener('click', () => markPacked(order, packed));
          return queueItem(order, [packed, input, button]);
        })
      : [el('li', { class: 'muted' }, 'No order can be cancelled right now.')]),
  );
  for (const [id, { focused, caret }] of typed) {
    const input = focused ? list.querySelector(`li[data-order-id="${id}"] input`) : null;
    if (!input) continue;
    input.focus();
    if (caret !== null) input.setSelectionRange(caret, caret);
  }
}

async function refreshQueues() {
  await loadRegistry();
  const [attention, ...waiting] = await Promise.all(
    ['attention_required', ...cancellableStatuses()].map((status) => api('GET', `/orders?status=${status}&limit=50`)),
  );
  if (!attention.ok) throw new Error(`GET /orders?status=attention_required: ${problemText(attention)}`);
  renderAttention(attention.body.items);
  waitingCancellable = waiting.filter((r) => r.ok).flatMap((r) => r.body.items);
  renderCancellable();
}

// ---------------------------------------------------------------------------------------------------------------
// Returns of the order on display (returns.js)

const returns = returnsView({
  $,
  el,
  shown,
  isolated,
  api,
  apiKey,
  problemText,
  notify,
  money,
  timeOf,
  newKey,
  reasonText,
  statusBadge,
});

// ---------------------------------------------------------------------------------------------------------------
// Start

/** Runs `task` now and then every `ms`, reporting (not throwing) its errors. */
function every(ms, task) {
  const run = async () => {
    try {
      await task();
    } catch (err) {
      notify(err.message, 'error');
    } finally {
      setTimeout(run, ms);
    }
  };
  void run();
}

/** Stores the key typed at the top and reloads what the page shows with it. */
async function useApiKey(event) {
  event.preventDefault();
  sessionStorage.setItem(API_KEY_STORAGE, $('#api-key').value.trim());
  try {
    await Promise.all([refreshCatalogue(), refreshOrders(), refreshQueues(), returns.refresh()]);
    notify('API key set');
  } catch (err) {
    notify(err.message, 'error');
  }
}

async function start() {
  $('#api-key').value = apiKey();
  $('#key-form').addEventListener('submit', useApiKey);
  $('#order-form').addEventListener('submit', submitOrder);
  $('#add-line').addEventListener('click', addLine);
  try {
    await refreshCatalogue();
  } catch (err) {
    notify(err.message, 'error');
  }
  addLine();
  window.addEventListener('hashchange', () => returns.followAddress());
  returns.render();
  every(ORDERS_REFRESH_MS, async () => {
    await Promise.all([refreshOrders(), refreshQueues(), returns.refresh()]);
  });
  setTimeout(() => every(CATALOGUE_REFRESH_MS, refreshCatalogue), CATALOGUE_REFRESH_MS);
}

void start();
