"""CampusCafe's payment step as a Python service on psycopg 3 and pg_once.

handler.py: one saga command in one transaction (once.receive, the business write,
once.saga_reply); worker.py: the loop that claims commands and acks them; sqlstate.py: the
one place a PostgreSQL error becomes an HTTP status (and the worker's retry decision).
"""
