-- Returns: a customer sends shipped units back: the return workflow (`return-<id>`) gets a label from the carrier,
-- waits for the warehouse's receipt, restocks the undamaged units, refunds the card and credits the invoice.

-- RMA numbers (`RMA-000042`): allocated when a return is asked for: gaps are harmless (a refused request may use one).
CREATE SEQUENCE "return_rma_seq";

CREATE TABLE "returns" (
    "id" UUID NOT NULL,
    "order_id" UUID NOT NULL,
    "client_id" TEXT NOT NULL,
    "rma_number" TEXT NOT NULL DEFAULT ('RMA-' || lpad(nextval('return_rma_seq')::text, 6, '0')),
    "status" TEXT NOT NULL,
    "reason_code" TEXT NOT NULL,
    "reason_text" TEXT,
    "currency" CHAR(3) NOT NULL,
    "damaged_refund_percent" INTEGER NOT NULL,
    "workflow_id" TEXT NOT NULL,
    "workflow_started_at" TIMESTAMPTZ(3),
    "label_id" TEXT,
    "label_url" TEXT,
    "tracking_number" TEXT,
    "received_at" TIMESTAMPTZ(3),
    "received_by" TEXT,
    "refund_minor" INTEGER,
    "refund_id" TEXT,
    "refunded_at" TIMESTAMPTZ(3),
    "credit_note_id" TEXT,
    "credited_at" TIMESTAMPTZ(3),
    "attention_reason" TEXT,
    "ended_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "returns_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "returns_rma_number_key" ON "returns"("rma_number");
CREATE UNIQUE INDEX "returns_workflow_id_key" ON "returns"("workflow_id");
CREATE INDEX "returns_order_id_idx" ON "returns"("order_id");
CREATE INDEX "returns_status_idx" ON "returns"("status");
ALTER TABLE "returns" ADD CONSTRAINT "returns_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "returns" ADD CONSTRAINT "returns_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "api_clients"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "returns" ADD CONSTRAINT "returns_status_check" CHECK ("status" IN ('requested', 'label_created', 'received', 'refunded', 'completed', 'withdrawn', 'expired', 'attention_required'));
ALTER TABLE "returns" ADD CONSTRAINT "returns_reason_code_check" CHECK ("reason_code" IN ('wrong_size', 'damaged', 'not_as_described', 'changed_mind', 'other'));
ALTER TABLE "returns" ADD CONSTRAINT "returns_reason_text_check" CHECK (char_length("reason_text") <= 1000);
ALTER TABLE "returns" ADD CONSTRAINT "returns_damaged_refund_percent_check" CHECK ("damaged_refund_percent" BETWEEN 0 AND 100);
ALTER TABLE "returns" ADD CONSTRAINT "returns_refund_minor_check" CHECK ("refund_minor" >= 0);

CREATE TABLE "return_lines" (
    "return_id" UUID NOT NULL,
    "sku" TEXT NOT NULL,
    "quantity" INTEGER NOT NULL,
    "unit_price_minor" INTEGER NOT NULL,
    "received_quantity" INTEGER,
    "damaged_quantity" INTEGER,

    CONSTRAINT "return_lines_pkey" PRIMARY KEY ("return_id", "sku")
);
ALTER TABLE "return_lines" ADD CONSTRAINT "return_lines_return_id_fkey" FOREIGN KEY ("return_id") REFERENCES "returns"("id") ON DELETE CASCADE ON UPDATE CASCADE;
ALTER TABLE "return_lines" ADD CONSTRAINT "return_lines_quantities_check" CHECK (
  "quantity" >= 1 AND "unit_price_minor" >= 0
  AND ("received_quantity" IS NULL OR "received_quantity" BETWEEN 0 AND "quantity")
  AND ("damaged_quantity" IS NULL OR "damaged_quantity" BETWEEN 0 AND coalesce("received_quantity", 0)));

-- The units an order's open returns claim never exceed what shipped (shipment movements): a CHECK on every return
-- line, counting the order's other open returns (withdrawn and expired ones no longer claim their units). Every
-- writer of returns locks the order row first (`SELECT ... FOR UPDATE`, src/returns/), so the check of a second
-- request racing for the same units runs after the first committed, and sees it. (A SQL function: Prisma's driver
-- adapter splits migration scripts at every semicolon, which rules out a PL/pgSQL trigger body here.)
CREATE FUNCTION "return_line_within_shipped"(the_return UUID, the_sku TEXT, the_quantity INTEGER) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT sum(-m.on_hand_delta) FROM inventory_movements m
                   WHERE m.order_id = r.order_id AND m.sku = the_sku AND m.reason = 'shipment'), 0)
         >= the_quantity + coalesce((SELECT sum(l.quantity) FROM return_lines l JOIN returns o ON o.id = l.return_id
                                     WHERE o.order_id = r.order_id AND l.sku = the_sku AND l.return_id <> the_return
                                       AND o.status NOT IN ('withdrawn', 'expired')), 0)
  FROM returns r WHERE r.id = the_return
$$;
ALTER TABLE "return_lines" ADD CONSTRAINT "return_lines_within_shipped"
  CHECK ("return_line_within_shipped"("return_id", "sku", "quantity"));

-- What the order's returns refunded (minor units): always the sum of its returns' refunds, written absolutely.
ALTER TABLE "payments" ADD COLUMN "refunded_minor" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "payments" ADD CONSTRAINT "payments_refunded_check" CHECK ("refunded_minor" >= 0 AND "refunded_minor" <= "captured_minor");
