// The returns of the order on display (issue 24), for the page at `/` (app.js): GET /orders/:id and
// GET /orders/:id/returns for the order chosen with its "Returns" button in the list, and for an operator key the
// "Mark received" form of a return waiting for its parcel (POST /returns/:id/received) and the retry of a return
// waiting for an operator (POST /returns/:id/retry). Plain browser JavaScript like app.js, with app.js's helpers
// (given to `returnsView`): every value from the API is shown as text, never parsed as HTML.

/**
 * The returns card of the page. `page` holds app.js's helpers: `$`, `el`, `shown`, `isolated`, `api`, `apiKey`,
 * `problemText`, `notify`, `money`, `timeOf`, `newKey`, `reasonText` and `statusBadge`.
 */
export function returnsView(page) {
  const { $, el, shown, isolated, api, apiKey, problemText, notify, money, timeOf, newKey, reasonText, statusBadge } =
    page;

  /** The order whose returns the page shows (chosen with its "Returns" button; `#order=<id>` keeps it), or null. */
  let shownOrderId = orderIdInAddress();
  /** What the API last answered for the order on display: `{ orderId, order, items, problem }`, or null. */
  let shownReturns = null;

  function orderIdInAddress() {
    const match = /^#order=([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i.exec(window.location.hash);
    return match ? match[1].toLowerCase() : null;
  }

  /** Shows the returns of order `id` and marks its row in the list. */
  function showReturnsOf(id) {
    if (id !== shownOrderId) {
      shownOrderId = id;
      shownReturns = null;
      window.history.replaceState(null, '', `#order=${id}`);
    }
    for (const row of document.querySelectorAll('#order-rows tr[data-order-id]')) {
      row.classList.toggle('selected', row.dataset.orderId === id);
      row
        .querySelector('[data-testid="show-returns"]')
        ?.setAttribute('aria-pressed', String(row.dataset.orderId === id));
    }
    renderReturns();
    $('#returns-card').scrollIntoView({ block: 'nearest' });
    refreshReturns().catch((err) => notify(err.message, 'error'));
  }

  /**
   * Whether the API key is an operator's, who may report a return's parcel received and retry a return: `GET /health`
   * answers its `details` to operator keys only. Null until known; `roleOfKey` is the key it was learnt for.
   * (A warehouse key may report receipts too, but cannot read orders or returns, so this page shows it nothing.)
   */
  let operatorKey = null;
  let roleOfKey = null;

  async function loadKeyRole() {
    const key = apiKey();
    if (roleOfKey === key && operatorKey !== null) return;
    const res = await api('GET', '/health');
    // 200, or a 503 problem when a dependency is down: both carry `details` for an operator key only.
    operatorKey = Boolean(res.body && typeof res.body === 'object' && res.body.details);
    roleOfKey = key;
  }

  /** A return's status as shown (returns have no registry like GET /steps; the API's value when unknown). */
  const RETURN_LABELS = {
    requested: 'Requested',
    label_created: 'Awaiting the parcel',
    received: 'Received',
    refunded: 'Refunded',
    completed: 'Completed',
    withdrawn: 'Withdrawn',
    expired: 'Expired',
    attention_required: 'Needs an operator',
  };
  const returnLabelOf = (status) => RETURN_LABELS[status] ?? String(status).replaceAll('_', ' ');

  /** Returns with an operator retry in flight. */
  const returnsBusy = new Set();

  /**
   * The "Mark received" forms, by return id: what was typed (per SKU, as text), whether it is being sent, its last
   * message, and the Idempotency-Key of the receipt. The key is made at a submit that has none and kept until the API
   * answered for good (2xx or 4xx): a resubmit after a network error or a 5xx (the workflow may have taken the receipt
   * all the same) sends the same key, so it is the same receipt, never a second one. The form survives the refreshes.
   */
  const receiptForms = new Map();

  function receiptStateOf(ret) {
    let state = receiptForms.get(ret.id);
    if (!state) {
      const values = new Map(ret.lines.map((line) => [line.sku, { received: String(line.quantity), damaged: '0' }]));
      state = { values, key: null, busy: false, message: null };
      receiptForms.set(ret.id, state);
    }
    return state;
  }

  /** A whole number of units typed into a form, or null. */
  function unitsOf(text) {
    const trimmed = String(text).trim();
    return /^\d{1,6}$/.test(trimmed) ? Number(trimmed) : null;
  }

  /** An http(s) address from the API as a link target, or null (never a `javascript:` or other scheme). */
  function httpUrl(text) {
    try {
      const url = new URL(String(text));
      return url.protocol === 'https:' || url.protocol === 'http:' ? url.href : null;
    } catch {
      return null;
    }
  }

  function returnBadge(status) {
    return el('span', { class: `badge ${status}`, 'data-testid': 'return-status' }, returnLabelOf(status));
  }

  /** The carrier's label of a return: a link to it and its tracking number. */
  function labelPart(label) {
    if (!label) return el('span', { class: 'muted small', 'data-testid': 'return-label' }, 'no label yet');
    const url = httpUrl(label.url);
    return el(
      'span',
      { class: 'small', 'data-testid': 'return-label' },
      url
        ? el('a', { href: url, target: '_blank', rel: 'noopener noreferrer' }, 'Return label ↗')
        : el('span', { title: shown(label.url) }, 'Return label (no web address)'),
      label.trackingNumber
        ? [' · tracking ', el('span', { class: 'mono', 'data-testid': 'tracking' }, shown(label.trackingNumber))]
        : null,
    );
  }

  /** The refund of a return: its amount (fixed at the receipt), then whether it is refunded and credited yet. */
  function refundPart(ret) {
    const refund = ret.refund;
    if (!refund) return null;
    // An order paid on account has no card to refund: its credit note is the refund.
    const refunded = refund.refundedAt
      ? `card refunded ${timeOf(refund.refundedAt)}${refund.refundId ? ` (${shown(refund.refundId)})` : ''}`
      : ret.status === 'completed'
        ? 'no card payment to refund'
        : 'not refunded yet';
    const credited = refund.creditedAt
      ? `credit note ${shown(refund.creditNoteId ?? '')} ${timeOf(refund.creditedAt)}`
      : 'no credit note yet';
    return el(
      'div',
      { class: 'refund small', 'data-testid': 'refund' },
      'Refund ',
      el('strong', { 'data-testid': 'refund-amount' }, money(refund.amountMinor, refund.currency)),
      el('span', { class: 'muted' }, ` · ${refunded} · ${credited}`),
    );
  }

  /** The lines of a return: what was asked back, at what unit price, and what arrived. */
  function returnLines(ret, currency) {
    const price = (minor) => (currency ? money(minor, currency) : '');
    return el(
      'table',
      { class: 'table compact', 'data-testid': 'return-lines' },
      el(
        'thead',
        {},
        el(
          'tr',
          {},
          el('th', {}, 'SKU'),
          el('th', { class: 'num' }, 'Asked'),
          el('th', { class: 'num' }, 'Unit price'),
          el('th', { class: 'num' }, 'Received'),
          el('th', { class: 'num' }, 'Damaged'),
        ),
      ),
      el(
        'tbody',
        {},
        ret.lines.map((line) =>
          el(
            'tr',
            { 'data-sku': line.sku },
            el('td', { class: 'mono' }, shown(line.sku)),
            el('td', { class: 'num' }, line.quantity),
            el('td', { class: 'num' }, price(line.unitPriceMinor)),
            el('td', { class: 'num', 'data-testid': 'received' }, line.receivedQuantity ?? '–'),
            el('td', { class: 'num', 'data-testid': 'damaged' }, line.damagedQuantity ?? '–'),
          ),
        ),
      ),
    );
  }

  /** The operator's "Mark received" form of a return waiting for its parcel: per line, units received and damaged. */
  function receiptForm(ret) {
    const state = receiptStateOf(ret);
    const rows = ret.lines.map((line) => {
      const typed = state.values.get(line.sku) ?? { received: String(line.quantity), damaged: '0' };
      state.values.set(line.sku, typed);
      const input = (field, label) => {
        const node = el('input', {
          type: 'number',
          min: 0,
          max: line.quantity,
          step: 1,
          inputmode: 'numeric',
          'data-field': field,
          'data-sku': line.sku,
          'aria-label': `${label} units of ${shown(line.sku)}`,
        });
        node.value = typed[field];
        node.addEventListener('input', () => (typed[field] = node.value));
        return node;
      };
      return el(
        'tr',
        { 'data-sku': line.sku },
        el('td', { class: 'mono' }, shown(line.sku)),
        el('td', { class: 'num' }, line.quantity),
        el('td', {}, input('received', 'Received')),
        el('td', {}, input('damaged', 'Damaged')),
      );
    });
    const button = el('button', { type: 'submit', disabled: state.busy }, state.busy ? 'Sending…' : 'Mark received');
    const form = el(
      'form',
      { class: 'receipt', 'data-testid': 'receipt-form', novalidate: true, autocomplete: 'off' },
      el('div', { class: 'small muted' }, 'The parcel arrived? Count what is in it:'),
      el(
        'table',
        { class: 'table compact' },
        el(
          'thead',
          {},
          el(
            'tr',
            {},
            el('th', {}, 'SKU'),
            el('th', { class: 'num' }, 'Asked'),
            el('th', {}, 'Received'),
            el('th', {}, 'Damaged'),
          ),
        ),
        el('tbody', {}, rows),
      ),
      el(
        'div',
        { class: 'actions' },
        button,
        el(
          'span',
          {
            class: `form-result small ${state.message?.kind ?? ''}`,
            role: state.message?.kind === 'error' ? 'alert' : 'status',
            'data-testid': 'receipt-result',
          },
          state.message?.text ?? '',
        ),
      ),
    );
    form.addEventListener('submit', (event) => {
      event.preventDefault();
      void markReceived(ret, state);
    });
    return form;
  }

  /** POST /returns/:id/received with what the form says (see `receiptForms` for its Idempotency-Key). */
  async function markReceived(ret, state) {
    if (state.busy) return;
    const lines = ret.lines.map((line) => {
      const typed = state.values.get(line.sku);
      return { sku: line.sku, quantity: unitsOf(typed.received), damaged: unitsOf(typed.damaged) };
    });
    if (lines.some((line) => line.quantity === null || line.damaged === null)) {
      state.message = { kind: 'error', text: 'Give whole numbers of units (0 or more) for every line.' };
      renderReturns();
      return;
    }
    state.key ??= newKey();
    state.busy = true;
    state.message = null;
    renderReturns();
    const rma = shown(ret.rmaNumber);
    try {
      const res = await api('POST', `/returns/${ret.id}/received`, { body: { lines }, key: state.key });
      if (res.status >= 500) {
        // The receipt may have been taken all the same: a resubmit keeps the key, so it is the same receipt.
        state.message = { kind: 'error', text: `${problemText(res)}. Send it again: it stays the same receipt.` };
      } else {
        state.key = null;
        if (res.ok) {
          state.message = { kind: 'ok', text: 'Received; the restock and the refund follow.' };
          notify(`${rma} marked received; its refund follows.`);
        } else {
          const errors = Array.isArray(res.body?.errors) ? res.body.errors.map((e) => `${e.path}: ${e.message}`) : [];
          state.message = { kind: 'error', text: [problemText(res), ...errors].join(' · ') };
          notify(`Mark received refused for ${rma}: ${problemText(res)}`, 'error');
        }
      }
    } catch (err) {
      state.message = {
        kind: 'error',
        text: `Could not reach the API (${err.message}). Send it again: it stays the same receipt.`,
      };
    } finally {
      state.busy = false;
      renderReturns();
      await refreshReturns().catch(() => undefined);
    }
  }

  /** Operator action: POST /returns/:id/retry for a return in attention_required. */
  async function retryReturn(ret, button) {
    returnsBusy.add(ret.id);
    button.disabled = true;
    button.textContent = 'Retrying…';
    const rma = shown(ret.rmaNumber);
    try {
      const res = await api('POST', `/returns/${ret.id}/retry`, { body: {}, key: newKey() });
      if (res.status === 202) notify(`Retry of ${shown(res.body.step ?? 'the step')} started for ${rma}.`);
      else notify(`Retry refused for ${rma}: ${problemText(res)}`, 'error');
    } catch (err) {
      notify(`Could not reach the API: ${err.message}`, 'error');
    } finally {
      returnsBusy.delete(ret.id);
      await refreshReturns().catch(() => undefined);
    }
  }

  function returnItem(ret, currency) {
    const retry = el('button', { type: 'button', disabled: returnsBusy.has(ret.id) }, 'Retry');
    retry.addEventListener('click', () => retryReturn(ret, retry));
    const times = [
      `asked ${timeOf(ret.createdAt)}`,
      ret.receivedAt ? `received ${timeOf(ret.receivedAt)}` : null,
      ret.endedAt ? `ended ${timeOf(ret.endedAt)}` : null,
    ].filter(Boolean);
    return el(
      'li',
      { 'data-return-id': ret.id, 'data-status': ret.status },
      el(
        'div',
        { class: 'queue-head' },
        el('span', { class: 'mono', title: ret.id, 'data-testid': 'rma' }, shown(ret.rmaNumber)),
        returnBadge(ret.status),
        labelPart(ret.label),
      ),
      el(
        'div',
        { class: 'muted small' },
        `${String(ret.reason?.code ?? '').replaceAll('_', ' ')}`,
        ret.reason?.text ? [': “', isolated(ret.reason.text), '”'] : null,
        ` · ${times.join(' · ')}`,
      ),
      ret.attentionReason ? reasonText(ret.attentionReason) : null,
      returnLines(ret, currency),
      refundPart(ret),
      operatorKey && ret.status === 'label_created' ? receiptForm(ret) : null,
      operatorKey && ret.status === 'attention_required' ? el('div', { class: 'queue-actions' }, retry) : null,
    );
  }

  /** The order on display, above its returns. */
  function shownOrderHead(data) {
    const order = data?.order;
    const id = shownOrderId;
    if (!order) return [el('span', { class: 'mono', title: id }, id.slice(0, 8))];
    const customer = order.customer?.name || order.customer?.email || '';
    return [
      el('span', { class: 'mono', title: order.id }, order.id.slice(0, 8)),
      ' ',
      isolated(customer),
      ' · ',
      money(order.totalMinor, order.currency),
      ' ',
      statusBadge(order.status),
    ];
  }

  /** Draws the returns card again, unless nothing it shows changed (a form being filled in keeps its focus). */
  function renderReturns() {
    const head = $('#returns-order');
    const list = $('#returns-list');
    if (!shownOrderId) {
      if (list.dataset.signature === '') return;
      list.dataset.signature = '';
      head.replaceChildren('Choose “Returns” on an order above to see its returns.');
      list.replaceChildren();
      return;
    }
    const data = shownReturns?.orderId === shownOrderId ? shownReturns : null;
    const forms = [...receiptForms].map(([id, f]) => [id, f.busy, f.message]);
    const signature = JSON.stringify([shownOrderId, operatorKey, data, forms, [...returnsBusy]]);
    if (list.dataset.signature === signature) return;
    list.dataset.signature = signature;

    head.replaceChildren(
      'Order ',
      ...shownOrderHead(data),
      ...(data?.problem ? [el('div', { class: 'reason small', role: 'alert' }, data.problem)] : []),
    );
    const active = document.activeElement;
    const focused =
      active && list.contains(active) && active.dataset.field
        ? {
            id: active.closest('li[data-return-id]')?.dataset.returnId,
            sku: active.dataset.sku,
            field: active.dataset.field,
          }
        : null;
    const currency = data?.order?.currency;
    const items = data?.items ?? [];
    list.replaceChildren(
      ...(!data
        ? [el('li', { class: 'muted' }, 'Loading…')]
        : items.length
          ? items.map((ret) => returnItem(ret, currency))
          : data.problem
            ? []
            : [el('li', { class: 'muted' }, 'No returns for this order.')]),
    );
    if (focused?.id) {
      const input = list.querySelector(
        `li[data-return-id="${window.CSS.escape(focused.id)}"] input[data-field="${window.CSS.escape(focused.field)}"][data-sku="${window.CSS.escape(focused.sku)}"]`,
      );
      input?.focus();
    }
  }

  /** Loads the order on display and its returns (GET /orders/:id, GET /orders/:id/returns) and draws them. */
  async function refreshReturns() {
    const id = shownOrderId;
    if (!id) {
      renderReturns();
      return;
    }
    await loadKeyRole();
    const [order, returns] = await Promise.all([api('GET', `/orders/${id}`), api('GET', `/orders/${id}/returns`)]);
    if (id !== shownOrderId) return;
    shownReturns = {
      orderId: id,
      order: order.ok ? order.body : null,
      items: returns.ok ? returns.body.items : [],
      problem: returns.ok ? null : `GET /orders/${id.slice(0, 8)}/returns: ${problemText(returns)}`,
    };
    // A form goes when its return no longer waits for the parcel (unless its answer is still awaited).
    const waiting = new Set(shownReturns.items.filter((r) => r.status === 'label_created').map((r) => r.id));
    for (const [returnId, state] of receiptForms) {
      if (!waiting.has(returnId) && !state.busy) receiptForms.delete(returnId);
    }
    $('#returns-updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
    renderReturns();
  }

  return {
    /** The id of the order on display, or null. */
    shownOrderId: () => shownOrderId,
    show: showReturnsOf,
    refresh: refreshReturns,
    render: renderReturns,
    /** Follows `#order=<id>` when the address changes. */
    followAddress() {
      const id = orderIdInAddress();
      if (id && id !== shownOrderId) showReturnsOf(id);
    },
  };
}
