-- A received return claims the units that came back, not the units it asked for: units asked for and never received
-- may be returned again (a partial or empty parcel). Withdrawn and expired returns claim nothing, as before.
CREATE OR REPLACE FUNCTION "return_line_within_shipped"(the_return UUID, the_sku TEXT, the_quantity INTEGER) RETURNS BOOLEAN
LANGUAGE sql STABLE AS $$
  SELECT coalesce((SELECT sum(-m.on_hand_delta) FROM inventory_movements m
                   WHERE m.order_id = r.order_id AND m.sku = the_sku AND m.reason = 'shipment'), 0)
         >= the_quantity + coalesce((SELECT sum(coalesce(l.received_quantity, l.quantity))
                                     FROM return_lines l JOIN returns o ON o.id = l.return_id
                                     WHERE o.order_id = r.order_id AND l.sku = the_sku AND l.return_id <> the_return
                                       AND o.status NOT IN ('withdrawn', 'expired')), 0)
  FROM returns r WHERE r.id = the_return
$$;
