import pytest

from fvp import units


@pytest.mark.parametrize("text,value", [
    ("0", 0), (4096, 4096), ("4096", 4096), ("0x1000", 4096), ("0x7000_0000", 0x70000000), ("1KiB", 1024),
    ("512KiB", 512 * 1024), ("2MiB", 2 * 1024 ** 2), ("1GiB", 1024 ** 3), ("384KB", 384 * 1024),
    ("60MB", 60 * 1024 ** 2), ("2 MiB", 2 * 1024 ** 2), ("1.5KiB", 1536), ("16B", 16), ("1_024", 1024),
])
def test_parse_size(text, value):
    assert units.parse_size(text) == value


@pytest.mark.parametrize("text", ["2XB", "MiB", "-1", "1.3B", "0.5B", "two", "", True, None, [1]])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError) as e:
        units.parse_size(text)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("text,value", [
    ("32MHz", 32_000_000), ("500MHz", 500_000_000), ("1GHz", 10 ** 9), ("500e6", 500_000_000), (1000, 1000),
    ("32 kHz", 32_000), ("100Hz", 100),
])
def test_parse_frequency(text, value):
    assert units.parse_frequency(text) == value


@pytest.mark.parametrize("text", ["32MB", "0Hz", "-5MHz", "fast"])
def test_parse_frequency_rejects(text):
    with pytest.raises(ValueError):
        units.parse_frequency(text)


@pytest.mark.parametrize("text,value", [("0x10", 16), ("0b101", 5), ("0o17", 15), ("42", 42), (7, 7), ("0x4810_2000", 0x48102000)])
def test_parse_int(text, value):
    assert units.parse_int(text) == value


@pytest.mark.parametrize("text", ["0xZZ", "1.5", True, "ten"])
def test_parse_int_rejects(text):
    with pytest.raises(ValueError):
        units.parse_int(text)


@pytest.mark.parametrize("text,ps", [("1ns", 1000), ("2.5us", 2_500_000), ("1ms", 10 ** 9), ("1", 10 ** 12), ("3s", 3 * 10 ** 12)])
def test_parse_time(text, ps):
    assert units.parse_time_ps(text) == ps


def test_format_size_round_trips():
    for n in (0, 1, 1000, 1024, 2 * 1024 ** 2, 60 * 1024 ** 2, 3 * 1024 ** 3, 1536):
        assert units.parse_size(units.format_size(n)) == n
