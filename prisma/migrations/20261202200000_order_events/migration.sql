-- CreateTable
CREATE TABLE "order_events" (
    "order_id" UUID NOT NULL,
    "event" TEXT NOT NULL,
    "report_id" TEXT NOT NULL,
    "reported_by" TEXT NOT NULL,
    "report" JSONB NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),

    CONSTRAINT "order_events_pkey" PRIMARY KEY ("order_id","event")
);

-- AddForeignKey
ALTER TABLE "order_events" ADD CONSTRAINT "order_events_order_id_fkey" FOREIGN KEY ("order_id") REFERENCES "orders"("id") ON DELETE CASCADE ON UPDATE CASCADE;

