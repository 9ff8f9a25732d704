-- The initial schema of 1.0 (the migrations of the 0.x series, squashed: see docs/versioning.md).
-- Generated with prisma migrate diff --from-empty --to-schema-datamodel prisma/schema.prisma --script, plus the
-- invariants and the seed row at the end.
-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "products" (
    "sku" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "price_minor" INTEGER NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "on_hand" INTEGER NOT NULL,
    "reserved" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "products_pkey" PRIMARY KEY ("sku")
);

-- CreateTable
CREATE TABLE "inventory_movements" (
    "id" TEXT NOT NULL,
    "sku" TEXT NOT NULL,
    "order_id" UUID,
    "reason" TEXT NOT NULL,
    "on_hand_delta" INTEGER NOT NULL,
    "reserved_delta" INTEGER NOT NULL,
    "on_hand_after" INTEGER,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "inventory_movements_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orders" (
    "id" UUID NOT NULL,
    "customer_email" TEXT NOT NULL,
    "customer_name" TEXT,
    "status" TEXT NOT NULL,
    "status_step" INTEGER NOT NULL DEFAULT 0,
    "failure_reason" TEXT,
    "halted_at" TIMESTAMPTZ(3),
    "halt_reason" TEXT,
    "halted_rank" INTEGER,
    "plan" JSONB,
    "currency" CHAR(3) NOT NULL,
    "total_minor" INTEGER NOT NULL,
    "client_id" TEXT NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "workflow_started_at" TIMESTAMPTZ(3),
    "completed_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "orders_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workflow_start_intents" (
    "order_id" UUID NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "available_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "workflow_start_intents_pkey" PRIMARY KEY ("order_id")
);

-- CreateTable
CREATE TABLE "order_lines" (
    "id" UUID NOT NULL,
    "order_id" UUID NOT NULL,
    "line_no" INTEGER NOT NULL,
    "sku" TEXT NOT NULL,
    "quantity" INTEGER NOT NULL,
    "unit_price_minor" INTEGER NOT NULL,

    CONSTRAINT "order_lines_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "invoices" (
    "id" UUID NOT NULL,
    "order_id" UUID NOT NULL,
    "number" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "total_minor" INTEGER NOT NULL,
    "issued_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    "voided_at" TIMESTAMPTZ(3),

    CONSTRAINT "invoices_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "invoice_counters" (
    "series" TEXT NOT NULL,
    "next" INTEGER NOT NULL,

    CONSTRAINT "invoice_counters_pkey" PRIMARY KEY ("series")
);

-- CreateTable
CREATE TABLE "order_step_results" (
    "order_id" UUID NOT NULL,
    "step" TEXT NOT NULL,
    "result" JSONB NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "order_step_results_pkey" PRIMARY KEY ("order_id","step")
);

-- CreateTable
CREATE TABLE "side_effect_claims" (
    "key" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "owner" TEXT NOT NULL,
    "attempts" INTEGER NOT NULL DEFAULT 1,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL,
    "provider_id" TEXT,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "side_effect_claims_pkey" PRIMARY KEY ("key")
);

-- CreateTable
CREATE TABLE "shipments" (
    "order_id" UUID NOT NULL,
    "carrier_id" TEXT NOT NULL,
    "tracking_number" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "shipments_pkey" PRIMARY KEY ("order_id")
);

-- CreateTable
CREATE TABLE "accounting_syncs" (
    "order_id" UUID NOT NULL,
    "external_id" TEXT NOT NULL,
    "accounting_id" TEXT NOT NULL,
    "synced_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "accounting_syncs_pkey" PRIMARY KEY ("order_id")
);

-- CreateTable
CREATE TABLE "api_clients" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "api_clients_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "secret_hash" CHAR(64) NOT NULL,
    "scopes" TEXT[],
    "label" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_records" (
    "client_id" TEXT NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "claim_id" UUID NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "status" TEXT NOT NULL,
    "response_status" INTEGER,
    "response_body" JSON,
    "response_headers" JSON,
    "resource_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3),

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("client_id","key")
);

-- CreateIndex
CREATE INDEX "inventory_movements_sku_created_at_idx" ON "inventory_movements"("sku", "created_at");

-- CreateIndex
CREATE INDEX "inventory_movements_order_id_idx" ON "inventory_movements"("order_id");

-- CreateIndex
CREATE UNIQUE INDEX "orders_workflow_id_key" ON "orders"("workflow_id");

-- CreateIndex
CREATE INDEX "orders_created_at_id_idx" ON "orders"("created_at", "id");

-- CreateIndex
CREATE INDEX "orders_client_id_created_at_id_idx" ON "orders"("client_id", "created_at", "id");

-- CreateIndex
CREATE INDEX "orders_workflow_started_at_idx" ON "orders"("workflow_started_at");

-- CreateIndex
CREATE UNIQUE INDEX "workflow_start_intents_workflow_id_key" ON "workflow_start_intents"("workflow_id");

-- CreateIndex
CREATE INDEX "workflow_start_intents_available_at_idx" ON "workflow_start_intents"("available_at");

-- CreateIndex
CREATE UNIQUE INDEX "order_lines_order_id_sku_key" ON "order_lines"("order_id", "sku");

-- CreateIndex
CREATE UNIQUE INDEX "order_lines_order_id_line_no_key" ON "order_lines"("order_id", "line_no");

-- CreateIndex
CREATE UNIQUE INDEX "invoices_order_id_key" ON "invoices"("order_id");

-- CreateIndex
CREATE UNIQUE INDEX "invoices_number_key" ON "invoices"("number");

-- CreateIndex
CREATE INDEX "side_effect_claims_status_claimed_at_idx" ON "side_effect_claims"("status", "claimed_at");

-- CreateIndex
CREATE UNIQUE INDEX "shipments_tracking_number_key" ON "shipments"("tracking_number");

-- CreateIndex
CREATE INDEX "api_keys_client_id_idx" ON "api_keys"("client_id");

-- CreateIndex
CREATE INDEX "idempotency_records_expires_at_idx" ON "idempotency_records"("expires_at");

-- AddForeignKey
ALTER TABLE "inventory_movements" ADD CONSTRAINT "inventory_movements_sku_fkey" FOREIGN KEY ("sku") REFERENCES "products"("sku") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "inventory_movements" ADD CONSTRAINT "inventory_movements_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "workflow_start_intents" ADD CONSTRAINT "workflow_start_intents_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_lines" ADD CONSTRAINT "order_lines_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_lines" ADD CONSTRAINT "order_lines_sku_fkey" FOREIGN KEY ("sku") REFERENCES "products"("sku") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "order_step_results" ADD CONSTRAINT "order_step_results_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "shipments" ADD CONSTRAINT "shipments_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "accounting_syncs" ADD CONSTRAINT "accounting_syncs_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- Invariants the application relies on, enforced by the database as the last line of defence (not expressible in
-- schema.prisma).
ALTER TABLE "products" ADD CONSTRAINT "products_stock_check" CHECK ("on_hand" >= 0 AND "reserved" >= 0 AND "reserved" <= "on_hand");
ALTER TABLE "products" ADD CONSTRAINT "products_price_check" CHECK ("price_minor" >= 0);
ALTER TABLE "order_lines" ADD CONSTRAINT "order_lines_quantity_check" CHECK ("quantity" > 0 AND "unit_price_minor" >= 0);
ALTER TABLE "invoices" ADD CONSTRAINT "invoices_status_check" CHECK ("status" IN ('issued', 'void'));
-- Claim statuses: sending, sent, failed (definitely not performed), cancelled (tombstone).
ALTER TABLE "side_effect_claims" ADD CONSTRAINT "side_effect_claims_status_check" CHECK ("status" IN ('sending', 'sent', 'failed', 'cancelled'));
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_status_check" CHECK ("status" IN ('processing', 'completed'));
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_completed_check" CHECK ("status" <> 'completed' OR ("response_status" IS NOT NULL AND "response_body" IS NOT NULL AND "completed_at" IS NOT NULL));
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_key_check" CHECK (char_length("key") BETWEEN 1 AND 255);
-- Retention counts from completion: NULL while processing (never purged), completed_at + retention once completed.
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_expiry_check" CHECK (("status" = 'processing') = ("expires_at" IS NULL));
ALTER TABLE "api_clients" ADD CONSTRAINT "api_clients_id_check" CHECK ("id" ~ '^[a-z0-9][a-z0-9._-]{0,62}$');
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_scopes_check" CHECK ("scopes" IS NOT NULL AND cardinality("scopes") > 0 AND "scopes" <@ ARRAY['orders:write', 'orders:read', 'orders:cancel', 'inventory:write', 'operator']::TEXT[]);
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_secret_hash_check" CHECK ("secret_hash" ~ '^[0-9a-f]{64}$');

-- The single invoice number series: numbers are INV-000001, INV-000002, ... without gaps.
INSERT INTO "invoice_counters" ("series", "next") VALUES ('INV', 1);
