/**
 * The ports activities depend on: the database and the three providers (email, accounting, carrier). Activities never import Nest
 * or HTTP code; the worker wires real implementations in, unit tests wire fakes.
 */
import type { Prisma } from '../prisma/generated/client.js';

/**
 * Raw SQL on PostgreSQL, called as a tagged template (`` db.$queryRaw`SELECT ... WHERE id = ${id}::uuid` ``) or
 * with a `Prisma.sql` fragment; every `${value}` becomes a bind parameter, never text in the statement. The method
 * names and shapes are those of the Prisma client, so `PrismaClient` satisfies this port too; the worker wires
 * src/database/sql-client.ts (node-postgres, no query compilation per call).
 */
export interface SqlQueries {
  /**
   * Runs a statement and returns its rows (`T` is the row array type; columns by their SQL names). Values as
   * node-postgres maps them: integer and text columns as number and string, timestamptz as Date, json as parsed.
   * @throws the driver's error (e.g. a unique violation, SQLSTATE 23505; a lost connection) unchanged.
   */
  $queryRaw<T = unknown>(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): Promise<T>;
  /** Runs a statement and returns the number of rows it changed. @throws as {@link SqlQueries.$queryRaw}. */
  $executeRaw(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): Promise<number>;
}

/** The database port: {@link SqlQueries} and transactions. */
export interface Db extends SqlQueries {
  /**
   * Runs `fn` in one transaction (READ COMMITTED) on one connection: committed when `fn` resolves, rolled back
   * when it throws (the error is rethrown unchanged).
   */
  $transaction<T>(fn: (tx: SqlQueries) => Promise<T>): Promise<T>;
}

/** An email to send. */
export interface EmailMessage {
  /** Recipient address. */
  to: string;
  subject: string;
  /** Plain-text body. */
  text: string;
  /** Free-form tags the provider stores with the message (e.g. `{ orderId }`). */
  metadata?: Record<string, string>;
}

/** The provider's answer to an accepted email. */
export interface EmailSendResult {
  /** The provider's message id, e.g. `msg_3f2a...`. Stable for a given idempotency key. */
  messageId: string;
}

/**
 * A transactional email provider.
 * `send` must be called with an idempotency key derived from the work (e.g.
 * `order-confirmation:<orderId>`); the implementation sends it as the `Idempotency-Key` header on every
 * attempt, so the provider performs the send at most once per key.
 * @throws ProviderError on any failure, classified by `kind`.
 */
export interface EmailProvider {
  send(message: EmailMessage, idempotencyKey: string): Promise<EmailSendResult>;
}

/** An invoice as the accounting system stores it. Amounts in integer minor units. */
export interface AccountingInvoice {
  /** Our id for the invoice in the accounting system: the invoice number, e.g. `INV-000042`. */
  externalId: string;
  orderId: string;
  customerEmail: string;
  /** ISO 4217 code, e.g. `EUR`. */
  currency: string;
  /** Total in minor units (cents). */
  totalMinor: number;
  /** ISO 8601 timestamp of issue. */
  issuedAt: string;
  lines: Array<{ sku: string; quantity: number; unitPriceMinor: number }>;
}

/** The accounting system's answer to an upsert. */
export interface AccountingUpsertResult {
  /** The accounting system's own id for the invoice, e.g. `acc_inv_...`. */
  accountingId: string;
}

/**
 * An accounting system reachable over HTTP. `upsertInvoice` creates or replaces the invoice by
 * `externalId` (PUT semantics) and sends `idempotencyKey` as the `Idempotency-Key` header.
 * @throws ProviderError on any failure, classified by `kind`.
 */
export interface AccountingProvider {
  upsertInvoice(invoice: AccountingInvoice, idempotencyKey: string): Promise<AccountingUpsertResult>;
}

/** A shipment to hand to the carrier: who receives which items. Built only from stored, immutable order data. */
export interface ShipmentRequest {
  /** Our id for the shipment at the carrier: the order id. */
  reference: string;
  recipient: {
    email: string;
    /** Omitted when the order has no customer name. */
    name?: string;
  };
  /** One entry per order line, in line order; `quantity` in units (integer > 0). */
  items: Array<{ sku: string; quantity: number }>;
}

/** The carrier's answer to an accepted shipment. */
export interface ShipmentResult {
  /** The carrier's shipment id, e.g. `shp_3f2a...`. Stable for a given idempotency key. */
  shipmentId: string;
  /** The carrier's tracking number, e.g. `1Z...`. Stable for a given idempotency key. */
  trackingNumber: string;
}

/**
 * A parcel carrier reachable over HTTP. `createShipment` must be called with an idempotency key derived
 * from the work (`shipment:<orderId>`); the implementation sends it as the `Idempotency-Key` header on every
 * attempt, so the carrier creates at most one shipment per key and replays its first answer.
 * @throws ProviderError on any failure, classified by `kind` (and `mayHaveActed`).
 */
export interface CarrierProvider {
  createShipment(request: ShipmentRequest, idempotencyKey: string): Promise<ShipmentResult>;
}

/** Tunables of the activities. */
export interface ActivitySettings {
  /**
   * How long a `sending` claim protects its owner, in ms. A claim older than this whose owner is not
   * the current activity is reclaimed by a conditional UPDATE. Must exceed the provider profile's
   * start-to-close timeout (30 s) so a live attempt is never reclaimed. Default 120000.
   */
  claimLeaseMs: number;
}

/** Everything `createActivities` needs. */
/**
 * The `Idempotency-Key` store's retention, as the API implements it (the worker passes
 * `IdempotencyService.purgeExpired`, so the one purge statement lives with the store and its rules).
 */
export interface IdempotencyRecords {
  /**
   * Deletes the records whose retention has passed at `now` (never one a running request holds). Idempotent;
   * safe to run from several processes at once.
   * @returns how many records were deleted.
   */
  purgeExpired(now: Date): Promise<number>;
}

export interface ActivityDeps {
  db: Db;
  idempotencyRecords: IdempotencyRecords;
  email: EmailProvider;
  accounting: AccountingProvider;
  carrier: CarrierProvider;
  settings: ActivitySettings;
}
