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

-- CreateIndex
CREATE UNIQUE INDEX "workflow_start_intents_workflow_id_key" ON "workflow_start_intents"("workflow_id");

-- CreateIndex
CREATE INDEX "workflow_start_intents_available_at_idx" ON "workflow_start_intents"("available_at");

-- AddForeignKey
ALTER TABLE "workflow_start_intents" ADD CONSTRAINT "workflow_start_intents_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;


-- Backfill: every open order whose workflow was never started gets its intent, so the dispatcher starts it
INSERT INTO "workflow_start_intents" ("order_id", "workflow_id")
SELECT "id", "workflow_id" FROM "orders"
WHERE "workflow_started_at" IS NULL AND "status" NOT IN ('completed', 'failed', 'cancelled')
ON CONFLICT DO NOTHING;
