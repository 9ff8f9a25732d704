-- AlterTable
ALTER TABLE "orders" ADD COLUMN     "payment_method" TEXT;

-- CreateTable
CREATE TABLE "payments" (
    "order_id" UUID NOT NULL,
    "provider_payment_id" TEXT,
    "status" TEXT NOT NULL,
    "amount_minor" INTEGER NOT NULL,
    "currency" CHAR(3) NOT NULL,
    "captured_minor" INTEGER NOT NULL DEFAULT 0,
    "voided_minor" INTEGER NOT NULL DEFAULT 0,
    "decline_code" TEXT,
    "capture_before" TIMESTAMPTZ(3),
    "authorized_at" TIMESTAMPTZ(3),
    "captured_at" TIMESTAMPTZ(3),
    "voided_at" TIMESTAMPTZ(3),
    "declined_at" TIMESTAMPTZ(3),

    CONSTRAINT "payments_pkey" PRIMARY KEY ("order_id")
);

-- CreateIndex
CREATE UNIQUE INDEX "payments_provider_payment_id_key" ON "payments"("provider_payment_id");

-- AddForeignKey
ALTER TABLE "payments" ADD CONSTRAINT "payments_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- The payment's states and amounts (minor units), as the payment steps write them.
ALTER TABLE "payments" ADD CONSTRAINT "payments_status_check" CHECK ("status" IN ('authorized', 'captured', 'voided', 'declined'));
ALTER TABLE "payments" ADD CONSTRAINT "payments_amounts_check" CHECK ("amount_minor" >= 0 AND "captured_minor" >= 0 AND "voided_minor" >= 0 AND "captured_minor" + "voided_minor" <= "amount_minor");
