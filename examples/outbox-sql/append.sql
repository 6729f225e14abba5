-- append.sql - an application's transaction that writes its own row and the event for it, in
-- plain SQL (psql, any driver). The relay publishes the event only once this commits.
-- :order_id, :customer_id and :traceparent are psql variables (a driver passes parameters).
BEGIN;
INSERT INTO orders (id, customer_id, total) VALUES (:'order_id', :'customer_id', 250000);
INSERT INTO outbox_events (id, topic, aggregate_id, payload, trace_id)
VALUES (uuid7(), 'order.placed', :'order_id',
        jsonb_build_object('orderId', :'order_id', 'total', 250000),
        :'traceparent');
COMMIT;
