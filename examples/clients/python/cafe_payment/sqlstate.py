"""The one place this service turns a PostgreSQL error into an HTTP status.

The table is README.md's SQLSTATE table (tests/test_sqlstate.py checks every row of it
against this file). The worker uses the status to decide what a failure means: 4xx, the
command itself is wrong and retrying cannot help; 503, try again; 500, a bug, retry with
backoff until a person looks.
"""

STATUS_BY_SQLSTATE = {
    "ON001": 503,  # library and SQL objects of different versions: ALTER EXTENSION pg_once UPDATE
    "ON101": 400,  # idempotency key or scope missing, empty, too long, control characters
    "ON102": 422,  # idempotency key reused with a different request
    "ON103": 409,  # idempotency key in progress in another request
    "ON104": 409,  # key not held by this attempt
    "ON105": 500,  # once.run command is not one statement returning one value
    "ON106": 409,  # idempotency key stored by several roles whose privileges the caller has
    "ON201": 400,  # invalid topic
    "ON202": 413,  # payload too large
    "ON203": 400,  # payload NULL or JSON null
    "ON204": 400,  # headers not a JSON object
    "ON205": 400,  # invalid message key
    "ON206": 400,  # batch size / send_many arrays
    "ON207": 404,  # nack of an unknown id
    "ON208": 400,  # invalid relay name
    "ON209": 400,  # invalid lease, retry_after or deliver_at
    "ON210": 400,  # topic policy out of range
    "ON211": 400,  # invalid ids array
    "ON212": 409,  # explicit message_id already used for another message
    "ON213": 500,  # commit with claim_locked messages left unsettled (rolled back)
    "ON214": 400,  # a message header the relay may not send (transport or relay name, bad value)
    "ON215": 403,  # no publishing grant lets this role publish on the topic
    "ON216": 409,  # a relay's settle met a key held by a prepared transaction
    "ON217": 400,  # invalid traceparent / tracestate header
    "ON218": 400,  # invalid relay heartbeat
    "ON219": 400,  # invalid message content_type
    "ON301": 400,  # invalid topic pattern
    "ON302": 400,  # invalid inbox source
    "ON303": 400,  # invalid inbox message id
    "ON304": 400,  # invalid handler
    "ON305": 500,  # a subscribed handler was dropped
    "ON306": 403,  # handler or local step owned by a role without its run_as role's rights
    "ON307": 409,  # inbox retry of a poison copy with no handler for its topic
    "ON401": 400,  # invalid saga definition or name
    "ON402": 404,  # saga or definition not found
    "ON403": 422,  # reply names a step the saga lacks
    "ON404": 409,  # saga id reused with another name or input
    "ON405": 409,  # saga_retry / saga_abort in the wrong state
    "ON406": 400,  # invalid saga reply
    "ON407": 403,  # saga_start of a definition the role has no start grant for
    "ON408": 409,  # saga id of several definitions without a definition name
    "22023": 400,  # invalid argument value
    "42501": 403,  # the role lacks the pg_once role for this function
    "40001": 503,  # serialization failure: retry the transaction
    "XX000": 500,  # internal error
}

# Not pg_once's own, but "try again": connection exceptions, insufficient resources,
# operator intervention (server shutting down), and a deadlock victim.
_RETRY_LATER_CLASSES = ("08", "53", "57")


def http_status(error: BaseException | None) -> int:
    """HTTP status for an exception; psycopg errors carry the SQLSTATE in .sqlstate.

    Anything unknown, including exceptions that are not database errors, is a 500.
    """
    code = getattr(error, "sqlstate", None) or ""
    if code in STATUS_BY_SQLSTATE:
        return STATUS_BY_SQLSTATE[code]
    if code == "40P01" or (len(code) == 5 and code[:2] in _RETRY_LATER_CLASSES):
        return 503
    return 500


def is_permanent(error: BaseException | None) -> bool:
    """True when retrying the same request cannot succeed (a 4xx)."""
    return 400 <= http_status(error) < 500
