-- AlterTable
ALTER TABLE "side_effect_claims" ADD COLUMN     "request" TEXT;

-- CreateTable
CREATE TABLE "order_resolutions" (
    "id" TEXT NOT NULL,
    "order_id" UUID NOT NULL,
    "step" TEXT NOT NULL,
    "decision" TEXT NOT NULL,
    "claim_key" TEXT,
    "provider_id" TEXT,
    "reason" TEXT NOT NULL,
    "decided_by" TEXT NOT NULL,
    "decided_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "order_resolutions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "order_resolutions_order_id_decided_at_idx" ON "order_resolutions"("order_id", "decided_at");

-- AddForeignKey
ALTER TABLE "order_resolutions" ADD CONSTRAINT "order_resolutions_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- Hand-written (prisma migrate diff does not model CHECK constraints), like the initial migration's.
-- A claim is `claimed` from the claim until its call starts (a halt may tombstone it), `sending` once a call may act.
ALTER TABLE "side_effect_claims" DROP CONSTRAINT "side_effect_claims_status_check";
ALTER TABLE "side_effect_claims" ADD CONSTRAINT "side_effect_claims_status_check" CHECK ("status" IN ('claimed', 'sending', 'sent', 'failed', 'cancelled'));
ALTER TABLE "order_resolutions" ADD CONSTRAINT "order_resolutions_decision_check" CHECK ("decision" IN ('performed', 'not_performed', 'closed'));
ALTER TABLE "order_resolutions" ADD CONSTRAINT "order_resolutions_reason_check" CHECK (char_length("reason") BETWEEN 1 AND 1000);
