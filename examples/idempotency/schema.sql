-- The demo's payment API: a ledger and a "POST /payments" handler that any web framework
-- would call with the request's Idempotency-Key header and JSON body.
CREATE EXTENSION pg_once;
CREATE SCHEMA api;
CREATE TABLE api.charges (
    id        bigserial PRIMARY KEY,
    order_ref text NOT NULL,
    amount    int  NOT NULL CHECK (amount > 0),
    currency  text NOT NULL,
    at        timestamptz NOT NULL DEFAULT now()
);

-- POST /payments: the charge and its stored response commit together, so a retry can never
-- charge twice and always gets the first answer.
CREATE FUNCTION api.post_payment(idempotency_key text, body jsonb,
                                 OUT replayed boolean, OUT response jsonb)
LANGUAGE sql AS $$
    SELECT replayed, response
      FROM once.run('POST /payments', idempotency_key,
                    jsonb_build_object('order', idempotency_key, 'body', body), $cmd$
        INSERT INTO api.charges (order_ref, amount, currency)
        VALUES ($1->>'order', ($1->'body'->>'amount')::int, $1->'body'->>'currency')
        RETURNING jsonb_build_object('charge_id', 'ch_' || id, 'amount', amount, 'status', 'succeeded')
    $cmd$)
$$;
