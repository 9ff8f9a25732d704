-- CreateTable
CREATE TABLE "idempotency_records" (
    "scope" TEXT NOT NULL,
    "key" VARCHAR(255) NOT NULL,
    "fingerprint" CHAR(64) NOT NULL,
    "status" TEXT NOT NULL,
    "response_status" INTEGER,
    "response_body" JSON,
    "response_headers" JSON,
    "resource_id" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "idempotency_records_pkey" PRIMARY KEY ("scope","key")
);

-- CreateIndex
CREATE INDEX "idempotency_records_expires_at_idx" ON "idempotency_records"("expires_at");


-- Invariants the application relies on, enforced by the database as the last line of defence.
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_status_check" CHECK ("status" IN ('processing', 'completed'));
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_completed_check" CHECK ("status" <> 'completed' OR ("response_status" IS NOT NULL AND "response_body" IS NOT NULL AND "completed_at" IS NOT NULL));
ALTER TABLE "idempotency_records" ADD CONSTRAINT "idempotency_records_key_check" CHECK (char_length("key") BETWEEN 1 AND 255);
