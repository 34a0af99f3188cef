"""``medaudit._versions``: the one record of library versions."""

import importlib
import subprocess
import sys

from medaudit._versions import AUDIT_MODULES, versions


def test_every_audit_module_is_recorded_with_its_own_version_string():
    rec = versions(*AUDIT_MODULES)
    for name in AUDIT_MODULES:
        assert rec[name] == importlib.import_module(name).__version__, name
    assert {"medaudit", "python"} <= set(rec)


def test_a_missing_module_is_left_out_and_a_pair_renames_the_key():
    rec = versions("no_such_module_medaudit", ("Pillow", "PIL"), interpreter=False)
    assert "no_such_module_medaudit" not in rec and "medaudit" not in rec
    assert rec["Pillow"] == importlib.import_module("PIL").__version__


def test_asking_for_a_version_does_not_import_the_module():
    # statsmodels (and the scipy.stats it pulls in) costs about a second to import: the
    # record reads the installed metadata instead
    code = ("import sys; from medaudit._versions import versions; v = versions('statsmodels'); "
            "print(v['statsmodels'], 'statsmodels' in sys.modules, 'scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    version, imported, scipy_stats = out.stdout.split()
    assert (imported, scipy_stats) == ("False", "False")
    assert version == importlib.import_module("statsmodels").__version__


def test_importing_the_statistics_core_does_not_import_scipy_stats():
    code = "import sys, medaudit.stats, medaudit.audit; print('scipy.stats' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
