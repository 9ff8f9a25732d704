-- API clients and their keys (issue 7). Orders and idempotency records get an owning client.
-- Rows stored before authentication existed belong to the client `legacy`, which has no keys: operators see
-- them, and `npm run keys -- create --client legacy ...` can give that client a key if it must read them.

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

-- CreateIndex
CREATE INDEX "api_keys_client_id_idx" ON "api_keys"("client_id");

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

INSERT INTO "api_clients" ("id", "name") VALUES ('legacy', 'Everything stored before API keys existed');

-- Orders: owner column, existing orders belong to `legacy`.
ALTER TABLE "orders" ADD COLUMN "client_id" TEXT;
UPDATE "orders" SET "client_id" = 'legacy';
ALTER TABLE "orders" ALTER COLUMN "client_id" SET NOT NULL;

-- CreateIndex
CREATE INDEX "orders_client_id_created_at_id_idx" ON "orders"("client_id", "created_at", "id");

-- AddForeignKey
ALTER TABLE "orders" ADD CONSTRAINT "orders_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Idempotency records: the scope column becomes the owning client (every existing record was `anonymous`).
ALTER TABLE "idempotency_records" RENAME COLUMN "scope" TO "client_id";
UPDATE "idempotency_records" SET "client_id" = 'legacy';

-- AddForeignKey
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Each claim gets its own id: a completion writes only into the record its own claim inserted.
ALTER TABLE "idempotency_records" ADD COLUMN "claim_id" UUID NOT NULL DEFAULT gen_random_uuid();
ALTER TABLE "idempotency_records" ALTER COLUMN "claim_id" DROP DEFAULT;

-- Retention counts from completion: NULL while processing (never purged), completed_at + retention once
-- completed. Existing completed records keep their retention length, recounted from their completion.
ALTER TABLE "idempotency_records" ALTER COLUMN "expires_at" DROP NOT NULL;
UPDATE "idempotency_records" SET "expires_at" = NULL WHERE "status" = 'processing';
UPDATE "idempotency_records" SET "expires_at" = "completed_at" + ("expires_at" - "created_at") WHERE "status" = 'completed';

-- Invariants the application relies on, enforced by the database as the last line of defence.
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_expiry_check" CHECK (("status" = 'processing') = ("expires_at" IS NULL));
ALTER TABLE "api_clients" ADD CONSTRAINT "api_clients_id_check" CHECK ("id" ~ '^[a-z0-9][a-z0-9._-]{0,62}$');
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_scopes_check" CHECK ("scopes" IS NOT NULL AND cardinality("scopes") > 0 AND "scopes" <@ ARRAY['orders:write', 'orders:read', 'orders:cancel', 'inventory:write', 'operator']::TEXT[]);
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_secret_hash_check" CHECK ("secret_hash" ~ '^[0-9a-f]{64}$');
