-- once.sagas.failure_cause: the failure that made the saga compensate stays when a
-- later failure (its compensation kept failing) becomes last_error; a retry that resumes
-- running clears it.
BEGIN;
SELECT plan(6);

SELECT once.saga_define('cafe', '{"steps": [
  {"name": "reserve_stock", "action": {"topic": "stock.reserve"}, "compensation": {"topic": "stock.release", "max_attempts": 1}},
  {"name": "capture_payment", "action": {"topic": "payment.capture"}, "kind": "pivot"}]}');
SELECT once.saga_start('cafe', 'o-1', '{"order_id": 1}');
SELECT is((SELECT failure_cause FROM once.sagas WHERE saga_id = 'o-1'), NULL, 'a running saga has no cause');
SELECT once.saga_reply('o-1', 'reserve_stock', 'succeeded');
SELECT once.saga_reply('o-1', 'capture_payment', 'failed', '{"error": "card declined"}');
SELECT results_eq($$SELECT status, failure_cause FROM once.sagas WHERE saga_id = 'o-1'$$,
                  $$VALUES ('compensating', 'step capture_payment failed: card declined')$$,
                  'compensating: the cause is the payment failure');
SELECT once.saga_reply('o-1', 'reserve_stock', 'compensation_failed', '{"error": "stock service down"}');
SELECT results_eq($$SELECT status, failure_cause, last_error LIKE '%stock service down' FROM once.sagas WHERE saga_id = 'o-1'$$,
                  $$VALUES ('failed', 'step capture_payment failed: card declined', true)$$,
                  'failed: last_error is the compensation''s failure, the cause is still the payment');
SELECT is((SELECT cause FROM once.console_saga('cafe', 'o-1')), 'step capture_payment failed: card declined',
          'the console''s saga detail reads it');

SELECT once.saga_define('single', '{"steps": [{"name": "n", "action": {"topic": "a.n"}, "kind": "retriable", "max_attempts": 1}]}');
SELECT once.saga_start('single', 's-1');
SELECT once.saga_reply('s-1', 'n', 'failed', '{"error": "down"}');
SELECT matches((SELECT failure_cause FROM once.sagas WHERE saga_id = 's-1'), 'retriable step n failed 1 times',
               'a saga stopped in running has its cause');
SELECT once.saga_retry('s-1');
SELECT is((SELECT failure_cause FROM once.sagas WHERE saga_id = 's-1'), NULL, 'a retry that resumes running clears it');

SELECT * FROM finish();
ROLLBACK;
