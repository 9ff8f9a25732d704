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


-- The warehouse reports orders packed with an API key of its own scope.
ALTER TABLE "api_keys" DROP CONSTRAINT "api_keys_scopes_check";
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_scopes_check" CHECK ("scopes" IS NOT NULL AND cardinality("scopes") > 0 AND "scopes" <@ ARRAY['orders:write', 'orders:read', 'orders:cancel', 'inventory:write', 'warehouse', 'operator']::TEXT[]);
