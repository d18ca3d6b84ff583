"""The fuzzers' pool counts a warning a user would see (from the package, or matplotlib's date ticks) as a
failed case, even when the code under test catches exceptions around it."""

from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "fuzz"))
import fuzz_pool  # noqa: E402


class Harness:
    def __init__(self, action):
        self.action = action

    def run(self, case, index):
        self.action()
        return {"case": index, "outcome": "ok", "step": "", "detail": ""}


def _date_axis_with_the_old_locator():
    import matplotlib.dates as mdates
    import numpy as np
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.add_subplot()
    t = np.array(["2026-01-01T00:00:00", "2026-01-01T00:03:20"], dtype="datetime64[s]")
    ax.plot(t, [1, 2])
    ax.xaxis.set_major_locator(mdates.AutoDateLocator(maxticks=4))
    try:  # a card drawing its chart inside try/except: a raised warning would vanish here
        fig.savefig(io.BytesIO(), format="png")
    except Exception:
        pass


def test_a_date_locator_warning_fails_the_case():
    rec = fuzz_pool.run_watched(Harness(_date_axis_with_the_old_locator), None, 3)
    assert (rec["outcome"], rec["step"]) == ("crash", "warning")
    assert rec["detail"].startswith("UserWarning at ") and "AutoDateLocator was unable" in rec["detail"]


def test_a_warning_from_the_package_fails_the_case_every_time():
    import puffin_explorer

    def warn():
        warnings.warn_explicit("something odd", RuntimeWarning, puffin_explorer.__file__, 7, module="puffin_explorer")

    for index in (1, 2):  # the same place twice in one worker: both cases fail
        rec = fuzz_pool.run_watched(Harness(warn), None, index)
        assert (rec["outcome"], rec["step"], rec["detail"]) == (
            "crash", "warning", "RuntimeWarning at __init__.py:7: something odd")


def test_other_warnings_pass_and_are_shown():
    with pytest.warns(UserWarning, match="elsewhere"):
        rec = fuzz_pool.run_watched(Harness(lambda: warnings.warn_explicit("elsewhere", UserWarning, "/x/other.py", 1)),
                                    None, 4)
    assert rec["outcome"] == "ok"
