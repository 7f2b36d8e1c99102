"""Errors: one exception class per kind of failure, and settings named as
this package's keyword arguments, never as the CLI's flags."""

import numpy as np
import pytest

import mapfilter
from mapfilter import errors


@pytest.mark.parametrize(
    "cls,builtin,kind",
    [
        (mapfilter.UsageError, ValueError, "usage"),
        (mapfilter.InputError, ValueError, "input"),
        (mapfilter.ResourceError, MemoryError, "resource"),
        (mapfilter.DeviceError, RuntimeError, "device"),
        (mapfilter.IoError, OSError, "io"),
        (mapfilter.Interrupted, KeyboardInterrupt, "interrupted"),
        (mapfilter.IncompleteError, RuntimeError, "incomplete"),
        (mapfilter.InternalError, RuntimeError, "internal"),
    ],
)
def test_each_kind_is_an_error_and_the_builtin_python_code_expects(cls, builtin, kind):
    assert issubclass(cls, mapfilter.Error) and issubclass(cls, builtin)
    err = errors._make(kind, "it failed", "do this")
    assert type(err) is cls and err.kind == kind
    assert str(err) == "it failed (hint: do this)"
    assert (err.cause, err.hint) == ("it failed", "do this")


def test_an_unknown_kind_is_an_internal_error():
    assert type(errors._make("new-kind", "x")) is mapfilter.InternalError


def test_a_bad_setting_is_a_usage_error_named_as_the_keyword(labels):
    with pytest.raises(mapfilter.UsageError) as caught:
        mapfilter.smooth(labels, "box:3", iterations=0)
    e = caught.value
    assert e.kind == "usage" and isinstance(e, ValueError)
    assert e.cause.startswith("iterations= must be 1 to"), e.cause
    assert "--" not in str(e)


def test_a_setting_with_its_value_reads_as_a_keyword_argument(labels):
    with pytest.raises(mapfilter.UsageError) as caught:
        mapfilter.smooth(labels, "box:3", ties="undecided:x")
    assert caught.value.cause.startswith("ties=undecided:x: 'x' is not a class code")
    assert "write ties=centre, smallest" in caught.value.hint


def test_a_zero_tile_names_the_tile_keyword(labels):
    with pytest.raises(mapfilter.UsageError) as caught:
        mapfilter.smooth(labels, "box:3", tile=0)
    assert "give tile= a side of at least 1 pixel, e.g. tile=512" in caught.value.hint


def test_a_cli_only_setting_is_named_as_the_clis_saying_so(labels):
    # Python has no allow_subpixel: the hint says what the CLI would take.
    with pytest.raises(mapfilter.UsageError) as caught:
        mapfilter.smooth(labels, "gaussian:0.2")
    assert "the CLI's --allow-subpixel (not in Python)" in caught.value.hint


def test_unusable_data_is_an_input_error(labels):
    with pytest.raises(mapfilter.InputError) as caught:
        mapfilter.smooth(labels.astype(np.float32), "box:3")
    assert caught.value.kind == "input" and isinstance(caught.value, ValueError)
