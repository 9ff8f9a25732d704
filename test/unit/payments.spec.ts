/**
 * The pure parts of card payments: the card-number check on raw bodies, a provider step's business refusal and the
 * public failure it becomes, the masked token.
 */
import { describe, expect, it } from 'vitest';
import { businessRefusal, preconditionFailure, refusalFailure } from '../../activities/kit/failures.js';
import { authorizePayment, maskPaymentMethod } from '../../activities/steps/authorize-payment.step.js';
import { ProviderError } from '../../providers/kit/errors.js';
import { carriesCardNumber, luhnValid } from '../../src/common/json-body.js';
import { publicFailure } from '../../src/orders/public-failure.js';
import { ErrorType } from '../../workflows/errors.js';

const declined = (type: string, declineCode: unknown, status = 402) =>
  new ProviderError('payments provider POST /v1/payments → 402 (rejected): declined', 'rejected', status, {
    problem: { type: `https://order-fulfilment.example/problems/${type}`, title: 'Payment refused', declineCode },
  });

describe('card numbers in a raw body', () => {
  it('finds 13–19 digits passing Luhn, with spaces or dashes, as a string or a number, anywhere', () => {
    expect(luhnValid('4242424242424242')).toBe(true);
    expect(luhnValid('4242424242424241')).toBe(false);
    expect(carriesCardNumber('{"note":"my card 4242 4242 4242 4242 thanks"}')).toBe(true);
    expect(carriesCardNumber('{"a":{"b":["4000-0566-5566-5556"]}}')).toBe(true);
    expect(carriesCardNumber('{"n":4111111111111111}')).toBe(true);
    expect(carriesCardNumber('{"amex":"378282246310005"}')).toBe(true); // 15 digits
  });

  it('leaves what is not one: failing Luhn, too short or long, part of a longer run, a UUID of digits', () => {
    expect(carriesCardNumber('{"n":"4242424242424241"}')).toBe(false);
    expect(carriesCardNumber('{"n":"424242424242"}')).toBe(false); // 12 digits
    expect(carriesCardNumber('{"n":"42424242424242424242"}')).toBe(false); // 20 digits
    expect(carriesCardNumber('{"id":"12345678-1234-1234-1234-123456789012"}')).toBe(false);
    expect(carriesCardNumber('{"customer":{"email":"a@b.c"},"lines":[{"sku":"MUG","quantity":2}]}')).toBe(false);
    // Inside an id (a word): the simulated warehouse's packed report was refused 1 time in 1,000 for this.
    expect(luhnValid('0528041337700')).toBe(true);
    expect(carriesCardNumber('{"note":"packed (pick pick_94acd483cec0528041337700)"}')).toBe(false);
    expect(carriesCardNumber('{"ref":"ord4242424242424242x"}')).toBe(false);
  });
});

describe('a business refusal (authorizePayment: a card declined)', () => {
  it('is the declared problem type answered definitely, with the safe reason', () => {
    expect(businessRefusal(authorizePayment.refused, declined('card-declined', 'insufficient_funds'))).toEqual({
      failure: 'payment_declined',
      reason: 'insufficient_funds',
    });
    // A reason that is not a code is not kept (it could carry anything).
    expect(businessRefusal(authorizePayment.refused, declined('card-declined', 'Call <b>us</b>'))).toEqual({
      failure: 'payment_declined',
      reason: null,
    });
  });

  it('is not any other refusal, an unknown outcome, or a step without `refused`', () => {
    expect(businessRefusal(authorizePayment.refused, declined('validation-failed', 'x', 422))).toBeNull();
    expect(businessRefusal(authorizePayment.refused, new ProviderError('timeout', 'unavailable'))).toBeNull();
    expect(businessRefusal(undefined, declined('card-declined', 'generic_decline'))).toBeNull();
  });

  it("becomes a RefusedError whose reason the order's public failure reads: payment_declined with the code", () => {
    const err = declined('card-declined', 'insufficient_funds');
    const failure = refusalFailure({ failure: 'payment_declined', reason: 'insufficient_funds' }, 'Payments', err);
    expect(failure.type).toBe(ErrorType.Refused);
    expect(failure.nonRetryable).toBe(true);
    const reason = `${failure.type}: ${failure.message}`;
    expect(publicFailure('failed', reason)).toEqual({
      code: 'payment_declined',
      message: 'The payment was declined (insufficient_funds). Nothing was reserved, invoiced or charged.',
    });
    // With the compensations' suffix, and without a reason.
    expect(
      publicFailure('failed', `${ErrorType.Refused}: payment_declined: -; Payments: x (voidPayment failed: y)`),
    ).toEqual({
      code: 'payment_declined',
      message: 'The payment was declined. Nothing was reserved, invoiced or charged.',
    });
    // A code no step declares is not echoed.
    expect(publicFailure('failed', `${ErrorType.Refused}: made_up: x; y`)?.code).toBe('internal_error');
  });

  it("a failed precondition (shipOrder's hold) becomes payment_expired: compensated, nothing shipped or charged", () => {
    const failure = preconditionFailure('shipOrder', 'payment_expired', 'authorization_expiring');
    expect(failure.type).toBe(ErrorType.Refused);
    expect(failure.nonRetryable).toBe(true);
    expect(publicFailure('failed', `${failure.type}: ${failure.message} (voidPayment failed: y)`)).toEqual({
      code: 'payment_expired',
      message:
        'The payment authorization expired before the order shipped (authorization_expiring). Nothing was shipped ' +
        'or charged; reserved stock was released and any invoice voided.',
    });
    // A reason that is not a safe code is not echoed.
    const unsafe = preconditionFailure('shipOrder', 'payment_expired', 'Expired at 10:00 for Ada');
    expect(publicFailure('failed', `${unsafe.type}: ${unsafe.message}`)?.message).toMatch(
      /^The payment authorization expired before the order shipped\. Nothing/,
    );
  });

  it('masks the payment-method token in what operators see', () => {
    expect(maskPaymentMethod('pm_card_ok')).toBe('pm_…');
    expect(
      authorizePayment.summary!({
        orderId: 'o',
        customerEmail: 'a@b.c',
        customerName: null,
        currency: 'EUR',
        totalMinor: 2599,
        lines: [],
        payment: { method: 'pm_card_secret' },
      }),
    ).toBe('authorization of 25.99 EUR on card pm_…');
  });
});
