"""A suite whose tests know their own memory: run by check_pytest_plugin.py under
`pytest --memstage`, never collected by the project's own runs."""
import pytest

HELD_AT_EXIT = []
MiB = 1 << 20


@pytest.fixture(scope="session")
def big_table():
    # Created in the setup of the first test that asks for it: counted in that test's stage.
    return bytearray(24 * MiB)


@pytest.mark.memstage_limit(peak_heap="8 MiB", leaked="1 MiB")
def test_small():
    block = bytearray(2 * MiB)
    assert len(block) == 2 * MiB


@pytest.mark.memstage_limit(peak_heap="16 MiB")
def test_over():
    block = bytearray(40_000_000)
    assert len(block) == 40_000_000


@pytest.mark.memstage_limit(leaked="1 MiB")
def test_leaks():
    HELD_AT_EXIT.append(bytearray(3 * MiB))


def test_creates_fixture(big_table):
    assert len(big_table) == 24 * MiB


def test_uses_fixture_again(big_table):
    assert len(big_table) == 24 * MiB


def test_budget_file_small():
    block = bytearray(1 * MiB)
    assert block


def test_budget_file_large():
    block = bytearray(12 * MiB)
    assert block
