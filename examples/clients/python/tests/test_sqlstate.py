"""sqlstate.py against README.md's SQLSTATE table: the helper and the docs cannot drift."""
import pathlib
import re
import unittest

from cafe_payment.sqlstate import STATUS_BY_SQLSTATE, http_status, is_permanent

README = pathlib.Path(__file__).resolve().parents[4] / "README.md"


class FakeError(Exception):
    def __init__(self, sqlstate):
        super().__init__(sqlstate)
        self.sqlstate = sqlstate


def readme_table():
    row = re.compile(r"^\| `([0-9A-Z]{5})` \|.*\| (\d{3}) \|$")
    return {m[1]: int(m[2]) for line in README.read_text().splitlines() if (m := row.match(line))}


class SqlstateTest(unittest.TestCase):
    def test_every_readme_row(self):
        table = readme_table()
        self.assertGreaterEqual(len(table), 30, "README's SQLSTATE table not found")
        for code, status in table.items():
            self.assertEqual(http_status(FakeError(code)), status, code)
        self.assertEqual(set(STATUS_BY_SQLSTATE), set(table), "codes the README does not document")

    def test_errors_pg_once_does_not_raise(self):
        self.assertEqual(http_status(FakeError("40P01")), 503)
        self.assertEqual(http_status(FakeError("08006")), 503)
        self.assertEqual(http_status(FakeError("57P01")), 503)
        self.assertEqual(http_status(FakeError("23505")), 500)
        self.assertEqual(http_status(ValueError("not a database error")), 500)
        self.assertEqual(http_status(None), 500)

    def test_permanent(self):
        self.assertTrue(is_permanent(FakeError("ON402")))
        self.assertTrue(is_permanent(FakeError("42501")))
        self.assertFalse(is_permanent(FakeError("40001")))
        self.assertFalse(is_permanent(FakeError("XX000")))


if __name__ == "__main__":
    unittest.main()
