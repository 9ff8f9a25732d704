-- AlterTable
ALTER TABLE "orders" ADD COLUMN     "halt_reason" TEXT,
ADD COLUMN     "halted_at" TIMESTAMPTZ(3);

-- AlterTable
ALTER TABLE "invoices" ALTER COLUMN "issued_at" SET DEFAULT now();

-- AlterTable
ALTER TABLE "accounting_syncs" ALTER COLUMN "synced_at" SET DEFAULT now();

-- CreateTable
CREATE TABLE "shipments" (
    "order_id" UUID NOT NULL,
    "carrier_id" TEXT NOT NULL,
    "tracking_number" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "shipments_pkey" PRIMARY KEY ("order_id")
);

-- AddForeignKey
ALTER TABLE "shipments" ADD CONSTRAINT "shipments_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- Status ranks of the lifecycle change (see ORDER_STATUS_RANK in workflows/order-fulfilment.contract.ts):
-- received 0, inventory_reserved 10, invoiced 20, confirmation_sent 30, shipped 40, completed 50,
-- failed and cancelled 90. An order in attention_required under the first workflow version waited on the
-- accounting sync, which now ranks 45 (just before completed).
UPDATE "orders" SET "status_step" = CASE "status"
  WHEN 'received' THEN 0
  WHEN 'inventory_reserved' THEN 10
  WHEN 'invoiced' THEN 20
  WHEN 'confirmation_sent' THEN 30
  WHEN 'shipped' THEN 40
  WHEN 'attention_required' THEN 45
  WHEN 'completed' THEN 50
  ELSE 90 END;

-- Claim statuses: sending, sent, failed (definitely not performed), cancelled (tombstone).
ALTER TABLE "side_effect_claims" DROP CONSTRAINT "side_effect_claims_status_check";
ALTER TABLE "side_effect_claims" ADD CONSTRAINT "side_effect_claims_status_check"
  CHECK ("status" IN ('sending', 'sent', 'failed', 'cancelled'));

-- One tracking number belongs to one shipment.
ALTER TABLE "shipments" ADD CONSTRAINT "shipments_tracking_number_key" UNIQUE ("tracking_number");
